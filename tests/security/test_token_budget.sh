#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119  # jq programs in single quotes; start_server takes optional flags
#
# test_token_budget.sh - monthly token budgets hold against an upstream that ignores
# max_tokens (issue 33, item 4; docs/gateway.md, "Token budgets"): a real server, the
# fake Node upstream (tests/gateway/upstream.mjs, [[ramble-N]]: N more words whatever
# max_tokens says, all of them in its usage) and the official openai client.  Failed on
# 489d392, where a request without max_tokens reserved 1,024 tokens and was billed all it
# generated: four parallel requests used 800,020 tokens against a tenant quota of 5,000.
#   - requests without max_tokens under a budget are sent the max_tokens the budgets
#     still allow (their sum within the quota), and billed at most that + the bound;
#   - a max_tokens above what is left is cut to it; nothing left: 429 insufficient_quota;
#   - a stream from such an upstream is cut cleanly (finish_reason "length", then
#     `data: [DONE]`; the Responses API: response.incomplete), and the client ends normally;
#   - used + reserved of the tenant never passes quota + GW_USAGE_SLACK per request
#     (prompts of ASCII text, as the upstream counts them);
#   - a key without any budget keeps the old behaviour (its body is passed on unchanged).
. "$(dirname "$0")/../e2e/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || { echo "$E2E_NAME: skipped: node is not installed"; exit 77; }
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

node "$GW/upstream.mjs" --port 0 --name rambler --model m >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
for _ in $(seq 100); do
    UP=$(sed -n 's/^listening //p' "$E2E_TMP/up.out")
    [ -n "$UP" ] && break
    sleep 0.1
done
[ -n "$UP" ] || fail "the fake upstream did not start"
# the bodies the upstream got (POSTs), as a JSON array
uplog() { curl -s "http://127.0.0.1:$UP/_log" | jq -c '[.[] | select(.method == "POST") | .body]'; }
uplog_clear() { curl -s -X DELETE "http://127.0.0.1:$UP/_log" >/dev/null; }

chat() { AUTH_HEADER="Authorization: Bearer $1" api POST /v1/chat/completions "$2"; }
mkkey() { # mkkey VAR TENANT BODY (in project p)
    api POST "/api/v1/tenants/$2/projects/p/keys" "$3"
    assert_status 201
    printf -v "$1" '%s' "$(jq -r .key "$BODY_FILE")"
}
# call KEY SCENARIO JSON: the official client against the gateway -> OUT_FILE
call() {
    E2E_LAST_CMD="client.mjs $2 ${3:-}"
    timeout 60 node "$GW/client.mjs" "$URL/v1" "$1" "$2" "${3:-}" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
    [ "$RC" == 0 ] || { _show stderr "$ERR_FILE"; fail "client.mjs $2 exited $RC"; }
}
# ledger TENANT: "used reserved" of the tenant this month, once queued usage is written
ledger() {
    sleep 1
    db_sql "$DATA" "SELECT COALESCE(SUM(used),0) || ' ' || COALESCE(SUM(reserved),0) FROM token_ledger
                    WHERE scope = 'tenant' AND id = (SELECT id FROM tenants WHERE name = '$1')"
}
SLACK=64 # GW_USAGE_SLACK: the bound is quota + SLACK per request in flight (an ASCII prompt)

start_server --health-interval 3600 --endpoint-allow 127.0.0.0/8
for t in alpha beta free; do
    api POST /api/v1/tenants "{\"name\":\"$t\"}"
    assert_status 201
    api POST "/api/v1/tenants/$t/projects" '{"name":"p"}'
    assert_status 201
    gp member grant admin tenant-admin --tenant "$t" # keys are made in a project role
    assert_rc 0
    api POST "/api/v1/tenants/$t/models" '{"name":"m"}'
    assert_status 201
    api POST "/api/v1/tenants/$t/models/m/endpoints" "{\"url\":\"http://127.0.0.1:$UP/v1\"}"
    assert_status 201
done
api PATCH /api/v1/tenants/alpha/quota '{"tokens_month":5000}'
assert_status 200
mkkey KA alpha '{"name":"ka"}'

note "four parallel chats without max_tokens, an upstream that ignores it: the tenant quota holds"
uplog_clear
BODY='{"model":"m","messages":[{"role":"user","content":"hello [[ramble-200000]]"}]}'
PAR=()
for i in 1 2 3 4; do
    curl -s --max-time 60 -o "$E2E_TMP/par.$i" -w '%{http_code}\n' -H "Authorization: Bearer $KA" \
        -H 'Content-Type: application/json' -d "$BODY" "$URL/v1/chat/completions" >"$E2E_TMP/par.$i.code" &
    PAR+=("$!")
