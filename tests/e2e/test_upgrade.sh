#!/usr/bin/env bash
# test_upgrade.sh - an upgrade from the previous release (docs/operations.md,
# "Upgrades"): a store at schema version 14 (made with `gpupool migrate --to
# 14`) is filled through SQL written against that schema - tenants, a project,
# users and their roles, a token, an API key, a node, a finished job with its
# binding, gateway usage with its rollup and ledger, join tokens, an approval
# and a hash-chained audit trail - then this build's server starts on it:
# migration 15 runs (once), `gpupool check` and `gpupool audit verify` pass,
# the old data reads back through the API and the CLI, migration 15's new
# columns hold their defaults (users' home tenants, node accounts, join
# tokens' uses, ...), and new writes chain onto the old audit trail.
# On SQLite, and on PostgreSQL under GP_TEST_PG.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C # ${#s} below counts bytes

PREV=14
DATA=$E2E_TMP/data
mkdir -p "$DATA" "$E2E_TMP/fresh"
chmod 700 "$DATA"
SF=$(store_flag "$DATA")
# the version this build knows (15 or later: the checks below are of migration 15)
# shellcheck disable=SC2046
run_cli -o json migrate --data "$E2E_TMP/fresh" $(store_flag "$E2E_TMP/fresh")
assert_rc 0
KNOWN=$(jout .schema_version)
[ "$KNOWN" -ge 15 ] || fail "this build knows schema version $KNOWN, expected 15 or later"

# ---------------------------------------------------------------- the v14 store
note "gpupool migrate --to $PREV: the previous release's schema"
# shellcheck disable=SC2086
run_cli -o json migrate --data "$DATA" $SF --to "$PREV"
assert_rc 0
assert_eq "$(jout .schema_version)" "$PREV" "schema version after migrate --to $PREV"
assert_eq "$(db_sql "$DATA" 'SELECT COUNT(*), MAX(version) FROM schema_migrations;')" "$PREV|$PREV" \
    "migrations applied"
# shellcheck disable=SC2086
run_cli migrate --data "$DATA" $SF --to $((PREV - 1))
assert_rc 1
assert_one_line_error "never undone"
# shellcheck disable=SC2086
run_cli migrate --data "$DATA" $SF --to 0
assert_rc 2
assert_one_line_error "--to needs a schema version"
# shellcheck disable=SC2086
run_cli migrate --data "$DATA" $SF --to 9999
assert_rc 2
assert_one_line_error "--to needs a schema version"
assert_eq "$(db_sql "$DATA" 'SELECT MAX(version) FROM schema_migrations;')" "$PREV" "version after refusals"

