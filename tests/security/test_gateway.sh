#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119  # jq programs in single quotes; start_server takes optional flags
#
# test_gateway.sh - the gateway against a hostile client and a hostile upstream
# (issue 18, findings 3, 4, 6, 7, 8 and the audit of refusals): a real server, the
# fake Node upstream (tests/gateway/upstream.mjs) and curl.  Each check failed on
# the code before the fix:
#   - max_tokens / n of INT64_MAX: 400 in OpenAI's shape, nothing reserved (the sum
#     used to wrap negative, leaving every ledger of the tenant below zero);
#   - "stream": 1 / "true", stream_options not an object: 400 (was taken as "not streamed");
#   - endpoints at 127.0.0.1, [::1], localhost, 169.254.169.254, 2130706433 or the server's
#     own address: refused without an allow-list; a name resolving to loopback is refused
#     when connecting; a redirecting upstream is neither followed nor relayed;
#   - health-check errors are generic for tenants, detailed for ops;
#   - a tenant-admin cannot add or remove endpoints of a public model (platform-admin can);
#   - usage of -1000000 or 10^15 tokens from an upstream is clipped and flagged (padding
#     an answer with whitespace raises no bound); usage
#     records, /metrics, the usage report and its cost never go negative;
#   - refusals of a known key (model not allowed, quota) are audited, at most once per key,
#     reason and minute, and counted in /metrics every time.
. "$(dirname "$0")/../e2e/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || { echo "$E2E_NAME: skipped: node is not installed"; exit 77; }

# A fake upstream listening on every IPv4 address (so a host name resolving to 127.x
# reaches it too).  Sets UP.
node "$GW/upstream.mjs" --port 0 --host 0.0.0.0 --name hostile --model m >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
for _ in $(seq 100); do
    UP=$(sed -n 's/^listening //p' "$E2E_TMP/up.out")
    [ -n "$UP" ] && break
    sleep 0.1
done
[ -n "$UP" ] || fail "the fake upstream did not start"
uplog_posts() { curl -s "http://127.0.0.1:$UP/_log" | jq '[.[] | select(.method == "POST")] | length'; }
curl -s -X DELETE "http://127.0.0.1:$UP/_log" >/dev/null

# chat KEY BODY: POST /v1/chat/completions with an API key
chat() { AUTH_HEADER="Authorization: Bearer $1" api POST /v1/chat/completions "$2"; }
# assert_oai_error STATUS CODE PARAM: the last answer is OpenAI's error shape
assert_oai_error() {
    assert_status "$1"
    assert_json '.error.type' invalid_request_error
    assert_json '.error.code' "$2"
    assert_json '.error.param' "$3"
}
mkuser() {
    gp user create --service "$2"
    assert_rc 0
    gp -o json token create --user "$2" --ttl 3600
    assert_rc 0
    printf -v "$1" '%s' "$(jq -r .token "$OUT_FILE")"
}
mkkey() { # mkkey VAR BODY (in alpha/p)
    api POST /api/v1/tenants/alpha/projects/p/keys "$2"
    assert_status 201
    printf -v "$1" '%s' "$(jq -r .key "$BODY_FILE")"
}
ledger_rows() { db_sql "$DATA" "SELECT COUNT(*) FROM token_ledger WHERE used <> 0 OR reserved <> 0"; }
ledger_negative() { db_sql "$DATA" "SELECT COUNT(*) FROM token_ledger WHERE used < 0 OR reserved < 0"; }

