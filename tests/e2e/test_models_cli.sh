#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_models_cli.sh - the management side of model services through the
# command line client against a real server: models and their endpoints,
# applications, API keys (shown once, owned, revoked) and the gateway's usage
# records; validation errors that change nothing; the publish rule; the role
# matrix of docs/roles.md; the tenant boundary (404 for everything of another
# tenant); and the audit trail of key creation and revocation (never the
# secret).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_models_cli.sh
. "$(dirname "$0")/lib.sh"

# mkuser VAR NAME: a service account NAME with a fresh token, stored in $VAR
mkuser() {
    gp user create --service "$2"
    assert_rc 0
    gp -o json token create --user "$2" --ttl 3600
    assert_rc 0
    printf -v "$1" '%s' "$(jq -r .token "$OUT_FILE")"
    assert_match "${!1}" '^gpt_' "token of $2"
}

# grant USER ROLE [--tenant T [--project P]]
grant() {
    gp member grant "$@"
    assert_rc 0
}

# count_json CMD...: run the CLI with -o json as admin, print '.items|length'
# (call, then read $COUNT; never assert inside $(...))
count_items() {
    gp -o json "$@"
    assert_rc 0
    COUNT=$(jq -r '.items | length' "$OUT_FILE")
}

# assert_usage_error [TEXT]: exit 2, one error line
assert_usage_error() {
    assert_rc 2
    assert_one_line_error "${1:-}"
    assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of 'gpupool $E2E_LAST_CMD'"
}

R=(--tenant research)
RV=(--tenant research --project vision)
OL=(--tenant other --project lab)

# ---------------------------------------------------------------- without a server
note "help and usage errors"
for noun in model endpoint app key usage; do
    run_cli "$noun" --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool $noun"
    assert_eq "$(wc -c <"$ERR_FILE")" 0 "stderr of 'gpupool $noun --help'"
done
for nv in "model create" "model list" "model show" "model update" "model delete" \
    "endpoint add" "endpoint list" "endpoint remove" "app create" "app list" "app delete" \
    "key create" "key list" "key show" "key revoke" "usage records"; do
    # shellcheck disable=SC2086  # split "noun verb" on purpose
    run_cli $nv --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool $nv"