# Audit events are hash-chained (src/audit/audit.c): BLAKE2b-256 over
# "gpupool-audit-v1", the previous hash and every field, each as an 8-byte
# little-endian length and its bytes.
_field() {
    local s n
    for s in "$@"; do
        n=${#s}
        # shellcheck disable=SC2059
        printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' \
            $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))"
        printf '%s' "$s"
    done
}
SEQ=0
PREV_HASH=""
AUDIT_SQL=""
# audit_event TS ACTOR ACTION TARGET_TYPE TARGET_ID TENANT PROJECT STATUS SUMMARY
audit_event() {
    local ts=$1 actor=$2 action=$3 ttype=$4 tid=$5 tenant=$6 project=$7 status=$8 summary=$9
    local id hash
    SEQ=$((SEQ + 1))
    id=$(printf 'a0d1%028d' "$SEQ")
    hash=$(_field gpupool-audit-v1 "$PREV_HASH" "$SEQ" "$id" "$ts" "req-$SEQ" "$actor" "" \
        127.0.0.1 "$action" "$ttype" "$tid" "$tenant" "$project" ok "$status" "$summary" |
        b2sum -l 256 | cut -d' ' -f1)
    AUDIT_SQL+="INSERT INTO audit (seq, id, ts_us, request_id, actor, on_behalf, source, action,"
    AUDIT_SQL+=" target_type, target_id, tenant, project, result, status, summary, prev_hash, hash)"
    AUDIT_SQL+=" VALUES ($SEQ, '$id', $ts, 'req-$SEQ', '$actor', '', '127.0.0.1', '$action',"
    AUDIT_SQL+=" '$ttype', '$tid', '$tenant', '$project', 'ok', $status, '$summary',"
    AUDIT_SQL+=" '$PREV_HASH', '$hash');"
    PREV_HASH=$hash
}

NOW=$(($(date +%s) * 1000000))
T0=$((NOW - 7200 * 1000000))   # the store's first day: two hours ago
T1=$((NOW - 3600 * 1000000))   # the job's end
MONTH=$(date -u -d @$((NOW / 1000000)) +%Y-%m)
HOUR=$((NOW / 3600000000 * 3600000000))
ADMIN_TOKEN="gpt_upgradeAdminTokenFromTheVersion14Store0000"
ALICE_TOKEN="gpt_upgradeAliceTokenFromTheVersion14Store00000"
KEY_SECRET="sk-upgradeKeyFromTheVersion14Store000000000000"
h() { printf '%s' "$1" | b2sum -l 256 | cut -d' ' -f1; }

U_ADMIN=u0000000000000000000000000000001
U_ALICE=u0000000000000000000000000000002
U_BOB=u0000000000000000000000000000003
U_NODE=u0000000000000000000000000000004
T_RES=t0000000000000000000000000000001
T_VIS=t0000000000000000000000000000002
P_VB=p0000000000000000000000000000001
JOB=j0000000000000000000000000000001
KEY=k0000000000000000000000000000001
NODE=n0000000000000000000000000000001

audit_event $T0 system user.bootstrap user admin "" "" 0 '{"roles":["platform-admin","security-admin"],"token":"written to admin.token"}'
audit_event $((T0 + 1000)) admin tenant.create tenant research research "" 201 '{"name":"research","display_name":"Research"}'
audit_event $((T0 + 2000)) admin tenant.create tenant vision vision "" 201 '{"name":"vision","display_name":""}'
audit_event $((T0 + 3000)) admin project.create project vision-b research vision-b 201 '{"name":"vision-b","class":"production"}'
audit_event $((T0 + 4000)) admin user.create user alice "" "" 201 '{"name":"alice"}'
audit_event $((T0 + 5000)) admin member.grant member alice research vision-b 200 '{"role":"project-user"}'
audit_event $((T0 + 6000)) alice key.create key bot research vision-b 201 '{"name":"bot"}'
audit_event $((T0 + 7000)) alice job.submit job "$JOB" research vision-b 201 '{"name":"train-1","class":"a100.1x"}'

V14_SQL="
INSERT INTO users (id, name, kind, password_hash, disabled, created_at) VALUES
  ('$U_ADMIN', 'admin', 'user', NULL, 0, $T0),
  ('$U_ALICE', 'alice', 'user', NULL, 0, $((T0 + 4000))),
  ('$U_BOB', 'bob', 'user', NULL, 0, $((T0 + 4100))),
  ('$U_NODE', 'node-sim-0', 'service', NULL, 0, $((T0 + 4200)));
INSERT INTO tokens (id, user_id, hash, label, created_at, expires_at) VALUES
  ('k1000000000000000000000000000001', '$U_ADMIN', '$(h "$ADMIN_TOKEN")', 'bootstrap', $T0, NULL),
  ('k1000000000000000000000000000002', '$U_ALICE', '$(h "$ALICE_TOKEN")', 'cli', $T0, NULL);
INSERT INTO tenants (id, name, display_name, created_at) VALUES
  ('$T_RES', 'research', 'Research', $((T0 + 1000))), ('$T_VIS', 'vision', '', $((T0 + 2000)));
INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES
  ('$P_VB', '$T_RES', 'vision-b', 'production', $((T0 + 3000)));
INSERT INTO role_bindings (user_id, role, scope, tenant_id, project_id, created_at, granted_by) VALUES
  ('$U_ADMIN', 'platform-admin', 'global', NULL, NULL, $T0, ''),
  ('$U_ADMIN', 'security-admin', 'global', NULL, NULL, $T0, ''),
  ('$U_ALICE', 'project-user', 'project', '$T_RES', '$P_VB', $((T0 + 5000)), '$U_ADMIN'),
  ('$U_BOB', 'tenant-viewer', 'tenant', '$T_RES', NULL, $((T0 + 5000)), '$U_ADMIN'),
  ('$U_BOB', 'tenant-viewer', 'tenant', '$T_VIS', NULL, $((T0 + 5000)), '$U_ADMIN');
INSERT INTO nodes (id, name, hostname, cpus, memory_gib, source, state, agent_user_id,
  registered_at, last_heartbeat) VALUES
  ('$NODE', 'sim-0', 'sim-0', 64, 512, 'inventory', 'unreachable', '$U_NODE', $T0, $T1);
INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, updated_at) VALUES
  ('g0000000000000000000000000000001', 'GPU-upgrade-0', '$NODE', 0, 'A100-80GB', 81920, $T1);
INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at) VALUES
  ('a100.1x', 'whole', 1, 8, 64, '[\"A100-80GB\"]', $T0);
INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,
  preemptible, may_preempt, recovery, command, submitter, state, reason, created_at, queued_at,
  started_at, ended_at, exit_code, log, image) VALUES
  ('$JOB', '$T_RES', '$P_VB', 'train-1', 'a100.1x', 1, 'normal', 100, 1, 0, 'requeue',
   '[\"python\",\"train.py\"]', 'alice', 'succeeded', 'exited 0', $((T0 + 7000)), $((T0 + 7000)),
   $((T0 + 8000)), $((T1 + 8000)), 0, 'epoch 1 done', '');
INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,
  project_id, tenant, project, start_us, end_us, end_reason) VALUES
  ('b0000000000000000000000000000001', '$JOB', 0, 'GPU-upgrade-0', 'sim-0', 'A100-80GB', 'whole',
   1000, '$T_RES', '$P_VB', 'research', 'vision-b', $((T0 + 8000)), $((T1 + 8000)), 'succeeded');
INSERT INTO api_keys (id, tenant_id, project_id, name, owner, hash, prefix, models, rpm,
  tokens_month, created_at) VALUES
  ('$KEY', '$T_RES', '$P_VB', 'bot', 'alice', '$(h "$KEY_SECRET")', '${KEY_SECRET:0:10}',
   '[\"llama-8b\"]', 600, 1000000, $((T0 + 6000)));
INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project, key_id, model,
  accelerator, kind, prompt_tokens, completion_tokens, latency_us, status) VALUES
  ('r0000000000000000000000000000001', $NOW, '$T_RES', '$P_VB', 'research', 'vision-b', '$KEY',
   'llama-8b', 'A100-80GB', 'chat', 120, 30, 5000, 200),
  ('r0000000000000000000000000000002', $((NOW + 1)), '$T_RES', '$P_VB', 'research', 'vision-b',
   '$KEY', 'llama-8b', 'A100-80GB', 'chat', 80, 20, 4000, 200);
INSERT INTO usage_hourly (hour, tenant_id, project_id, tenant, project, key_id, model, accelerator,
  requests, prompt_tokens, completion_tokens) VALUES
  ($HOUR, '$T_RES', '$P_VB', 'research', 'vision-b', '$KEY', 'llama-8b', 'A100-80GB', 2, 200, 50);
INSERT INTO token_ledger (scope, id, month, used, reserved) VALUES
  ('key', '$KEY', '$MONTH', 250, 0), ('project', '$P_VB', '$MONTH', 250, 0),
  ('tenant', '$T_RES', '$MONTH', 250, 0);
