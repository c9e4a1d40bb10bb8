#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; helpers run via xargs
#
# test_api.sh - the REST API against a real server: system endpoints, request
# ids, authentication, request-body validation and limits, routing errors,
# tenants and projects, metrics and the audit trail of it all.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_api.sh
#
# The server runs with --max-body 1024 so the size limit is cheap to probe.
. "$(dirname "$0")/lib.sh"

MAX_BODY=1024
start_server --max-body "$MAX_BODY"
note "server at $URL"

RIDS=()
# assert_request_id: the last response carries a fresh 32-hex X-Request-Id.
assert_request_id() {
    local rid
    assert_header X-Request-Id '^[0-9a-f]{32}$'
    rid=$(header X-Request-Id)
    local r
    for r in "${RIDS[@]}"; do
        [ "$r" != "$rid" ] || fail "X-Request-Id $rid was already used by an earlier response"
    done
    RIDS+=("$rid")
}

# metric VALUE of one gpupool_http_requests_total series (0 when absent).
metric() {
    local line
    line=$(grep -F "gpupool_http_requests_total{method=\"$1\",route=\"$2\",status=\"$3\"} " \
        "$BODY_FILE" | head -n 1)
    echo "${line##* }" | grep -E '^[0-9]+$' || echo 0
}

# ---------------------------------------------------------------- system
api_raw GET /healthz
assert_status 200
assert_json .status ok
assert_request_id
assert_header Content-Type '^application/json'

api_raw GET /readyz
assert_status 200
assert_json .status ready
assert_json .store "$([ -n "${GP_TEST_PG:-}" ] && echo postgres || echo sqlite)"
assert_request_id

api_raw GET /api/v1/openapi.json
assert_status 200
assert_request_id
assert_json 'type' object
assert_json '.paths | has("/api/v1/tenants")' true
assert_json '.paths | has("/api/v1/audit/verify")' true

# ---------------------------------------------------------------- authentication
note "authentication"
N401=0
api_raw GET /api/v1/tenants
assert_status 401
assert_json .error.code unauthenticated
assert_header WWW-Authenticate '^Bearer'
assert_request_id
DENIED_RID=$(header X-Request-Id)
N401=$((N401 + 1))

AUTH_HEADER="Authorization: Bearer not-a-real-token" api GET /api/v1/tenants
assert_status 401
assert_json .error.code unauthenticated
assert_request_id
N401=$((N401 + 1))

# a well-formed but unknown token that looks like a real one
AUTH_HEADER="Authorization: Bearer ${TOKEN%?}x" api GET /api/v1/tenants
assert_status 401
assert_json .error.code unauthenticated
N401=$((N401 + 1))

for h in "Authorization: Basic YWRtaW46YWRtaW4=" "Authorization: Bearer" \
    "Authorization: Bearer$TOKEN" "Authorization: Token $TOKEN" "Authorization: $TOKEN"; do
    AUTH_HEADER=$h api GET /api/v1/tenants
    assert_status 401
    assert_json .error.code unauthenticated
    N401=$((N401 + 1))
done
# the public endpoints do not need a token, and a bad one does not hurt them
AUTH_HEADER="Authorization: Bearer junk" api GET /healthz
assert_status 200

api GET /api/v1/whoami
assert_status 200
assert_json .name admin
assert_json '[.roles[].role] | sort | join(",")' "platform-admin,security-admin"
assert_request_id

# ---------------------------------------------------------------- tenants
note "tenants"
api GET /api/v1/tenants
assert_status 200
assert_json '.items | length' 0
assert_json '.next' null

api POST /api/v1/tenants '{"name":"research","display_name":"Research Department"}'
assert_status 201
assert_request_id
assert_json .name research
assert_json .display_name "Research Department"
assert_json '.id | test("^[0-9a-f]{16,}$")' true
assert_json '.created_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")' true
TENANT_ID=$(jq -r .id "$BODY_FILE")

api POST /api/v1/tenants '{"name":"research"}'
assert_status 409
assert_json .error.code conflict

for bad in '""' '"Research"' '"-lead"' '"trail-"' '"with space"' '"a_b"' \
    "\"$(printf 'a%.0s' {1..64})\""; do
    api POST /api/v1/tenants "{\"name\":$bad}"
    assert_status 400
    assert_json .error.code invalid_argument
done
# the longest valid name: 63 characters
LONG=$(printf 'a%.0s' {1..63})
api POST /api/v1/tenants "{\"name\":\"$LONG\"}"
assert_status 201

