#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_secrets.sh - no secret leaks into anything observable.  A run creates
# users with passwords, tokens, a join token (an agent joins with it), API
# keys (sk-…), gateway calls from tenant red with a distinctive prompt,
# failed logins (and the login throttle: 429 too_many_attempts with
# Retry-After, audited as denied; a success resets the name's count; the
# source address has its own, larger limit), bad tokens and bad keys.  Then
# every secret is searched for in: the server's and the agent's stdout and
# stderr, the audit trail (`audit list -o json` and the JSON Lines export),
# every error response and CLI error line, and everything tenant blue can
# read (usage records, reports, alarms, overview).  None may appear; red's
# prompt may not appear in any of them either.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_secrets.sh
. "$(dirname "$0")/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

OBS=$E2E_TMP/observed      # everything an operator or tenant blue could see
mkdir -p "$OBS"
SECRETS=()                 # "label=value"
secret() { SECRETS+=("$1=$2"); }
# keep ERROR-PATH: the last response body / CLI stderr goes to the observed set
keep_resp() { cat "$BODY_FILE" >>"$OBS/error-responses"; echo >>"$OBS/error-responses"; }
keep_err() { cat "$ERR_FILE" >>"$OBS/cli-errors"; }

start_server --endpoint-allow 127.0.0.0/8  # the fake upstream is on loopback
ADMIN=$TOKEN
secret admin-token "$ADMIN"
MONTH=$(date -u +%Y-%m)

node "$GW/upstream.mjs" --port 0 --name sec >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
for ((i = 0; i < 100; i++)); do
    UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out")
    [ -n "$UP" ] && break
    sleep 0.05
done
[ -n "$UP" ] || fail "upstream did not start"

# ---------------------------------------------------------------- setup
note "tenants, users with passwords, tokens, keys"
for t in red blue; do
    gp tenant create $t
    assert_rc 0
done
gp project create train --tenant red
assert_rc 0
gp project create web --tenant blue
assert_rc 0
PW_A='Alpha-Pass-Zq81-red'
PW_B='Bravo-Pass-Xk42-blue'
PW_C='Charlie-Pass-Wm53'
PW_D='Delta-Pass-Vn64'
PW_WRONG='Wrong-Guess-Ty97'
PW_NEW='Alpha-New-Pass-Rp30'
for v in PW_A PW_B PW_C PW_D PW_WRONG PW_NEW; do secret "$v" "${!v}"; done
mkpw() { printf '%s\n' "$2" >"$E2E_TMP/pw.$1"; }
mkpw alice "$PW_A"
mkpw bob "$PW_B"
mkpw carol "$PW_C"
mkpw dave "$PW_D"
mkpw wrong "$PW_WRONG"
for u in alice bob carol dave; do
    run_in "$E2E_TMP/pw.$u" --server "$URL" --token "$ADMIN" user create $u
    assert_rc 0
done
gp member grant alice tenant-admin --tenant red
assert_rc 0
gp member grant bob tenant-admin --tenant blue
assert_rc 0
login() { # NAME [PWFILE] -> LOGIN_TOKEN
    run_in "$E2E_TMP/pw.${2:-$1}" --server "$URL" login "$1"
    LOGIN_TOKEN=$(head -n 1 "$OUT_FILE")
}
login alice
assert_rc 0
ALICE=$LOGIN_TOKEN
login bob
assert_rc 0
BOB=$LOGIN_TOKEN
assert_match "$ALICE/$BOB" '^gpt_[^/]+/gpt_[^/]+$' "login tokens"
secret alice-login-token "$ALICE"
secret bob-login-token "$BOB"
# a password change: both the old and the new one are secrets
printf '%s\n%s\n' "$PW_NEW" "$PW_A" >"$E2E_TMP/pw.change"
run_in "$E2E_TMP/pw.change" --server "$URL" --token "$ALICE" user passwd alice
assert_rc 0
as "$ALICE" -o json token create --ttl 3600 --label ci
assert_rc 0
TOK_X=$(jout .token)
assert_match "$TOK_X" '^gpt_' "created token"
secret alice-created-token "$TOK_X"

gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600
assert_rc 0
JT=$(jout .token)
secret join-token "$JT"
AGENT_OUT=$E2E_TMP/agent.out
AGENT_ERR=$E2E_TMP/agent.err
GPUPOOL_JOIN_TOKEN=$JT timeout 30 "$GPUPOOL_BIN" --server "$URL" agent --once --simulate 1 \
    --state-dir "$E2E_TMP/agent" >"$AGENT_OUT" 2>"$AGENT_ERR" </dev/null
assert_eq "$?" 0 "the agent joined with the join token"
NODE_CRED=$(cat "$E2E_TMP"/agent/*.token 2>/dev/null | head -n 1)
assert_ne "$NODE_CRED" "" "the agent stored its node credential"
secret node-credential "$NODE_CRED"
# the agent with a wrong join token (a fresh state folder): refused, nothing echoed
BAD_JT='gpt_BadJoinToken0000000000000000000000000000x'
secret bad-join-token "$BAD_JT"
GPUPOOL_JOIN_TOKEN=$BAD_JT timeout 30 "$GPUPOOL_BIN" --server "$URL" agent --once --simulate 1 \
    --state-dir "$E2E_TMP/agent2" >>"$AGENT_OUT" 2>>"$AGENT_ERR" </dev/null
assert_ne "$?" 0 "an agent with a bad join token does not join"

as "$ALICE" model create llama --tenant red
assert_rc 0
as "$ALICE" endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP/v1" --accelerator H100-80GB
assert_rc 0
as "$ALICE" -o json key create ka --tenant red --project train
assert_rc 0
KEY_A=$(jout .key)
as "$BOB" -o json key create kb --tenant blue --project web
assert_rc 0
KEY_B=$(jout .key)
assert_match "$KEY_A/$KEY_B" '^sk-[^/]+/sk-[^/]+$' "API keys"
secret key-red "$KEY_A"
secret key-blue "$KEY_B"

# ---------------------------------------------------------------- gateway calls
note "gateway calls from red with a distinctive prompt"
PROMPT='Zebra-Quartz-7781 confidential merger plan'
secret red-prompt "$PROMPT"
call() { # KEY SCENARIO JSON
    timeout 60 node "$GW/client.mjs" "$URL/v1" "$1" "$2" "${3:-}" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
}
call "$KEY_A" chat "{\"model\":\"llama\",\"content\":\"$PROMPT\"}"
assert_eq "$(jout .ok)" true "red's chat"
call "$KEY_A" chat-stream "{\"model\":\"llama\",\"content\":\"$PROMPT stream\",\"include_usage\":true}"
assert_eq "$(jout .ok)" true "red's stream"
call "$KEY_A" completion "{\"model\":\"llama\",\"prompt\":\"$PROMPT completion\"}"
assert_eq "$(jout .ok)" true "red's completion"
call "$KEY_A" embed-float "{\"model\":\"llama\",\"input\":\"$PROMPT embed\"}"
assert_eq "$(jout .ok)" true "red's embedding"
# an upstream error while red's prompt is in flight
call "$KEY_A" chat "{\"model\":\"llama\",\"content\":\"$PROMPT [[error-500]]\"}"
assert_eq "$(jout .ok)" false "red's failing call"
cat "$OUT_FILE" >>"$OBS/error-responses"
# blue calls red's model: refused
call "$KEY_B" chat "{\"model\":\"llama\",\"content\":\"hello\"}"
assert_eq "$(jout .ok)" false "blue may not call red's model"
cat "$OUT_FILE" >>"$OBS/error-responses"

# ---------------------------------------------------------------- bad credentials
note "bad tokens, bad keys, failed logins"
BAD_TOKEN='gpt_NotARealToken1111111111111111111111111111'
BAD_KEY='sk-NotARealKey2222222222222222222222222222222222'
secret bad-token "$BAD_TOKEN"
secret bad-key "$BAD_KEY"
AUTH_HEADER="Authorization: Bearer $BAD_TOKEN" api GET /api/v1/tenants
assert_status 401
keep_resp
AUTH_HEADER="Authorization: Bearer $ADMIN-x" api GET /api/v1/tenants
assert_status 401
keep_resp
AUTH_HEADER="Authorization: Basic $ADMIN" api GET /api/v1/tenants
assert_status 401
keep_resp
run_cli --server "$URL" --token "$BAD_TOKEN" tenant list
assert_rc 1
keep_err
call "$BAD_KEY" chat "{\"model\":\"llama\",\"content\":\"$PROMPT\"}"
assert_eq "$(jout .status)" 401 "a bad key"
cat "$OUT_FILE" >>"$OBS/error-responses"
AUTH_HEADER="Authorization: Bearer $BAD_KEY" api POST /v1/chat/completions '{"model":"llama","messages":[{"role":"user","content":"x"}]}'
assert_status 401
keep_resp
# a key used as an API token, a token used as a key
AUTH_HEADER="Authorization: Bearer $KEY_A" api GET /api/v1/tenants
assert_status 401
keep_resp
call "$ALICE" models
assert_eq "$(jout .status)" 401 "a login token is not an API key"
cat "$OUT_FILE" >>"$OBS/error-responses"
# failed logins: wrong password, unknown user; the password never comes back
run_in "$E2E_TMP/pw.wrong" --server "$URL" login alice
assert_rc 1
keep_err
run_in "$E2E_TMP/pw.alice" --server "$URL" login alice     # the old password
assert_rc 1
keep_err
api_raw POST /api/v1/login -H 'Content-Type: application/json' \
    --data-binary "{\"name\":\"nobody\",\"password\":\"$PW_WRONG\"}"
assert_status 401
keep_resp
# a malformed login body that carries a password
api_raw POST /api/v1/login -H 'Content-Type: application/json' \
    --data-binary "{\"name\":\"alice\",\"password\":\"$PW_WRONG\",\"extra\":1}"
assert_status 400
keep_resp
api_raw POST /api/v1/login -H 'Content-Type: application/json' \
    --data-binary "{\"name\":\"alice\",\"password\":\"$PW_WRONG\""
assert_status 400
keep_resp
# so far: alice 2 failures (the malformed requests are not counted), nobody 1
login alice change
assert_rc 0
ALICE2=$LOGIN_TOKEN
secret alice-login-token-2 "$ALICE2"

note "the login throttle: per name"
LOGIN_FAILS=3   # failures from 127.0.0.1 so far (alice x2, nobody)
try_login() { # NAME PASSWORD -> STATUS, BODY_FILE
    api_raw POST /api/v1/login -H 'Content-Type: application/json' \
        --data-binary "{\"name\":\"$1\",\"password\":\"$2\"}"
}
for i in 1 2 3 4 5; do
    try_login carol "$PW_WRONG"
    assert_status 401
    keep_resp
done
LOGIN_FAILS=$((LOGIN_FAILS + 5))
try_login carol "$PW_C"                 # even the right password waits
assert_status 429
assert_json .error.code too_many_attempts
assert_header Retry-After '^[1-9][0-9]?$'
RETRY=$(header Retry-After)
[ "$RETRY" -le 60 ] || fail "Retry-After $RETRY > 60"
_pass
keep_resp
run_in "$E2E_TMP/pw.carol" --server "$URL" login carol
assert_rc 1
assert_one_line_error "too_many_attempts, HTTP 429"
keep_err
# another name from the same address is not held back by carol's count
login bob
assert_rc 0
BOB2=$LOGIN_TOKEN
secret bob-login-token-2 "$BOB2"
# the refusal is audited as denied, never with the password
gp -o json audit list --action user.login --result denied --limit 500
assert_rc 0
assert_eq "$(jq '[.items[] | select(.status == 429 and .target.id == "carol")] | length >= 2' "$OUT_FILE")" true \
    "throttled logins audited as denied"
cat "$OUT_FILE" >>"$OBS/audit-list"

note "a success resets the name's count"
for i in 1 2 3 4; do
    try_login dave "$PW_WRONG"
    assert_status 401
done
LOGIN_FAILS=$((LOGIN_FAILS + 4))
login dave
assert_rc 0
secret dave-login-token "$LOGIN_TOKEN"
for i in 1 2 3 4 5; do
    try_login dave "$PW_WRONG"
    assert_status 401
done
LOGIN_FAILS=$((LOGIN_FAILS + 5))
try_login dave "$PW_WRONG"
assert_status 429
keep_resp

note "the login throttle: per source address (20 a minute)"
n=0
while [ "$LOGIN_FAILS" -lt 20 ]; do
    n=$((n + 1))
    try_login "ghost-$n" "$PW_WRONG"
    assert_status 401
    LOGIN_FAILS=$((LOGIN_FAILS + 1))
done
try_login erin "$PW_WRONG"
assert_status 429
assert_json .error.code too_many_attempts
keep_resp

# ---------------------------------------------------------------- what blue sees
note "what tenant blue can read"
for args in "usage records --tenant blue --limit 500" "usage records --tenant red --limit 500" \
    "usage report --month $MONTH --tenant blue --group-by tenant,project,model,key,user" \
    "usage report --month $MONTH --group-by tenant,project,model,key,user" \
    "report cost --month $MONTH --tenant blue" "alarm list" "alarm list --tenant blue" \
    "tenant overview blue" "tenant overview red" "project overview web --tenant blue" \
    "key list --tenant blue --project web" "model list --tenant blue" "tenant list" \
    "audit list --tenant blue --limit 500" "user list" "token list"; do
    # shellcheck disable=SC2086
    as "$BOB2" -o json $args
    { echo "## $args (rc $RC)"; cat "$OUT_FILE" "$ERR_FILE"; } >>"$OBS/tenant-blue"
done
call "$KEY_B" models
cat "$OUT_FILE" >>"$OBS/tenant-blue"
assert_file_contains "$OBS/tenant-blue" "## tenant overview blue (rc 0)"

# ---------------------------------------------------------------- the audit trail
note "the audit trail"
gp -o json audit list --limit 1000
assert_rc 0
cp "$OUT_FILE" "$OBS/audit-list-all"
assert_match "$(jq '.items | length' "$OBS/audit-list-all")" '^[1-9][0-9]+$' "audit events"
assert_eq "$(jq '[.items[] | select(.action == "user.login" and .result == "denied")] | length > 10' "$OBS/audit-list-all")" true "failed logins in the audit"
gp audit export
assert_rc 0
cp "$OUT_FILE" "$OBS/audit-export"
if grep -q '^pending approval' "$OUT_FILE"; then
    fail "audit export needs an approval here (only one security-admin): $(head -c 200 "$OUT_FILE")"
fi
assert_match "$(wc -l <"$OBS/audit-export")" '^[1-9][0-9]+$' "exported audit lines"
assert_eq "$(jq -c . "$OBS/audit-export" | wc -l)" "$(wc -l <"$OBS/audit-export")" "the export is JSON Lines"
gp audit verify
assert_rc 0

# ---------------------------------------------------------------- the search
stop_server
cp "$SERVER_LOG" "$OBS/server.stderr"
cp "$SERVER_OUT" "$OBS/server.stdout"
cp "$AGENT_OUT" "$OBS/agent.stdout"
cp "$AGENT_ERR" "$OBS/agent.stderr"
note "searching $(cat "$OBS"/* | wc -c) bytes in $(find "$OBS" -type f | wc -l) files for ${#SECRETS[@]} secrets"
assert_match "$(wc -l <"$OBS/server.stderr")" '^[1-9][0-9]+$' "the server logged"
for s in "${SECRETS[@]}"; do
    label=${s%%=*}
    value=${s#*=}
    [ ${#value} -ge 12 ] || fail "secret $label is too short to search for"
    for f in "$OBS"/*; do
        assert_file_lacks "$f" "$value" "$(basename "$f") must not contain the $label"
    done
    # the secret's distinctive middle, in case of truncation or re-encoding
    mid=${value:4:12}
    hits=$(grep -lF -- "$mid" "$OBS"/* || true)
    assert_eq "$hits" "" "a 12-character piece of the $label in"
done

done_testing