INSERT INTO join_tokens (id, hash, created_by, created_at, expires_at, uses) VALUES
  ('jt000000000000000000000000000001', '$(h jt-used-three-times)', '$U_ADMIN', $T0, $((NOW + 3600000000)), 3),
  ('jt000000000000000000000000000002', '$(h jt-never-used)', '$U_ADMIN', $T0, $((NOW + 3600000000)), 0);
INSERT INTO approvals (id, operation, requester_id, method, path, body, state, created_at, expires_at)
  VALUES ('ap000000000000000000000000000001', 'user.create', '$U_ADMIN', 'POST', '/api/v1/users',
   '{\"name\":\"carol\",\"password\":\"in-clear-in-v14\"}', 'pending', $T0, $((NOW + 3600000000)));
$AUDIT_SQL
UPDATE audit_head SET seq = $SEQ, hash = '$PREV_HASH' WHERE id = 1;
"
note "the previous release's data, through SQL against schema version $PREV"
db_sql "$DATA" "$V14_SQL" >/dev/null || fail "the v$PREV data did not load"
_pass
printf '%s\n' "$ADMIN_TOKEN" >"$DATA/admin.token"
chmod 600 "$DATA/admin.token"

# the previous release's store as it is: this build's check wants the current schema
# shellcheck disable=SC2086
run_cli check --data "$DATA" $SF
assert_rc 1
assert_file_contains "$ERR_FILE" "older than this gpupool"

# ---------------------------------------------------------------- the upgrade
note "this build's server on the v$PREV store: migration 15 runs at start"
# the signing key apart from the data (as on PostgreSQL, where servers must share one)
mkdir -p "$E2E_TMP/keys"
chmod 700 "$E2E_TMP/keys"
AKEY=(--audit-key "$E2E_TMP/keys/audit.key")
start_server "${AKEY[@]}"
LATEST=$(db_sql "$DATA" 'SELECT MAX(version) FROM schema_migrations;')
assert_eq "$LATEST" "$KNOWN" "schema version after the server's start"
assert_eq "$(db_sql "$DATA" 'SELECT COUNT(*) FROM schema_migrations;')" "$KNOWN" "migrations recorded"
assert_eq "$TOKEN" "$ADMIN_TOKEN" "the v$PREV admin token file is kept"
[ "$(db_sql "$DATA" "SELECT COUNT(*) FROM tokens WHERE user_id = '$U_ADMIN';")" == 1 ] ||
    fail "the server bootstrapped a new admin on a store that has one"
_pass

note "the old data reads back through the API and the CLI"
gp -o json whoami
assert_rc 0
assert_eq "$(jout .name)" admin "whoami with the v$PREV token"
gp -o json tenant list
assert_rc 0
assert_eq "$(jout '[.items[].name]|sort|join(",")')" "research,vision" "tenants"
gp -o json project list --tenant research
assert_eq "$(jout '[.items[]|.name+":"+.class]|join(",")')" "vision-b:production" "projects"
api GET "/api/v1/tenants/research/projects/vision-b/jobs/$JOB"
assert_status 200
assert_json .state succeeded
assert_json .name train-1
assert_json '.bindings|length' 1
assert_json '.bindings[0].gpu' GPU-upgrade-0
gp -o json key list --tenant research --project vision-b
assert_rc 0
assert_eq "$(jout '[.items[].name]|join(",")')" bot "keys"
assert_eq "$(jout '.items[0].rpm')" 600 "key rpm"
assert_eq "$(jout '.items[0].max_parallel // 0')" 0 "key max_parallel (new in 15): no limit"
gp -o json usage report --tenant research --from "$(date -u -d @$(((T0 - 1000000) / 1000000)) +%Y-%m-%dT%H:%M:%SZ)" \
    --to "$(date -u -d @$((NOW / 1000000 + 60)) +%Y-%m-%dT%H:%M:%SZ)"