done
run_cli --help
assert_rc 0
for noun in model endpoint app key usage; do assert_file_contains "$OUT_FILE" "  $noun "; done
NS=(--server http://127.0.0.1:1 --token x)
run_cli "${NS[@]}" model create llama
assert_usage_error "--tenant is required"
run_cli "${NS[@]}" model update llama "${R[@]}"
assert_usage_error "nothing to change"
run_cli "${NS[@]}" endpoint add "${R[@]}" --model llama
assert_usage_error "either --url, or --job and --port"
run_cli "${NS[@]}" endpoint add "${R[@]}" --model llama --url http://h/v1 --job j --port 1
assert_usage_error "either --url, or --job and --port"
run_cli "${NS[@]}" endpoint add "${R[@]}" --model llama --job j
assert_usage_error "--job needs --port"
run_cli "${NS[@]}" endpoint add "${R[@]}" --model llama --job j --port http
assert_usage_error "--port must be a number"
run_cli "${NS[@]}" key create k1 "${RV[@]}" --ttl soon
assert_usage_error "--ttl must be a whole number"
run_cli "${NS[@]}" key create k1 "${RV[@]}" --ttl 60 --expires-at 2099-01-01T00:00:00Z
assert_usage_error "not both"
run_cli "${NS[@]}" key list --tenant research
assert_usage_error "--tenant and --project are required"
run_cli "${NS[@]}" key revoke "${RV[@]}"
assert_usage_error "expected one ID"
run_cli "${NS[@]}" usage records "${R[@]}" --limit 0
assert_usage_error "--limit must be 1..5000"
run_cli "${NS[@]}" model frobnicate
assert_usage_error "unknown command"

# ---------------------------------------------------------------- setup
start_server --endpoint-allow 127.0.0.0/8  # endpoints on loopback in examples
note "server at $URL"
ADMIN=$TOKEN
DB=$DATA/gpupool.db
gp tenant create research
assert_rc 0
gp tenant create other
assert_rc 0
gp project create --tenant research vision
assert_rc 0
gp project create --tenant research nlp
assert_rc 0
gp project create --tenant other lab
assert_rc 0
mkuser TADMIN tadmin
mkuser VIEWER viewer
mkuser PADMIN padmin
mkuser ALICE alice
mkuser BOB bob
mkuser CAROL carol
mkuser OPS ops
mkuser BADMIN badmin
grant tadmin tenant-admin "${R[@]}"
grant viewer viewer "${R[@]}"
grant padmin project-admin "${RV[@]}"
grant alice project-user "${RV[@]}"
grant bob project-user "${RV[@]}"
grant carol project-user --tenant research --project nlp
grant ops ops-engineer
grant badmin tenant-admin --tenant other
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0

# ---------------------------------------------------------------- models
note "models: create, validation, the publish rule"
as "$TADMIN" model create llama "${R[@]}" --description "Llama 3 8B"
assert_rc 0
assert_match "$(field name)" '^llama$' "model create: name"
assert_match "$(field visibility)" '^private$' "model create: default visibility"
assert_match "$(field created_by)" '^tadmin$' "model create: created_by"
as "$TADMIN" -o json model show llama "${R[@]}"
assert_rc 0
assert_json .tenant research "$OUT_FILE"
assert_json .description "Llama 3 8B" "$OUT_FILE"
assert_json '.endpoints | length' 0 "$OUT_FILE"
# bad input: one line, HTTP 400, nothing made
for bad in Bad_Name "has space" trail- "$(printf 'x%.0s' {1..64})"; do
    as "$TADMIN" model create "$bad" "${R[@]}"
    assert_denied 400
    assert_file_contains "$ERR_FILE" "invalid_argument"
done
as "$TADMIN" model create mistral "${R[@]}" --visibility secret
assert_denied 400
assert_file_contains "$ERR_FILE" "field 'visibility' ('secret') must be one of: private, public"
as "$TADMIN" model create llama "${R[@]}"
assert_denied 409
# a tenant-admin does not publish
as "$TADMIN" model create pub "${R[@]}" --visibility public
assert_denied 403
assert_file_contains "$ERR_FILE" "platform-admin"
as "$TADMIN" model update llama "${R[@]}" --visibility public
assert_denied 403
count_items model list "${R[@]}"
assert_eq "$COUNT" 1 "models after refused creations"
as "$TADMIN" -o json model show llama "${R[@]}"
assert_json .visibility private "$OUT_FILE"
# a platform-admin does; no two tenants publish the same name
gp model create shared "${R[@]}" --visibility public --description "for everyone"
assert_rc 0
assert_match "$(field visibility)" '^public$' "platform-admin publishes"
gp model create shared --tenant other --visibility public
assert_denied 409
assert_file_contains "$ERR_FILE" "another tenant already publishes"
as "$BADMIN" model create shared --tenant other
assert_rc 0
gp model update shared --tenant other --visibility public
assert_denied 409
gp -o json model show shared --tenant other
assert_json .visibility private "$OUT_FILE"
# a tenant-admin neither unpublishes nor deletes a published model
as "$TADMIN" model update shared "${R[@]}" --visibility private
assert_denied 403
as "$TADMIN" model delete shared "${R[@]}"
assert_denied 403
gp -o json model show shared "${R[@]}"
assert_json .visibility public "$OUT_FILE"
as "$TADMIN" model update llama "${R[@]}" --description "Llama 3.1 8B"
assert_rc 0
assert_match "$(field description)" '^Llama 3.1 8B$' "model update: description"
as "$TADMIN" model list "${R[@]}"
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^NAME +VISIBILITY +DESCRIPTION' "model list header"
assert_match "$(grep -E '^llama ' "$OUT_FILE")" '^llama +private +Llama 3.1 8B +tadmin ' "model list row"
# the API answers invalid bodies with 400 and the error shape
api POST /api/v1/tenants/research/models '{"name":"x1","colour":"red"}'
assert_status 400
assert_json .error.code invalid_argument
api POST /api/v1/tenants/research/models '{"name":'
assert_status 400
assert_json .error.code malformed_json
api PATCH /api/v1/tenants/research/models/nosuch '{"description":"x"}'
assert_status 404

# ---------------------------------------------------------------- endpoints
note "endpoints"
as "$TADMIN" -o json endpoint add "${R[@]}" --model llama --url http://127.0.0.1:9/v1/ \
    --accelerator H100-80GB --upstream-model meta-llama/Llama-3.1-8B --health-path /health
assert_rc 0
EP1=$(jq -r .id "$OUT_FILE")
assert_json .url http://127.0.0.1:9/v1 "$OUT_FILE"
assert_json .accelerator H100-80GB "$OUT_FILE"
assert_json .upstream_model meta-llama/Llama-3.1-8B "$OUT_FILE"
assert_json .health_path /health "$OUT_FILE"
assert_json .state unknown "$OUT_FILE"
assert_json .model llama "$OUT_FILE"
# a job of the tenant serving on a port
as "$PADMIN" -o json job submit serve "${RV[@]}" --class a100.1x
assert_rc 0
JOB=$(jq -r .id "$OUT_FILE")
as "$BADMIN" -o json job submit foreign "${OL[@]}" --class a100.1x
assert_rc 0
FOREIGN_JOB=$(jq -r .id "$OUT_FILE")
as "$TADMIN" -o json endpoint add "${R[@]}" --model llama --job "$JOB" --port 8000
assert_rc 0
EP2=$(jq -r .id "$OUT_FILE")
assert_json .job "$JOB" "$OUT_FILE"
assert_json .port 8000 "$OUT_FILE"
assert_json 'has("url")' false "$OUT_FILE"
# refused: another tenant's job, ports out of range, bad URLs, both or neither
as "$TADMIN" endpoint add "${R[@]}" --model llama --job "$FOREIGN_JOB" --port 8000
assert_denied 400
assert_file_contains "$ERR_FILE" "not a job of this tenant"
as "$TADMIN" endpoint add "${R[@]}" --model llama --job no-such-job --port 8000
assert_denied 400
for port in 0:"at least 1" 65536:"at most 65535" -1:"at least 1"; do
    as "$TADMIN" endpoint add "${R[@]}" --model llama --job "$JOB" --port "${port%%:*}"
    assert_denied 400
    assert_file_contains "$ERR_FILE" "field 'port' must be ${port#*:}"
done
for url in ftp://h/v1 "http://user:pw@h/v1" "http://h/v1?x=1" "http://"; do
    as "$TADMIN" endpoint add "${R[@]}" --model llama --url "$url"
    assert_denied 400
done
as "$TADMIN" endpoint add "${R[@]}" --model llama --url http://h/v1 --health-path health
assert_denied 400
api POST /api/v1/tenants/research/models/llama/endpoints \
    "{\"url\":\"http://h/v1\",\"job\":\"$JOB\",\"port\":8000}"
assert_status 400
assert_json .error.message "give either url, or job and port"
api POST /api/v1/tenants/research/models/llama/endpoints '{"accelerator":"H100"}'
assert_status 400
api POST /api/v1/tenants/research/models/llama/endpoints '{"url":"http://h/v1","port":80}'
assert_status 400
as "$TADMIN" endpoint add "${R[@]}" --model nosuch --url http://h/v1
assert_denied 404
as "$TADMIN" -o json endpoint list "${R[@]}" --model llama
assert_rc 0
assert_json '[.items[].id] | sort | join(",")' "$(printf '%s\n' "$EP1" "$EP2" | sort | paste -sd,)" "$OUT_FILE"
assert_json .next null "$OUT_FILE"
as "$TADMIN" endpoint list "${R[@]}" --model llama
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^ID +URL +JOB +PORT +ACCELERATOR' "endpoint list header"
assert_match "$(grep -F "$EP1" "$OUT_FILE")" "^$EP1 +http://127.0.0.1:9/v1 +- +- +H100-80GB " "endpoint list row"
as "$TADMIN" endpoint remove "$EP2" "${R[@]}" --model llama
assert_rc 0
as "$TADMIN" endpoint remove "$EP2" "${R[@]}" --model llama
assert_denied 404
# an endpoint of one model is not reachable through another
as "$TADMIN" endpoint remove "$EP1" "${R[@]}" --model shared
assert_denied 404
as "$TADMIN" -o json model show llama "${R[@]}"
assert_json '[.endpoints[].id] | join(",")' "$EP1" "$OUT_FILE"

# ---------------------------------------------------------------- applications
note "applications"
as "$PADMIN" app create chatbot "${RV[@]}" --description "support bot"
assert_rc 0
assert_match "$(field name)" '^chatbot$' "app create"
assert_match "$(field keys)" '^0$' "app create: no keys"
as "$PADMIN" app create "Bad!" "${RV[@]}"
assert_denied 400
as "$PADMIN" app create chatbot "${RV[@]}"
assert_denied 409
as "$TADMIN" app create pipeline "${RV[@]}"
assert_rc 0
as "$ALICE" app create mine "${RV[@]}"
assert_denied 403
as "$VIEWER" app create mine "${RV[@]}"
assert_denied 403
as "$ALICE" app list "${RV[@]}"
assert_rc 0
assert_match "$(grep -E '^chatbot ' "$OUT_FILE")" '^chatbot +0 +support bot ' "app list row"
as "$VIEWER" -o json app list "${RV[@]}"
assert_rc 0
assert_json '[.items[].name] | join(",")' "chatbot,pipeline" "$OUT_FILE"
as "$PADMIN" app delete pipeline "${RV[@]}"
assert_rc 0
as "$PADMIN" app delete pipeline "${RV[@]}"
assert_denied 404

# ---------------------------------------------------------------- keys
note "keys: created once, owned, revoked"
as "$ALICE" key create alice-key "${RV[@]}" --app chatbot --models llama,shared --rpm 60 \
    --tpm 6000 --tokens-month 100000 --ttl 3600
assert_rc 0
ALICE_SECRET=$(field key)
ALICE_KEY=$(field id)
assert_match "$ALICE_SECRET" '^sk-[A-Za-z0-9_-]{40,}$' "the secret is printed"
assert_eq "$(grep -c -- "$ALICE_SECRET" "$OUT_FILE")" 1 "the secret is printed once"
assert_file_contains "$OUT_FILE" "It cannot be shown again"
assert_match "$(field owner)" '^alice$' "key owner"
assert_match "$(field app)" '^chatbot$' "key app"
assert_match "$(field state)" '^active$' "key state"
assert_match "$(field prefix)" "^${ALICE_SECRET:0:10}\$" "key prefix"
as "$BOB" -o json key create bob-key "${RV[@]}"
assert_rc 0
BOB_SECRET=$(jq -r .key "$OUT_FILE")
BOB_KEY=$(jq -r .id "$OUT_FILE")
assert_match "$BOB_SECRET" '^sk-' "json create has the secret"
assert_json .owner bob "$OUT_FILE"
assert_json .expires_at null "$OUT_FILE"
assert_json .models '[]' "$OUT_FILE"
assert_json '.models | length' 0 "$OUT_FILE"
as "$PADMIN" -o json key create ci-key "${RV[@]}" --expires-at 2099-01-01T00:00:00Z
assert_rc 0
CI_KEY=$(jq -r .id "$OUT_FILE")
CI_SECRET=$(jq -r .key "$OUT_FILE")
assert_json .expires_at 2099-01-01T00:00:00.000000Z "$OUT_FILE"
# refused, with nothing made: unknown app, unknown or foreign model, bad ttl/expiry, bad name
as "$ALICE" key create k2 "${RV[@]}" --app nope
assert_denied 400
assert_file_contains "$ERR_FILE" "app 'nope' not found"
as "$ALICE" key create k2 "${RV[@]}" --models llama,nope
assert_denied 400
assert_file_contains "$ERR_FILE" "model 'nope' not found"
as "$BADMIN" key create k2 "${OL[@]}" --models llama
assert_denied 400
assert_file_contains "$ERR_FILE" "model 'llama' not found"
for ttl in 0 -5 999999999999; do
    as "$ALICE" key create k2 "${RV[@]}" --ttl "$ttl"
    assert_denied 400
    assert_file_contains "$ERR_FILE" "field 'ttl_seconds' must be at"
done
as "$ALICE" key create k2 "${RV[@]}" --expires-at 2001-01-01T00:00:00Z
assert_denied 400
as "$ALICE" key create k2 "${RV[@]}" --expires-at tomorrow
assert_denied 400
as "$ALICE" key create k2 "${RV[@]}" --rpm -1
assert_denied 400
as "$ALICE" key create K2 "${RV[@]}"
assert_denied 400
as "$ALICE" key create alice-key "${RV[@]}"
assert_denied 409
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/research/projects/vision/keys \
    '{"name":"k3","owner":"bob"}'
assert_status 400
assert_json .error.message "unknown field 'owner'"
# a platform-admin reads keys but does not make them (docs/roles.md)
gp key create k3 "${RV[@]}"
assert_denied 403
count_items key list "${RV[@]}"
assert_eq "$COUNT" 3 "keys after refused creations"
# a public model of another tenant may be named; a private one may not
as "$BADMIN" -o json key create lab-key "${OL[@]}" --models shared
assert_rc 0
LAB_KEY=$(jq -r .id "$OUT_FILE")
LAB_SECRET=$(jq -r .key "$OUT_FILE")
# project-users: their own keys only (others' are not found)
as "$BOB" -o json key list "${RV[@]}"
assert_rc 0
assert_json '[.items[].name] | join(",")' "bob-key" "$OUT_FILE"
as "$BOB" key show "$ALICE_KEY" "${RV[@]}"
assert_denied 404
as "$BOB" key revoke "$ALICE_KEY" "${RV[@]}"
assert_denied 404
as "$CAROL" key show "$ALICE_KEY" --tenant research --project nlp
assert_denied 404
as "$CAROL" key list "${RV[@]}"
assert_denied 404
as "$ALICE" -o json key show "$ALICE_KEY" "${RV[@]}"
assert_rc 0
assert_json .state active "$OUT_FILE"
assert_json '.models | join(",")' "llama,shared" "$OUT_FILE"
assert_json .rpm 60 "$OUT_FILE"
assert_json .tpm 6000 "$OUT_FILE"
assert_json .tokens_month 100000 "$OUT_FILE"
assert_json 'has("key")' false "$OUT_FILE"
# admins and viewers see all of the project's keys
for tok in "$PADMIN" "$TADMIN" "$VIEWER" "$ADMIN"; do
    as "$tok" -o json key list "${RV[@]}"
    assert_rc 0
    assert_json '[.items[].name] | sort | join(",")' "alice-key,bob-key,ci-key" "$OUT_FILE"
done
as "$VIEWER" key show "$BOB_KEY" "${RV[@]}"
assert_rc 0
as "$VIEWER" key create v1 "${RV[@]}"
assert_denied 403
as "$VIEWER" key revoke "$BOB_KEY" "${RV[@]}"
assert_denied 403
# secrets are never in lists or shows (table or JSON)
for tok in "$ALICE" "$PADMIN"; do
    for fmt in json table; do
        as "$tok" -o "$fmt" key list "${RV[@]}"
        assert_rc 0
        assert_file_lacks "$OUT_FILE" "$ALICE_SECRET" "key list -o $fmt"
        as "$tok" -o "$fmt" key show "$ALICE_KEY" "${RV[@]}"
        assert_rc 0
        assert_file_lacks "$OUT_FILE" "$ALICE_SECRET" "key show -o $fmt"
    done
done
assert_file_lacks "$SERVER_LOG" "$ALICE_SECRET" "server log"
assert_file_lacks "$SERVER_OUT" "$ALICE_SECRET" "server output"
# an application with live keys is not deleted
as "$PADMIN" app delete chatbot "${RV[@]}"
assert_denied 409
as "$PADMIN" -o json app list "${RV[@]}"
assert_json '.items[] | select(.name == "chatbot") | .keys' 1 "$OUT_FILE"
# revoking: one's own, or anyone's as an admin; twice is a conflict
as "$ALICE" -o json key revoke "$ALICE_KEY" "${RV[@]}"
assert_rc 0
assert_json .state revoked "$OUT_FILE"
assert_json '.revoked_at | test("^20")' true "$OUT_FILE"
as "$ALICE" key revoke "$ALICE_KEY" "${RV[@]}"
assert_denied 409
assert_file_contains "$ERR_FILE" "already revoked"
as "$PADMIN" key revoke "$BOB_KEY" "${RV[@]}"
assert_rc 0
assert_match "$(field state)" '^revoked$' "admin revokes another's key"
as "$BOB" key revoke "$BOB_KEY" "${RV[@]}"
assert_denied 409
as "$PADMIN" app delete chatbot "${RV[@]}"
assert_rc 0

# ---------------------------------------------------------------- usage records
note "usage records"
# the gateway writes these; here they are planted to check reading and scoping
VISION_ID=$(db_sql "$DATA" "SELECT id FROM projects WHERE name = 'vision'")
RESEARCH_ID=$(db_sql "$DATA" "SELECT id FROM tenants WHERE name = 'research'")
LAB_ID=$(db_sql "$DATA" "SELECT id FROM projects WHERE name = 'lab'")
OTHER_ID=$(db_sql "$DATA" "SELECT id FROM tenants WHERE name = 'other'")
NOW_US=$(($(date +%s) * 1000000))
db_sql "$DATA" "
INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project, app, key_id, model,
  model_tenant, endpoint_id, accelerator, kind, stream, prompt_tokens, completion_tokens,
  estimated, latency_us, status) VALUES
 ('u1', $((NOW_US - 3000000)), '$RESEARCH_ID', '$VISION_ID', 'research', 'vision', 'chatbot',
  '$ALICE_KEY', 'llama', 'research', '$EP1', 'H100-80GB', 'chat', 0, 10, 20, 0, 150000, 200),
 ('u2', $((NOW_US - 2000000)), '$RESEARCH_ID', '$VISION_ID', 'research', 'vision', '',
  '$BOB_KEY', 'shared', 'research', '$EP1', 'H100-80GB', 'embedding', 0, 7, 0, 1, 9000, 200),
 ('u3', $((NOW_US - 1000000)), '$OTHER_ID', '$LAB_ID', 'other', 'lab', '',
  '$LAB_KEY', 'shared', 'research', '$EP1', 'H100-80GB', 'chat', 1, 5, 5, 0, 70000, 200);" ||
    fail "planting usage records failed"