done
for j in "${PAR[@]}"; do wait "$j"; done
CODES=$(cat "$E2E_TMP"/par.*.code | sort | uniq -c | tr -s ' ' | paste -sd, -)
note "status codes: $CODES"
assert_eq "$(cat "$E2E_TMP"/par.*.code | grep -c '^200$')" 4 "all four fit the quota ($CODES)"
# every body sent upstream names a max_tokens, and together they fit the quota
assert_eq "$(uplog | jq '[.[] | select(.max_tokens == null)] | length')" 0 "max_tokens sent upstream"
SENT=$(uplog | jq '[.[].max_tokens] | add')
[ "$SENT" -le 5000 ] || fail "the max_tokens sent upstream add up to $SENT, more than the quota"
read -r USED RES <<<"$(ledger alpha)"
note "tenant alpha: used $USED, reserved $RES of 5000 (max_tokens sent: $SENT)"
[ $((USED + RES)) -le $((5000 + 4 * SLACK)) ] ||
    fail "the tenant passed its quota: used $USED + reserved $RES > 5000 + $((4 * SLACK))"
[ "$USED" -ge 1000 ] || fail "the answers were billed ($USED)"

note "more requests: capped to what is left, then 429 insufficient_quota"
uplog_clear
for i in $(seq 8); do
    chat "$KA" '{"model":"m","max_tokens":4000,"messages":[{"role":"user","content":"more [[ramble-100000]]"}]}'
    [ "$STATUS" == 429 ] && break
    assert_status 200
done
assert_status 429
assert_json '.error.code' insufficient_quota
MAXES=$(uplog | jq -c '[.[].max_tokens]')
note "max_tokens sent upstream after the first four: $MAXES"
assert_eq "$(uplog | jq '[.[] | select(.max_tokens >= 4000)] | length')" 0 "a max_tokens above what is left is cut"
read -r USED RES <<<"$(ledger alpha)"
note "tenant alpha: used $USED, reserved $RES of 5000"
NREQ=$((4 + $(uplog | jq length)))
[ $((USED + RES)) -le $((5000 + NREQ * SLACK)) ] ||
    fail "the tenant passed its quota: used $USED + reserved $RES > 5000 + $((NREQ * SLACK))"

note "a stream from an upstream that ignores max_tokens is cut cleanly at the key's budget"
mkkey KB beta '{"name":"kb","tokens_month":300}'
uplog_clear
call "$KB" chat-stream '{"model":"m","content":"hi [[ramble-5000]]"}'
assert_eq "$(jout .ok)" true "the official client ends the stream normally ($(head -c 300 "$OUT_FILE"))"
assert_eq "$(jout .finish_reason)" length "finish_reason length"
NW=$(jout '.content | split(" ") | length')
note "words streamed: $NW"
[ "$NW" -le 300 ] || fail "the stream passed the budget: $NW words of 300 tokens"
assert_eq "$(uplog | jq '.[0].max_tokens <= 300')" true "max_tokens sent upstream within the budget"
read -r USED RES <<<"$(ledger beta)"
[ $((USED + RES)) -le $((300 + SLACK)) ] || fail "beta passed its budget: used $USED + reserved $RES"
# on the wire: a finish chunk with finish_reason "length", then [DONE], nothing after
mkkey KB2 beta '{"name":"kb2","tokens_month":200}'
curl -sN -H "Authorization: Bearer $KB2" -H 'Content-Type: application/json' \
    -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi [[ramble-5000]]"}]}' \
    "$URL/v1/chat/completions" >"$E2E_TMP/sse"
assert_eq "$(grep -c '^data: ' "$E2E_TMP/sse")" "$(grep -c . "$E2E_TMP/sse")" "only data lines"
assert_eq "$(grep . "$E2E_TMP/sse" | tail -n 1)" "data: [DONE]" "the stream ends with [DONE]"
assert_eq "$(grep '^data: {' "$E2E_TMP/sse" | tail -n 1 | sed 's/^data: //' | jq -r '.choices[0].finish_reason')" \
    length "the last chunk says length"
assert_eq "$(grep -c '"finish_reason":"length"' "$E2E_TMP/sse")" 1 "one finish"
# the Responses API: max_output_tokens sent, the stream ends with response.incomplete
mkkey KB3 beta '{"name":"kb3","tokens_month":200}'
uplog_clear
call "$KB3" response-stream '{"model":"m","input":"hi [[ramble-5000]]"}'
assert_eq "$(jout .ok)" true "the Responses stream ends normally ($(head -c 300 "$OUT_FILE"))"
assert_eq "$(jout .status)" incomplete "response.incomplete"
assert_eq "$(uplog | jq '.[0].max_output_tokens <= 200')" true "max_output_tokens sent upstream"

note "no budget at all: the body is passed on unchanged (no max_tokens added)"
mkkey KF free '{"name":"kf"}'
uplog_clear
chat "$KF" '{"model":"m","messages":[{"role":"user","content":"hello"}]}'
assert_status 200
assert_eq "$(uplog | jq '.[0] | has("max_tokens")')" false "no max_tokens added without a budget"

stop_server
done_testing
