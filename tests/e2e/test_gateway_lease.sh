#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_gateway_lease.sh - issue 22, item 1: no store write on the gateway's
# request path.  A server (A) and a lone `gpupool gateway` (B) on one store,
# the official `openai` npm client (tests/gateway/client.mjs) and a fake
# upstream (tests/gateway/upstream.mjs).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_gateway_lease.sh
#
# Checked:
#   (a) after warm-up, 300 requests of a key with a monthly quota through B
#       begin at most 3 store write transactions there (/metrics:
#       gpupool_store_write_tx_total; B writes usage every 60 s or 256
#       records here, GPUPOOL_GATEWAY_FLUSH_MS), so at most 1 in 100;
#   (b) a small monthly quota (300 tokens) under 60 concurrent clients on
#       each of A, B and a second gateway C at once (three processes on one
#       store; on PostgreSQL their lease growths and usage batches take row
#       locks, not one write lock: issue 39) is never passed (each request
#       reserves 7 tokens and uses 4: the documented bound adds nothing), the refusal
#       is the usual 429 insufficient_quota; once B stops (its lease given
#       back) A serves what is left, to within one reservation;
#   (c) a key revoked through A is refused by B within a few seconds (polled;
#       B's cache follows the store's epoch), and by A at once;
#   (d) usage records carry the upstream's own token counts (not estimates),
#       one per request, on both processes, none lost at stop.
. "$(dirname "$0")/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

# ---------------------------------------------------------------- helpers

jout() { jq -r "$1" "$OUT_FILE"; }

# call BASE KEY SCENARIO [JSON]: the official client -> OUT_FILE
call() {
    E2E_LAST_CMD="client.mjs $3 ${4:-}"
    timeout 120 node "$GW/client.mjs" "$1" "$2" "$3" "${4:-}" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
    [ "$RC" == 0 ] || { _show stderr "$ERR_FILE"; fail "client.mjs $3 exited $RC"; }
}

newkey() {
    local name=$1
    shift
    gp -o json key create "$name" --tenant red --project train "$@"
    assert_rc 0
    KEY=$(jout .key)
    KEY_ID=$(jout .id)
}

# write_tx URL: the process's store write transactions so far
write_tx() { curl -sf "$1/metrics" | awk '$1 == "gpupool_store_write_tx_total" {print $2}'; }

# ledger KEY_ID COLUMN: this month's figure of a key
ledger() {
    db_sql "$DATA" "SELECT COALESCE(SUM($2), 0) FROM token_ledger WHERE scope = 'key' AND id = '$1'"
}