as "$ALICE" -o json usage records "${RV[@]}"
assert_rc 0
assert_json '[.items[].id] | join(",")' "u2,u1" "$OUT_FILE"
assert_json .next null "$OUT_FILE"
assert_json '.items[1] | [.key, .key_name, .model, .prompt_tokens, .completion_tokens, .total_tokens, .latency_ms, .app, .kind, .estimated] | map(tostring) | join(",")' \
    "$ALICE_KEY,alice-key,llama,10,20,30,150,chatbot,chat,false" "$OUT_FILE"
as "$PADMIN" -o json usage records "${RV[@]}" --key "$BOB_KEY"
assert_json '[.items[].id] | join(",")' "u2" "$OUT_FILE"
as "$VIEWER" -o json usage records "${R[@]}" --limit 1
assert_json '[.items[].id] | join(",")' "u2" "$OUT_FILE"
as "$TADMIN" -o json usage records "${R[@]}"
assert_json '[.items[].id] | join(",")' "u2,u1" "$OUT_FILE"
as "$TADMIN" usage records "${RV[@]}"
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^AT +PROJECT +APP +KEY_NAME +MODEL +KIND' "usage records header"
assert_eq "$(wc -l <"$OUT_FILE")" 3 "usage records table lines"
as "$BADMIN" -o json usage records --tenant other
assert_json '[.items[].id] | join(",")' "u3" "$OUT_FILE"
# a project-user reads their project's records, not the whole tenant's nor another project's
as "$ALICE" usage records "${R[@]}"
assert_denied 403
as "$CAROL" -o json usage records --tenant research --project nlp
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
as "$CAROL" usage records "${RV[@]}"
assert_denied 404
api GET '/api/v1/tenants/research/usage-records?limit=0'
assert_status 400
assert_json .error.code invalid_argument
api GET '/api/v1/tenants/research/projects/vision/usage-records?limit=abc'
assert_status 400