# ================================================================ without an allow-list
# (no health checks here: the private addresses below answer nothing)
start_server --health-interval 3600
ADMIN=$TOKEN
SELF_PORT=${URL##*:}
api POST /api/v1/tenants '{"name":"alpha"}'
assert_status 201
api POST /api/v1/tenants '{"name":"beta"}'
assert_status 201
api POST /api/v1/tenants/alpha/projects '{"name":"p"}'
assert_status 201
mkuser TADMIN tadmin
gp member grant tadmin tenant-admin --tenant alpha
assert_rc 0
gp member grant admin tenant-admin --tenant alpha # keys are made in a project role
assert_rc 0
api POST /api/v1/tenants/alpha/models '{"name":"m"}'
assert_status 201
mkkey KEY '{"name":"k","tokens_month":100000}'

note "finding 3: client numbers are bounded; nothing is reserved for a refused request"
chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9223372036854775807}'
assert_oai_error 400 invalid_value max_tokens
chat "$KEY" '{"model":"m","messages":[],"max_completion_tokens":-9223372036854775808}'
assert_oai_error 400 invalid_value max_completion_tokens
chat "$KEY" '{"model":"m","messages":[],"n":9223372036854775807}'
assert_oai_error 400 invalid_value n
chat "$KEY" '{"model":"m","messages":[],"max_tokens":"9"}'
assert_oai_error 400 invalid_type max_tokens
AUTH_HEADER="Authorization: Bearer $KEY" api POST /v1/completions '{"model":"m","prompt":"x","best_of":1000}'
assert_oai_error 400 invalid_value best_of
# a chat's best_of (vLLM generates that many) is bounded and reserved for too
chat "$KEY" '{"model":"m","messages":[],"best_of":1000}'
assert_oai_error 400 invalid_value best_of
assert_eq "$(ledger_rows)" 0 "no ledger row changed by refused requests"


note "finding 6: a stream flag that is not a boolean is refused"
chat "$KEY" '{"model":"m","messages":[],"stream":1}'
assert_oai_error 400 invalid_type stream
chat "$KEY" '{"model":"m","messages":[],"stream":"true"}'
assert_oai_error 400 invalid_type stream
AUTH_HEADER="Authorization: Bearer $KEY" api POST /v1/completions '{"model":"m","prompt":"x","stream":true,"stream_options":1}'
assert_oai_error 400 invalid_type stream_options
chat "$KEY" '{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":1}}'
assert_oai_error 400 invalid_type stream_options.include_usage
assert_eq "$(ledger_rows)" 0 "no ledger row changed"

note "finding 7: endpoints may not point at loopback, link-local, metadata or the server itself"
for u in "http://127.0.0.1:$UP/v1" "http://[::1]:$UP/v1" "http://localhost:$UP/v1" \
    "http://169.254.169.254/latest/meta-data" "http://2130706433:$UP/v1" "http://0x7f.1:$UP/v1" \
    "http://0.0.0.0:$UP/v1" "http://[::ffff:127.0.0.1]:$UP/v1" "http://[fe80::1]/v1" \
    "http://127.0.0.1:$SELF_PORT/api/v1"; do
    api POST /api/v1/tenants/alpha/models/m/endpoints "{\"url\":\"$u\"}"
    assert_status 400
    assert_match "$(cat "$BODY_FILE")" "may not point|own address" "refusal of $u"
done
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM endpoints")" 0 "no endpoint was stored"
# a private address of a real model server is fine
api POST /api/v1/tenants/alpha/models/m/endpoints '{"url":"http://10.255.255.1:8000/v1"}'
assert_status 201
EP_PRIV=$(jq -r .id "$BODY_FILE")
# endpoints are bounded per model
for i in $(seq 2 16); do
    api POST /api/v1/tenants/alpha/models/m/endpoints "{\"url\":\"http://10.255.255.$i:8000/v1\"}"
    assert_status 201
done
api POST /api/v1/tenants/alpha/models/m/endpoints '{"url":"http://10.255.255.17:8000/v1"}'
assert_status 409
db_sql "$DATA" "DELETE FROM endpoints WHERE id <> '$EP_PRIV'" >/dev/null

api DELETE "/api/v1/tenants/alpha/models/m/endpoints/$EP_PRIV"
assert_status 200

note "finding 7: a host name that resolves to loopback is refused when connecting"
HN=$(hostname 2>/dev/null || true)
if [ -n "$HN" ] && getent hosts "$HN" | awk '{print $1}' | grep -q '^127\.'; then
    api POST /api/v1/tenants/alpha/models/m/endpoints "{\"url\":\"http://$HN:$UP/v1\"}"
    assert_status 201 # a name: checked after resolution, on each connection
    EP_NAME=$(jq -r .id "$BODY_FILE")
    chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"via a name"}],"max_tokens":5}'
    assert_status 502
    assert_eq "$(uplog_posts)" 0 "the upstream behind the name got nothing"
    assert_file_contains "$SERVER_LOG" "may not point"
    api DELETE "/api/v1/tenants/alpha/models/m/endpoints/$EP_NAME"
    assert_status 200
else
    note "skipped: host name '$HN' does not resolve to 127.x here"
fi