assert_rc 0
assert_eq "$(jq '[.. | objects | .card_hours? // empty] | max' "$OUT_FILE")" 1 "card-hours of the v$PREV job"
assert_eq "$(jq '[.. | objects | .prompt_tokens? // empty] | max' "$OUT_FILE")" 200 "prompt tokens of the v$PREV usage"
AUTH_HEADER="Authorization: Bearer $ALICE_TOKEN" api GET /api/v1/whoami
assert_status 200
assert_json .name alice
gp -o json audit list --limit 100
assert_rc 0
assert_eq "$(jout '[.items[]|select(.action=="job.submit" and .actor=="alice")]|length')" 1 \
    "the v$PREV audit events list"

note "migration 15's new columns hold their defaults"
api GET /api/v1/users/alice
assert_status 200
assert_json .home research
api GET /api/v1/users/bob
assert_status 200
assert_json .home null
api GET /api/v1/users/admin
assert_json .home null
assert_eq "$(db_sql "$DATA" "SELECT name, home_tenant_id, node_account FROM users ORDER BY name;" | tr '\n' ' ')" \
    "admin||0 alice|$T_RES|0 bob||0 node-sim-0||1 " "users' homes and node accounts"
assert_eq "$(db_sql "$DATA" "SELECT id, max_uses, used_by, node_name FROM join_tokens ORDER BY id;" | tr '\n' ' ')" \
    "jt000000000000000000000000000001|3|[]| jt000000000000000000000000000002|1|[]| " "join tokens' uses"
assert_eq "$(db_sql "$DATA" "SELECT state, body FROM approvals;")" "expired|{}" \
    "the v$PREV approval that held a password in clear"
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*), SUM(clipped) FROM usage_records;")" "2|0" "usage records unclipped"
assert_eq "$(db_sql "$DATA" "SELECT max_parallel FROM api_keys;")" 0 "api key max_parallel"
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM invitations;")" 0 "invitations"

note "gpupool check and audit verify pass on the migrated store"
# shellcheck disable=SC2086
run_cli check --data "$DATA" $SF
assert_rc 0
assert_file_contains "$OUT_FILE" "audit_chain"
gp -o json audit verify
assert_rc 0
assert_eq "$(jout .ok)" true "audit verify (API)"
[ "$(jout .checked)" -ge "$SEQ" ] || fail "audit verify checked $(jout .checked) event(s), expected the $SEQ old ones at least"
_pass

note "new writes chain onto the old trail"
gp project create vision-c --tenant research --class development
assert_rc 0
printf '%s\n' 'dave-Passw0rd-long-enough' >"$E2E_TMP/pw"
run_in "$E2E_TMP/pw" --server "$URL" --token "$TOKEN" user create dave --tenant vision
assert_rc 0
api GET /api/v1/users/dave
assert_json .home vision
assert_ne "$(db_sql "$DATA" "SELECT prev_hash FROM audit WHERE seq = $((SEQ + 1));")" "" "first new event's link"
assert_eq "$(db_sql "$DATA" "SELECT prev_hash FROM audit WHERE seq = $((SEQ + 1));")" "$PREV_HASH" \
    "the first new event links to the last v$PREV one"
stop_server

note "a second start migrates nothing; check and audit verify still pass"
start_server "${AKEY[@]}"
assert_eq "$(db_sql "$DATA" 'SELECT COUNT(*), MAX(version) FROM schema_migrations;')" "$KNOWN|$KNOWN" \
    "migrations after a second start"
gp -o json project list --tenant research
assert_eq "$(jout '[.items[].name]|sort|join(",")')" "vision-b,vision-c" "projects after restart"
stop_server
# shellcheck disable=SC2086
run_cli check --data "$DATA" $SF
assert_rc 0
# shellcheck disable=SC2086
run_cli -o json audit verify --data "$DATA" $SF --public-key "$DATA/audit-signing.pub"
assert_rc 0
assert_eq "$(jout .ok)" true "audit verify (offline)"
# shellcheck disable=SC2086
run_cli -o json migrate --data "$DATA" $SF
assert_rc 0
assert_eq "$(jout .schema_version)" "$KNOWN" "migrate on a current store"

done_testing