# ---------------------------------------------------------------- roles
note "roles: viewers read models, project members and ops do not"
as "$VIEWER" -o json model list "${R[@]}"
assert_rc 0
assert_json '[.items[].name] | join(",")' "llama,shared" "$OUT_FILE"
as "$VIEWER" model show llama "${R[@]}"
assert_rc 0
as "$VIEWER" model create v-model "${R[@]}"
assert_denied 403
as "$VIEWER" endpoint add "${R[@]}" --model llama --url http://h/v1
assert_denied 403
as "$VIEWER" model delete llama "${R[@]}"
assert_denied 403
as "$PADMIN" model create p-model "${R[@]}"
assert_denied 403
as "$ALICE" model list "${R[@]}"
assert_denied 403
# ops-engineers see no tenant's models, apps, keys or usage
as "$OPS" model list "${R[@]}"
assert_denied 404
as "$OPS" model show llama "${R[@]}"
assert_denied 404
as "$OPS" key list "${RV[@]}"
assert_denied 404
as "$OPS" key show "$CI_KEY" "${RV[@]}"
assert_denied 404
as "$OPS" app list "${RV[@]}"
assert_denied 404
as "$OPS" usage records "${R[@]}"
assert_denied 404

# ---------------------------------------------------------------- tenant boundary
note "cross-tenant: everything of research is not found for other's admin"
for args in "model list" "model show llama" "model show nosuch" "model delete llama" \
    "model update llama --description x" "model create x2" "usage records"; do
    # shellcheck disable=SC2086  # split on purpose
    as "$BADMIN" $args "${R[@]}"
    assert_denied 404