# ---------------------------------------------------------------- setup
start_server --health-interval 3600 --endpoint-allow 127.0.0.0/8
A=$URL
node "$GW/upstream.mjs" --port 0 --name up1 --model llama --no-log >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
up_port() { UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out"); [ -n "$UP" ]; }
poll 20 up_port || fail "the upstream did not start: $(cat "$E2E_TMP/up.out")"
gp tenant create red
assert_rc 0
gp member grant admin tenant-admin --tenant red
assert_rc 0
gp project create train --tenant red
assert_rc 0
gp model create llama --tenant red
assert_rc 0
gp endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP/v1"
assert_rc 0

# B: a lone gateway on the same store, writing usage in batches of 256 (or every 60 s)
GPUPOOL_GATEWAY_FLUSH_MS=60000 "$GPUPOOL_BIN" gateway --data "$DATA" $(store_flag "$DATA") \
    --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 --health-interval 3600 \
    >"$E2E_TMP/gw.out" 2>"$E2E_TMP/gw.err" </dev/null &
GWPID=$!
E2E_PIDS+=("$GWPID")
gw_up() { [ -s "$DATA/gateway.url" ] && curl -sf "$(cat "$DATA/gateway.url")/healthz" >/dev/null; }
poll 30 gw_up || { _show stderr "$E2E_TMP/gw.err"; fail "the gateway did not start"; }
_pass
B=$(cat "$DATA/gateway.url")
# C: a second lone gateway on the same store (its own folder for its URL file)
STORE_C=$(store_url "$DATA")
[ -n "$STORE_C" ] || STORE_C=sqlite:$DATA/gpupool.db
"$GPUPOOL_BIN" gateway --data "$E2E_TMP/c" --store "$STORE_C" \
    --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 --health-interval 3600 \
    >"$E2E_TMP/gwc.out" 2>"$E2E_TMP/gwc.err" </dev/null &
GWC=$!
E2E_PIDS+=("$GWC")
gwc_up() { [ -s "$E2E_TMP/c/gateway.url" ] && curl -sf "$(cat "$E2E_TMP/c/gateway.url")/healthz" >/dev/null; }
poll 30 gwc_up || { _show stderr "$E2E_TMP/gwc.err"; fail "the second gateway did not start"; }
C=$(cat "$E2E_TMP/c/gateway.url")
CHAT='{"model":"llama","content":"hi there","max_tokens":5}'
chat_n() { echo "{\"model\":\"llama\",\"content\":\"hi there\",\"max_tokens\":5,\"n\":$1}"; }

# ---------------------------------------------------------------- (a)
note "(a) write transactions per request, after warm-up"
newkey kbig --tokens-month 100000000
KBIG=$KEY
KBIG_ID=$KEY_ID
call "$B/v1" "$KBIG" concurrent "$(chat_n 20)"
assert_eq "$(jout '.outcomes.ok // 0')" 20 "warm-up: 20 answered ($(jout .outcomes))"
W0=$(write_tx "$B")
assert_match "$W0" '^[0-9]+$' "B counts its write transactions"
for i in 1 2 3; do
    call "$B/v1" "$KBIG" concurrent "$(chat_n 100)"
    assert_eq "$(jout '.outcomes.ok // 0')" 100 "burst $i: 100 answered ($(jout .outcomes))"
done
W1=$(write_tx "$B")
note "300 requests through B began $((W1 - W0)) write transactions there"
[ $((W1 - W0)) -le 3 ] || fail "300 requests began $((W1 - W0)) write transactions (at most 3)"
_pass
# and A, which writes every 200 ms as usual: still far fewer than one per request
WA0=$(write_tx "$A")
call "$A/v1" "$KBIG" concurrent "$(chat_n 100)"
assert_eq "$(jout '.outcomes.ok // 0')" 100 "100 answered by A"
WA1=$(write_tx "$A")
[ $((WA1 - WA0)) -lt 100 ] || fail "100 requests on A began $((WA1 - WA0)) write transactions"
_pass

# ---------------------------------------------------------------- (c)
note "(c) a key revoked on A is refused by B within seconds, and by A at once"
newkey krev
KREV=$KEY
KREV_ID=$KEY_ID
call "$B/v1" "$KREV" chat "$CHAT"
assert_eq "$(jout .ok)" true "B serves the key (and caches it)"
call "$A/v1" "$KREV" chat "$CHAT"
assert_eq "$(jout .ok)" true "A serves the key (and caches it)"
gp key revoke "$KREV_ID" --tenant red --project train
assert_rc 0
call "$A/v1" "$KREV" chat "$CHAT"
assert_eq "$(jout '[.ok, .status, .code] | map(tostring) | join(" ")')" "false 401 invalid_api_key" \
    "A refuses the key it revoked at once ($(jout .message))"
assert_contains "$(jout .message)" "revoked" "the reason"
b_refuses() {
    URL=$B AUTH_HEADER="Authorization: Bearer $KREV" api POST /v1/chat/completions \
        '{"model":"llama","messages":[{"role":"user","content":"x"}],"max_tokens":1}'
    [ "$STATUS" == 401 ]
}
poll 15 b_refuses || fail "B still serves a key revoked on A (HTTP $STATUS)"
_pass
assert_contains "$(cat "$BODY_FILE")" "revoked" "B says why"

# ---------------------------------------------------------------- (b)
note "(b) a small quota under concurrency on A, B and C at once"
newkey ksmall --tokens-month 300
KS=$KEY
KS_ID=$KEY_ID
# each request reserves ceil(8/4) + 5 = 7 tokens and uses 4 (prompt 2, reply 2 words)
timeout 120 node "$GW/client.mjs" "$B/v1" "$KS" concurrent "$(chat_n 60)" >"$E2E_TMP/cb.json" 2>&1 &
CB=$!
timeout 120 node "$GW/client.mjs" "$C/v1" "$KS" concurrent "$(chat_n 60)" >"$E2E_TMP/cc.json" 2>&1 &
CC=$!
call "$A/v1" "$KS" concurrent "$(chat_n 60)"
cp "$OUT_FILE" "$E2E_TMP/ca.json"
wait "$CB"
assert_eq "$?" 0 "the client on B ran"
wait "$CC"
assert_eq "$?" 0 "the client on C ran"
for f in ca cb cc; do
    assert_eq "$(jq '.outcomes | keys | map(select(. != "ok" and . != "429")) | length' "$E2E_TMP/$f.json")" 0 \
        "$f: only successes and 429s ($(jq -c .outcomes "$E2E_TMP/$f.json"))"
done
TA=$(jq .total_tokens "$E2E_TMP/ca.json")
# B's figures include C's from here on (both gateways stop before the end)
TB=$(( $(jq .total_tokens "$E2E_TMP/cb.json") + $(jq .total_tokens "$E2E_TMP/cc.json") ))
OKA=$(jq '.outcomes.ok // 0' "$E2E_TMP/ca.json")
OKB=$(( $(jq '.outcomes.ok // 0' "$E2E_TMP/cb.json") + $(jq '.outcomes.ok // 0' "$E2E_TMP/cc.json") ))
R429=$(( $(jq '.outcomes["429"] // 0' "$E2E_TMP/ca.json") + $(jq '.outcomes["429"] // 0' "$E2E_TMP/cb.json") + $(jq '.outcomes["429"] // 0' "$E2E_TMP/cc.json") ))
note "A served $OKA ($TA tokens), B and C $OKB ($TB tokens), $R429 refused"
[ "$R429" -ge 1 ] || fail "180 x 4 tokens fit a quota of 300"
_pass
[ $((TA + TB)) -le 300 ] || fail "the quota was overspent: $((TA + TB)) tokens"
_pass
# never more taken than the quota, whatever is still leased or unwritten
assert_eq "$([ $(( $(ledger "$KS_ID" used) + $(ledger "$KS_ID" reserved) )) -le 300 ] && echo ok)" ok \
    "used + reserved within the quota in the store"
# the refusal, as ever
call "$A/v1" "$KS" chat "$CHAT"
for ((i = 0; i < 80; i++)); do
    [ "$(jout .ok)" == true ] || break
    TA=$((TA + $(jout .usage.total_tokens)))
    OKA=$((OKA + 1))
    call "$A/v1" "$KS" chat "$CHAT"
done
assert_eq "$(jout '[.status, .code, .type, .class] | map(tostring) | join(" ")')" \
    "429 insufficient_quota insufficient_quota RateLimitError" "the quota refuses ($(jout .message))"
assert_contains "$(jout .message)" "You exceeded this key's monthly token quota of " "which quota"
assert_contains "$(jout .message)" "quota of 300 tokens: " "its size"
AUTH_HEADER="Authorization: Bearer $KS" api POST /v1/chat/completions \
    '{"model":"llama","messages":[{"role":"user","content":"hi there"}],"max_tokens":5}'
assert_status 429
assert_eq "$(jq -c '.error | [.type, .code, .param]' "$BODY_FILE")" '["insufficient_quota","insufficient_quota",null]' \
    "the 429's JSON"
assert_header retry-after 3600

# ---------------------------------------------------------------- (d), and B's leases back
note "(d) B and C stop: their records written, their leases given back"
for p in "$GWPID" "$GWC"; do
    kill -TERM "$p"
    _wait_exit "$p" 30 || fail "a gateway did not stop"
    assert_eq "$_EXIT" 0 "the gateway exits 0"
done
assert_file_lacks "$E2E_TMP/gw.err" "ERROR: AddressSanitizer"
assert_file_lacks "$E2E_TMP/gwc.err" "ERROR: AddressSanitizer"
# what B held is A's now: it serves until within one reservation of the quota (A believes a
# refusal for a second before it asks the store again, so ask until then)
use_up() {
    call "$A/v1" "$KS" chat "$CHAT"
    for ((i = 0; i < 80; i++)); do
        [ "$(jout .ok)" == true ] || break
        TA=$((TA + $(jout .usage.total_tokens)))
        OKA=$((OKA + 1))
        call "$A/v1" "$KS" chat "$CHAT"
    done
    [ "$(jout .code)" == insufficient_quota ] || fail "not a quota refusal: $(cat "$OUT_FILE")"
    [ $((TA + TB)) -gt $((300 - 7)) ]
}
poll 20 use_up || fail "A was refused with $((300 - TA - TB)) tokens left after B gave its lease back"
_pass
TOTAL=$((TA + TB))
note "used $TOTAL of 300"
[ "$TOTAL" -le 300 ] && [ "$TOTAL" -gt $((300 - 7)) ] ||
    fail "used $TOTAL of 300: should be within one reservation (7) of the quota"
_pass
stop_server
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM token_holds WHERE amount > 0")" 0 "every lease given back at stop"
assert_eq "$(ledger "$KS_ID" reserved)" 0 "nothing reserved"
assert_eq "$(ledger "$KS_ID" used)" "$TOTAL" "the ledger holds what the clients were told"
# every record: the upstream's own counts (2 + 2; an estimate would say 4 for the reply; a
# request near the end of the quota is sent the max_tokens left, 1: a reply of 1 word)
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM usage_records WHERE key_id = '$KS_ID' AND status = 200")" \
    $((OKA + OKB)) "one record per answered request"
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM usage_records WHERE key_id = '$KS_ID' AND status = 200 AND (estimated <> 0 OR prompt_tokens <> 2 OR completion_tokens NOT IN (1, 2))")" \
    0 "records carry the upstream's counts"
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM usage_records WHERE key_id = '$KBIG_ID' AND status = 200 AND estimated = 0 AND prompt_tokens = 2 AND completion_tokens = 2")" \
    420 "the 420 requests of (a), on both processes, all recorded"
assert_eq "$(ledger "$KBIG_ID" used)" $((420 * 4)) "and counted"

done_testing