note "finding 8: a public model's endpoints are the platform's to change"
api POST /api/v1/tenants/alpha/models '{"name":"pub","visibility":"public"}'
assert_status 201
api POST /api/v1/tenants/alpha/models/pub/endpoints '{"url":"http://10.255.255.1:8000/v1"}'
assert_status 201
EP_PUB=$(jq -r .id "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $TADMIN" api POST /api/v1/tenants/alpha/models/pub/endpoints \
    '{"url":"http://10.255.255.66:8000/v1"}'
assert_status 403
AUTH_HEADER="Authorization: Bearer $TADMIN" api DELETE "/api/v1/tenants/alpha/models/pub/endpoints/$EP_PUB"
assert_status 403
api GET /api/v1/tenants/alpha/models/pub
assert_json '[.endpoints[].id] | join(",")' "$EP_PUB"
# its own private model: the tenant-admin's to change
AUTH_HEADER="Authorization: Bearer $TADMIN" api POST /api/v1/tenants/alpha/models/m/endpoints \
    '{"url":"http://10.255.255.66:8000/v1"}'
assert_status 201
EP_T=$(jq -r .id "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $TADMIN" api DELETE "/api/v1/tenants/alpha/models/m/endpoints/$EP_T"
assert_status 200
api DELETE "/api/v1/tenants/alpha/models/pub/endpoints/$EP_PUB"
assert_status 200
assert_eq "$(ledger_negative)" 0 "no ledger below zero"
stop_server

# ================================================================ loopback allowed by ops
note "with --endpoint-allow for the fake upstream on loopback"
start_server --health-interval 1 --endpoint-allow 127.0.0.0/8
api POST /api/v1/tenants/alpha/models/m/endpoints "{\"url\":\"http://127.0.0.1:$UP/v1\"}"
assert_status 201
# still never the control plane's own address
SELF_PORT=${URL##*:}
api POST /api/v1/tenants/alpha/models/m/endpoints "{\"url\":\"http://127.0.0.1:$SELF_PORT/api/v1\"}"
assert_status 400
assert_contains "$(cat "$BODY_FILE")" "own address"
api POST /api/v1/rate-cards '{"effective_from":"2020-01-01T00:00:00Z","currency":"EUR","tokens":[{"model":"*","input":1000,"output":2000}]}'
assert_status 201

note "finding 7: health-check errors are generic for tenants, detailed for ops"
api POST /api/v1/tenants/alpha/models '{"name":"dead"}'
assert_status 201
api POST /api/v1/tenants/alpha/models/dead/endpoints '{"url":"http://127.0.0.1:1/v1"}'
assert_status 201
ok=0
for _ in $(seq 80); do
    api GET /api/v1/tenants/alpha/models/dead
    [ "$(jq -r '.endpoints[0].state' "$BODY_FILE")" == unhealthy ] && { ok=1; break; }
    sleep 0.1
done
assert_eq "$ok" 1 "the unreachable endpoint is unhealthy"
assert_json '.endpoints[0].last_error' unreachable
assert_ne "$(jq -r '.endpoints[0].last_error_detail' "$BODY_FILE")" null "ops see the detail"
AUTH_HEADER="Authorization: Bearer $TADMIN" api GET /api/v1/tenants/alpha/models/dead
assert_status 200
assert_json '.endpoints[0].last_error' unreachable
assert_json '.endpoints[0] | has("last_error_detail")' false

note "finding 4: an upstream's negative usage is clipped, never negative anywhere"
curl -s -X DELETE "http://127.0.0.1:$UP/_log" >/dev/null
chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"hello [[usage-negative]]"}],"max_tokens":5}'
assert_status 200
assert_eq "$(uplog_posts)" 1 "the upstream answered"
chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"streamed [[usage-negative]]"}],"max_tokens":5,"stream":true}'
assert_status 200
ok=0
for _ in $(seq 50); do
    api GET /api/v1/tenants/alpha/projects/p/usage-records
    [ "$(jq '[.items[] | select(.status == 200)] | length' "$BODY_FILE")" -ge 2 ] && { ok=1; break; }
    sleep 0.1
done
assert_eq "$ok" 1 "both usage records written"
assert_json '[.items[] | select(.prompt_tokens < 0 or .completion_tokens < 0 or .total_tokens < 0)] | length' 0
assert_json '[.items[] | select(.status == 200 and .clipped)] | length' 2
assert_json '[.items[] | select(.prompt_tokens > 100)] | length' 0