done
as "$BADMIN" endpoint add "${R[@]}" --model llama --url http://h/v1
assert_denied 404
as "$BADMIN" endpoint remove "$EP1" "${R[@]}" --model llama
assert_denied 404
as "$BADMIN" endpoint list "${R[@]}" --model llama
assert_denied 404
for args in "key list" "key show $CI_KEY" "key revoke $CI_KEY" "key create x3" "app list" \
    "app create x4" "app delete chatbot" "usage records"; do
    # shellcheck disable=SC2086  # split on purpose
    as "$BADMIN" $args "${RV[@]}"
    assert_denied 404
done
# the ids of one tenant's objects do not work through another's path either
as "$BADMIN" key show "$CI_KEY" "${OL[@]}"
assert_denied 404
as "$BADMIN" key revoke "$CI_KEY" "${OL[@]}"
assert_denied 404
as "$BADMIN" endpoint remove "$EP1" --tenant other --model shared
assert_denied 404
as "$TADMIN" key show "$LAB_KEY" "${RV[@]}"
assert_denied 404
# and nothing changed
gp -o json key show "$CI_KEY" "${RV[@]}"
assert_json .state active "$OUT_FILE"
as "$TADMIN" -o json model show llama "${R[@]}"
assert_json '[.endpoints[].id] | join(",")' "$EP1" "$OUT_FILE"
assert_json .description "Llama 3.1 8B" "$OUT_FILE"