api POST /api/v1/tenants '{"name":"vision"}'
assert_status 201
assert_json .display_name ""

api GET /api/v1/tenants
assert_status 200
assert_json '[.items[].name] | join(",")' "$LONG,research,vision"

api GET /api/v1/tenants/research
assert_status 200
assert_json .id "$TENANT_ID"
assert_json .display_name "Research Department"

api GET /api/v1/tenants/nope
assert_status 404
assert_json .error.code not_found
assert_request_id

# ---------------------------------------------------------------- body validation
note "request bodies"
api POST /api/v1/tenants '{"name":'
assert_status 400
assert_json .error.code malformed_json
assert_request_id

api POST /api/v1/tenants '{"name":"x",}'
assert_status 400
assert_json .error.code malformed_json

api POST /api/v1/tenants '{"name":"dup1","name":"dup2"}'
assert_status 400
assert_json .error.code malformed_json

api POST /api/v1/tenants '{"name":"trailing"} {"x":1}'
assert_status 400
assert_json .error.code malformed_json

api POST /api/v1/tenants "$(printf '{"name":"utf","display_name":"\xff\xfe"}')"
assert_status 400
assert_json .error.code malformed_json

api POST /api/v1/tenants '{"name":"nul","display_name":"a\u0000b"}'
assert_status 400
assert_json '.error.code | test("^(invalid_argument|malformed_json)$")' true

api POST /api/v1/tenants "{\"name\":\"long-display\",\"display_name\":\"$(printf 'x%.0s' {1..201})\"}"
assert_status 400
assert_json .error.code invalid_argument
api POST /api/v1/tenants "{\"name\":\"long-display\",\"display_name\":\"$(printf 'x%.0s' {1..200})\"}"
assert_status 201
api POST /api/v1/tenants '{"name":"unicode","display_name":"Forschung \u00e9\u4e2d"}'
assert_status 201
assert_json .display_name "Forschung é中"

api POST /api/v1/tenants '{"name":5}'
assert_status 400
assert_json .error.code invalid_argument
assert_contains "$(jq -r .error.message "$BODY_FILE")" name "message names the field"

api POST /api/v1/tenants '{"name":"okname","display_name":["x"]}'
assert_status 400
assert_json .error.code invalid_argument

api POST /api/v1/tenants '{"name":null}'
assert_status 400
assert_json .error.code invalid_argument

api POST /api/v1/tenants '{"name":"okname","colour":"blue"}'
assert_status 400
assert_json .error.code invalid_argument
assert_contains "$(jq -r .error.message "$BODY_FILE")" colour "message names the unknown field"

api POST /api/v1/tenants '{}'
assert_status 400
assert_json .error.code invalid_argument

for body in '[{"name":"okname"}]' '"okname"' '42' 'null' 'true'; do
    api POST /api/v1/tenants "$body"
    assert_status 400
    assert_json .error.code invalid_argument
done

api POST /api/v1/tenants
assert_status 400
assert_json '.error.code | test("invalid_argument|malformed_json")' true

# nesting: 32 levels pass the depth check (and fail on the unknown field),
# 33 levels are refused as too deep
nest() { printf '{"name":"okname","d":'; printf '[%.0s' $(seq "$1"); printf '1'; printf ']%.0s' $(seq "$1"); printf '}'; }
api POST /api/v1/tenants "$(nest 31)"
assert_status 400
assert_json '.error.message | test("unknown field")' true
api POST /api/v1/tenants "$(nest 32)"
assert_status 400
assert_json .error.code invalid_argument
assert_json '.error.message | test("nest|deep")' true
api POST /api/v1/tenants "$(nest 480)"   # still under --max-body
assert_status 400
# brackets inside strings do not count as nesting
api POST /api/v1/tenants '{"name":"brackets","display_name":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{{{{"}'
assert_status 201

# size limit (--max-body 1024): exactly at the limit is fine, one byte more is not
printf '{"name":"edge"}%*s' $((MAX_BODY - 15)) '' >"$E2E_TMP/at-limit.json"
assert_eq "$(wc -c <"$E2E_TMP/at-limit.json")" "$MAX_BODY" "test body size"
api POST /api/v1/tenants "@$E2E_TMP/at-limit.json"
assert_status 201
assert_json .name edge

printf '{"name":"edge2"}%*s' $((MAX_BODY - 15)) '' >"$E2E_TMP/over-limit.json"
api POST /api/v1/tenants "@$E2E_TMP/over-limit.json"
assert_status 413
assert_json .error.code payload_too_large
assert_request_id