note "finding 4: absurd positive usage is cut to what the request could have used"
chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"huge [[usage-huge]]"}],"max_tokens":5}'
assert_status 200
ok=0
for _ in $(seq 50); do
    api GET /api/v1/tenants/alpha/projects/p/usage-records
    [ "$(jq '[.items[] | select(.status == 200)] | length' "$BODY_FILE")" -ge 3 ] && { ok=1; break; }
    sleep 0.1
done
assert_eq "$ok" 1 "the record is written"
assert_json '.items[0].clipped' true
assert_eq "$(jq '.items[0].total_tokens < 2000' "$BODY_FILE")" true "at most request + answer size"
USED=$(db_sql "$DATA" "SELECT MAX(used) FROM token_ledger WHERE scope = 'key'")
assert_eq "$([ "$USED" -ge 0 ] && [ "$USED" -lt 5000 ] && echo ok)" ok "key ledger in range ($USED)"
assert_eq "$(ledger_negative)" 0 "no ledger below zero"
api GET /metrics
assert_status 200
assert_file_lacks "$BODY_FILE" "gpupool_tokens_month{tenant=\"alpha\",direction=\"input\"} -"
assert_match "$(grep '^gpupool_gateway_usage_clipped_total' "$BODY_FILE")" ' [3-9]$' "clipped counted"
assert_match "$(grep '^gpupool_usage_clipped_month{tenant="alpha"}' "$BODY_FILE")" ' 3$' "clipped this month"
assert_eq "$(grep -c '^gpupool_tokens_month.* -' "$BODY_FILE")" 0 "no negative token gauge"
api GET "/api/v1/usage?month=$(date -u +%Y-%m)&group_by=tenant"
assert_status 200
assert_eq "$(jq '[.rows[] | select(.prompt_tokens < 0 or .completion_tokens < 0 or .token_cost < 0 or .cost < 0)] | length' "$BODY_FILE")" 0 "no negative usage or cost"
assert_eq "$(jq '.totals.cost >= 0 and .totals.prompt_tokens >= 0' "$BODY_FILE")" true "totals"

note "finding 4: a public model's upstream cannot run up another tenant's usage"
api POST /api/v1/tenants/alpha/models/pub/endpoints "{\"url\":\"http://127.0.0.1:$UP/v1\",\"upstream_model\":\"m\"}"
assert_status 201
api POST /api/v1/tenants/beta/projects '{"name":"q"}'
assert_status 201
gp member grant admin tenant-admin --tenant beta
assert_rc 0
api POST /api/v1/tenants/beta/projects/q/keys '{"name":"bk","tokens_month":100000}'
assert_status 201
BKEY=$(jq -r .key "$BODY_FILE")
chat "$BKEY" '{"model":"pub","messages":[{"role":"user","content":"bill beta [[usage-huge]]"}],"max_tokens":5}'
assert_status 200
ok=0
for _ in $(seq 50); do
    api GET /api/v1/tenants/beta/usage-records
    [ "$(jq '[.items[] | select(.status == 200)] | length' "$BODY_FILE")" -ge 1 ] && { ok=1; break; }
    sleep 0.1
done
assert_eq "$ok" 1 "beta's record is written"
assert_json '.items[0].model_tenant' alpha
assert_json '.items[0].clipped' true
assert_eq "$(jq '.items[0].total_tokens < 2000' "$BODY_FILE")" true "beta pays at most what it asked and got"
BUSED=$(db_sql "$DATA" "SELECT l.used FROM token_ledger l JOIN tenants t ON t.id = l.id WHERE l.scope = 'tenant' AND t.name = 'beta'")
assert_eq "$([ "${BUSED:-0}" -ge 0 ] && [ "${BUSED:-0}" -lt 2000 ] && echo ok)" ok "beta's ledger in range (${BUSED:-0})"
# the answer's size is the upstream's to choose: padding (whitespace, SSE comments) is no
# generated text, so it raises no bound, whole or streamed
chat "$BKEY" '{"model":"pub","messages":[{"role":"user","content":"pad [[usage-huge]] [[pad-300000]]"}],"max_tokens":5}'
assert_status 200
chat "$BKEY" '{"model":"pub","messages":[{"role":"user","content":"pad [[usage-huge]] [[pad-300000]]"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}'
assert_status 200
ok=0
for _ in $(seq 50); do
    api GET /api/v1/tenants/beta/usage-records
    [ "$(jq '[.items[] | select(.status == 200)] | length' "$BODY_FILE")" -ge 3 ] && { ok=1; break; }
    sleep 0.1