# ---------------------------------------------------------------- audit
note "audit: key creation and revocation, never a secret"
gp -o json audit list --action key. --limit 1000
assert_rc 0
cp "$OUT_FILE" "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.create\" and .result == \"ok\" and .actor == \"alice\" and .target.id == \"$ALICE_KEY\" and .target.type == \"key\" and .tenant == \"research\" and .project == \"vision\")] | length" 1 "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.create\" and .result == \"ok\" and .target.id == \"$ALICE_KEY\")][0].summary | [.name, .owner, .app, (.models | join(\"+\")), .rpm] | map(tostring) | join(\",\")" \
    "alice-key,alice,chatbot,llama+shared,60" "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.revoke\" and .result == \"ok\" and .actor == \"alice\" and .target.id == \"$ALICE_KEY\")] | length" 1 "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.revoke\" and .result == \"ok\" and .actor == \"padmin\" and .target.id == \"$BOB_KEY\")][0].summary.owner" bob "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.revoke\" and .result == \"error\" and .status == 409)] | length >= 2" true "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.revoke\" and .result == \"denied\" and .actor == \"badmin\")] | length >= 2" true "$E2E_TMP/audit-keys.json"
assert_json "[.items[] | select(.action == \"key.create\" and .result == \"error\" and .actor == \"alice\")] | length >= 8" true "$E2E_TMP/audit-keys.json"
gp -o json audit list --limit 1000
assert_rc 0
for s in "$ALICE_SECRET" "$BOB_SECRET" "$CI_SECRET" "$LAB_SECRET"; do
    assert_file_lacks "$OUT_FILE" "$s" "audit list"
    assert_file_lacks "$OUT_FILE" "${s:3}" "audit list (secret without prefix)"