head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$E2E_TMP/huge.json"
api POST /api/v1/tenants "@$E2E_TMP/huge.json"
assert_status 413
assert_json .error.code payload_too_large

# no Content-Length (chunked): the body grows past the limit while streaming
api_raw POST /api/v1/tenants -H "Authorization: Bearer $TOKEN" \
    -H "Content-Type: application/json" -H "Transfer-Encoding: chunked" \
    --data-binary "@$E2E_TMP/over-limit.json"
assert_status 413
assert_json .error.code payload_too_large
# ... and a small chunked body is accepted
api_raw POST /api/v1/tenants -H "Authorization: Bearer $TOKEN" \
    -H "Content-Type: application/json" -H "Transfer-Encoding: chunked" \
    --data-binary '{"name":"chunked"}'
assert_status 201

# a 413 on one request does not disturb the next one on the server
api GET /api/v1/tenants/edge
assert_status 200
api GET /api/v1/tenants/edge2
assert_status 404

# ---------------------------------------------------------------- routing
note "routing"
api GET /api/v1/nothing-here
assert_status 404
assert_json .error.code not_found
assert_request_id

api_raw GET /no/such/path
assert_status 404
assert_json .error.code not_found

api DELETE /api/v1/tenants
assert_status 405
assert_json .error.code method_not_allowed
assert_request_id

api PUT /api/v1/tenants/research '{"name":"research"}'
assert_status 405
assert_json .error.code method_not_allowed

api_raw POST /healthz
assert_status 405
assert_json .error.code method_not_allowed

api GET /api/v1/tenants/research/projects/x/y/z
assert_status 404

# ---------------------------------------------------------------- projects
note "projects"
api GET /api/v1/tenants/research/projects
assert_status 200
assert_json '.items | length' 0

api POST /api/v1/tenants/research/projects '{"name":"vision-b","class":"production"}'
assert_status 201
assert_json .name vision-b
assert_json .class production
assert_json .tenant research
PROJECT_ID=$(jq -r .id "$BODY_FILE")

api POST /api/v1/tenants/research/projects '{"name":"fine-tune-a"}'
assert_status 201
assert_json .class development

api POST /api/v1/tenants/research/projects '{"name":"vision-b"}'
assert_status 409
assert_json .error.code conflict

# the same project name in another tenant is fine
api POST /api/v1/tenants/vision/projects '{"name":"vision-b","class":"research"}'
assert_status 201
assert_ne "$(jq -r .id "$BODY_FILE")" "$PROJECT_ID" "project id in another tenant"

api POST /api/v1/tenants/research/projects '{"name":"p2","class":"gold"}'
assert_status 400
assert_json .error.code invalid_argument

api POST /api/v1/tenants/research/projects '{"name":"Bad Name"}'
assert_status 400
assert_json .error.code invalid_argument

api POST /api/v1/tenants/research/projects '{"name":"p3","tenant":"vision"}'
assert_status 400
assert_json .error.code invalid_argument

api POST /api/v1/tenants/nope/projects '{"name":"p1"}'
assert_status 404
assert_json .error.code not_found

api GET /api/v1/tenants/nope/projects
assert_status 404

api GET /api/v1/tenants/research/projects
assert_status 200
assert_json '[.items[].name] | sort | join(",")' "fine-tune-a,vision-b"
assert_json '[.items[].tenant] | unique | join(",")' research

api GET /api/v1/tenants/vision/projects
assert_status 200
assert_json '[.items[].name] | join(",")' vision-b

api GET /api/v1/tenants/research/projects/vision-b
assert_status 200
assert_json .id "$PROJECT_ID"
assert_json .class production

api GET /api/v1/tenants/research/projects/missing
assert_status 404
assert_json .error.code not_found

api GET /api/v1/tenants/nope/projects/vision-b
assert_status 404

# ---------------------------------------------------------------- metrics
note "metrics"
api_raw GET /metrics
assert_status 200
assert_request_id
assert_header Content-Type '^text/plain'
assert_file_contains "$BODY_FILE" "# TYPE gpupool_http_requests_total counter"
assert_file_contains "$BODY_FILE" 'gpupool_http_requests_total{method="POST",route="/api/v1/tenants",status="201"}'
assert_file_contains "$BODY_FILE" 'gpupool_http_requests_total{method="GET",route="/api/v1/tenants/{tenant}",status="404"}'
assert_file_contains "$BODY_FILE" 'gpupool_http_requests_total{method="GET",route="/api/v1/tenants/{tenant}/projects/{project}",status="200"}'
assert_file_contains "$BODY_FILE" 'route="unmatched"'
assert_file_contains "$BODY_FILE" 'gpupool_http_request_duration_seconds_bucket{'
# labels carry route patterns, never raw paths
assert_file_lacks "$BODY_FILE" 'route="/api/v1/tenants/research"'
assert_file_lacks "$BODY_FILE" 'route="/api/v1/nothing-here"'
assert_eq "$(metric GET /api/v1/tenants 401)" "$N401" "401 counter for GET /api/v1/tenants"
BEFORE=$(metric GET /readyz 200)
api_raw GET /readyz
api_raw GET /readyz
api_raw GET /metrics
assert_eq "$(metric GET /readyz 200)" $((BEFORE + 2)) "readyz counter after two more requests"