done
assert_eq "$ok" 1 "the padded answers' records are written"
assert_json '[.items[0:2][] | select(.clipped)] | length' 2
assert_eq "$(jq '[.items[0:2][] | .completion_tokens] | max < 2000' "$BODY_FILE")" true \
    "padding does not count as tokens ($(jq -c '[.items[0:2][] | .completion_tokens]' "$BODY_FILE"))"
BUSED=$(db_sql "$DATA" "SELECT l.used FROM token_ledger l JOIN tenants t ON t.id = l.id WHERE l.scope = 'tenant' AND t.name = 'beta'")
assert_eq "$([ "${BUSED:-0}" -ge 0 ] && [ "${BUSED:-0}" -lt 6000 ] && echo ok)" ok "beta's ledger after padded answers (${BUSED:-0})"

note "finding 7: a redirect from an upstream is neither followed nor relayed"
curl -s -X DELETE "http://127.0.0.1:$UP/_log" >/dev/null
chat "$KEY" '{"model":"m","messages":[{"role":"user","content":"go [[redirect]]"}],"max_tokens":5}'
assert_status 502
assert_json '.error.code' upstream_redirect
assert_file_lacks "$BODY_FILE" "redirect-body-must-not-leak"
assert_eq "$(header Location)" "" "no Location relayed"
assert_eq "$(uplog_posts)" 1 "one request upstream, no second hop"

note "refusals of a known key are audited (bounded) and counted"
mkkey NARROW '{"name":"narrow","models":["m"]}'
for _ in 1 2 3 4 5; do
    chat "$NARROW" '{"model":"pub","messages":[],"max_tokens":5}'
    assert_status 404
done
mkkey TINY '{"name":"tiny","tokens_month":10}'
for _ in 1 2 3; do
    # (a prompt of ~15 tokens: a max_tokens above what is left is only cut, docs/gateway.md)
    chat "$TINY" '{"model":"m","messages":[{"role":"user","content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],"max_tokens":100}'
    assert_status 429
    assert_json '.error.code' insufficient_quota
done
api GET "/api/v1/audit?action=gateway.chat&result=denied&limit=100"
assert_status 200
assert_eq "$(jq '[.items[] | select((.summary | tostring) | contains("model_not_allowed"))] | length' "$BODY_FILE")" 1 "one audit event for 5 model refusals"
assert_eq "$(jq '[.items[] | select((.summary | tostring) | contains("\"quota\""))] | length' "$BODY_FILE")" 1 "one audit event for 3 quota refusals"
assert_eq "$(jq -r '[.items[] | select((.summary | tostring) | contains("model_not_allowed"))][0].tenant' "$BODY_FILE")" alpha "the event names the key's tenant"
api GET /metrics
assert_match "$(grep '^gpupool_gateway_refusals_total{reason="model_not_allowed"}' "$BODY_FILE")" ' 5$' "every model refusal counted"
assert_match "$(grep '^gpupool_gateway_refusals_total{reason="quota"}' "$BODY_FILE")" ' 3$' "every quota refusal counted"
assert_match "$(grep '^gpupool_gateway_refusals_audited_total{reason="quota"}' "$BODY_FILE")" ' 1$' "one audited"

note "finding 3: tools and response schemas are prompt too: reserved, so a quota holds"
# ~40 KB of tool declarations (~10,000 tokens an upstream bills as prompt) against a key of
# 2,000 tokens a month: refused up front, not let through on the messages' two letters
mkkey TKEY '{"name":"tk","tokens_month":2000}'
TOOLS=$(jq -cn '[range(40) | {type:"function",function:{name:"f\(.)",description:("d" * 1000),parameters:{type:"object"}}}]')
chat "$TKEY" "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":5,\"tools\":$TOOLS}"
assert_status 429
assert_json '.error.code' insufficient_quota
chat "$TKEY" "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":5,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"s\",\"schema\":{\"description\":\"$(printf 'x%.0s' $(seq 9000))\"}}}}"
assert_status 429
# the same request without them fits the quota
chat "$TKEY" '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}'
assert_status 200

stop_server
done_testing