done
gp audit export
assert_rc 0
assert_file_contains "$OUT_FILE" '"action":"key.create"' "audit export"
assert_eq "$(jq -s '[.[] | select(.action == "model.create" and .result == "ok")] | length' "$OUT_FILE")" 3 \
    "model.create events in the export"
assert_eq "$(jq -s '[.[] | select(.action == "model.create" and .result == "denied" and .status == 403)] | length' "$OUT_FILE")" 3 \
    "refused model.create events (tenant-admin publishing; viewer; project-admin)"
for s in "$ALICE_SECRET" "$BOB_SECRET" "$CI_SECRET" "$LAB_SECRET"; do
    assert_file_lacks "$OUT_FILE" "$s" "audit export"
    assert_file_lacks "$SERVER_LOG" "$s" "server log"
done
db_sql "$DATA" "SELECT hash FROM api_keys" >"$E2E_TMP/hashes"
assert_file_lacks "$E2E_TMP/hashes" "$ALICE_SECRET" "stored key hashes"
gp audit verify
assert_rc 0

# ---------------------------------------------------------------- deleting
note "deleting models"
as "$TADMIN" model delete llama "${R[@]}"
assert_rc 0
assert_match "$(field deleted)" '^true$' "model delete"
as "$TADMIN" model show llama "${R[@]}"
assert_denied 404
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM endpoints e LEFT JOIN models m ON m.id = e.model_id WHERE m.id IS NULL")" 0 "no orphaned endpoints"
gp model delete shared "${R[@]}"
assert_rc 0
count_items model list "${R[@]}"
assert_eq "$COUNT" 0 "models left"

stop_server
done_testing