# ---------------------------------------------------------------- audit
note "audit"
api GET '/api/v1/audit?limit=1000'
assert_status 200
assert_json '.next' null
assert_json '.items[0].action' user.bootstrap
assert_json '[.items[].seq] == [range(1; (.items | length) + 1)]' true
assert_json '[.items[] | select(.action == "tenant.create" and .result == "ok" and .target.id == "research")] | length' 1
assert_json '[.items[] | select(.action == "tenant.create" and .result == "ok" and .target.id == "research")][0] | .actor + " " + (.status | tostring) + " " + .tenant' "admin 201 research"
assert_json '[.items[] | select(.action == "project.create" and .result == "ok")] | length' 3
assert_json '[.items[] | select(.result == "denied" and .status == 401)] | length' "$N401"
assert_json "[.items[] | select(.request_id == \"$DENIED_RID\")][0] | .actor + \" \" + .result + \" \" + .action" \
    "anonymous denied tenant.list"
# failed changes are recorded as errors: duplicate (409), bad bodies (400), too large (413)
assert_json '[.items[] | select(.action == "tenant.create" and .result == "error" and .status == 409)] | length' 1
assert_json '[.items[] | select(.action == "tenant.create" and .result == "error" and .status == 400)] | length > 10' true
# reads are not audited unless denied
assert_json '[.items[] | select(.action == "tenant.list" and .result == "ok")] | length' 0
# summaries never carry the token
assert_eq "$(grep -cF -- "$TOKEN" "$BODY_FILE")" 0 "admin token in audit list"

api GET '/api/v1/audit?action=project.&limit=1000'
assert_status 200
assert_json '[.items[].action | startswith("project.")] | all' true
assert_json '[.items[] | select(.action == "project.create")] | length' 8

api GET '/api/v1/audit?tenant=vision&limit=1000'
assert_status 200
assert_json '[.items[].tenant] | unique | join(",")' vision

api GET '/api/v1/audit?limit=2'
assert_status 200
assert_json '.items | length' 2
assert_json '.next' 2
api GET '/api/v1/audit?limit=2&after=2'
assert_status 200
assert_json '.items[0].seq' 3

api GET '/api/v1/audit?limit=0'
assert_status 400
assert_json .error.code invalid_argument

AUTH_HEADER='' api GET /api/v1/audit
assert_status 401

api GET '/api/v1/audit?tenant=nope'
assert_status 404
api GET '/api/v1/audit?result=denied&limit=1000'
assert_status 200
assert_json '[.items[].result] | unique | join(",")' denied

api GET /api/v1/audit/verify
assert_status 200
assert_json .ok true
assert_json '.checked > 20' true
CHECKED=$(jq -r .checked "$BODY_FILE")

# ---------------------------------------------------------------- concurrency
# 40 different tenants and 20 copies of one, 16 at a time: every request gets
# its answer, the store serialises the writes, the chain stays whole
note "concurrent writes"
post_tenant() {
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' --data-binary "{\"name\":\"$1\"}" "$URL/api/v1/tenants"
}
export -f post_tenant
{ seq -f 'conc-%g' 1 40; yes same-name | head -n 20; } |
    xargs -P 16 -I{} bash -c 'post_tenant {}' >"$E2E_TMP/codes" 2>&1
assert_eq "$(sort "$E2E_TMP/codes" | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')" \
    "201x41 409x19 " "status codes of 60 concurrent creates"
api GET /api/v1/tenants
assert_json '[.items[].name | select(startswith("conc-"))] | length' 40
api GET /api/v1/audit/verify
assert_json .ok true
assert_json .checked $((CHECKED + 60))
assert_json '.head_hash | test("^[0-9a-f]{64}$")' true
assert_json 'has("first_bad_seq")' false

stop_server
assert_file_contains "$SERVER_LOG" 'msg=stopped'
done_testing
