#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_gateway.sh - the OpenAI-compatible gateway (/v1), end to end, driven by
# the official `openai` npm client (tests/gateway/client.mjs) against small
# upstream model servers (tests/gateway/upstream.mjs) this script starts.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_gateway.sh
#
# Needs node and tests/gateway/node_modules (scripts/npm-deps.sh installs them).
#
# Checked: models listed per key (own tenant's private ones and public ones,
# never another tenant's; a key's allow-list); chat, streaming with and
# without usage (the extra usage chunk and the usage:null fields gone when the
# client did not ask), completions, embeddings as float and as base64, round
# robin over two endpoints and failover when one dies (the health check marks
# it unhealthy); every error class: 401 (no key, wrong key, expired, revoked),
# 404 model_not_found (unknown, another tenant's private model, not on the
# allow-list), 400 (no model, malformed JSON), the upstream's own 400 and 500
# passed through, 429 rate_limit_exceeded with retry-after, 429
# insufficient_quota, 503 when a model has no healthy endpoint, a stream the
# upstream cuts; usage records (tokens from the upstream, estimated when it
# gave none, accelerator, app, status; one per request); monthly quota under
# 30 concurrent requests (no overspend beyond the reservations); a model served
# by a job on a simulated node (healthy only while the job runs); `gpupool
# gateway` alone on the same store; and no usage record lost on a clean stop.
. "$(dirname "$0")/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

# ---------------------------------------------------------------- helpers

# upstream NAME [MODEL]...: start an upstream; sets UP_PORT and UP_PID
upstream() {
    local name=$1 out=$E2E_TMP/up.$1.out args=() i
    shift
    for m in "$@"; do args+=(--model "$m"); done
    node "$GW/upstream.mjs" --port 0 --name "$name" "${args[@]}" >"$out" 2>&1 &
    UP_PID=$!
    E2E_PIDS+=("$UP_PID")
    for ((i = 0; i < 100; i++)); do
        UP_PORT=$(awk '/^listening/{print $2}' "$out")
        [ -n "$UP_PORT" ] && return 0
        sleep 0.05
    done
    fail "upstream $name did not start: $(cat "$out")"
}

# call KEY SCENARIO [JSON]: the official client against the gateway -> OUT_FILE
BASE=""
call() {
    E2E_LAST_CMD="client.mjs $2 ${3:-}"
    timeout 60 node "$GW/client.mjs" "$BASE" "$1" "$2" "${3:-}" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
    [ "$RC" == 0 ] || { _show stderr "$ERR_FILE"; fail "client.mjs $2 exited $RC"; }
}
ok_call() {
    call "$@"
    assert_eq "$(jout .ok)" true "client.mjs $2 ok ($(head -c 300 "$OUT_FILE"))"
}
# err_call KEY SCENARIO JSON STATUS CODE: an OpenAI error of that status and code
err_call() {
    call "$1" "$2" "$3"
    assert_eq "$(jout '[.ok, .status, .code] | map(tostring) | join(" ")')" "false $4 $5" \
        "client.mjs $2 $3 -> $4 $5 ($(jout .message))"
}
upstream_log() { curl -s "http://127.0.0.1:$1/_log"; }

# records KEY_ID: usage records of red/train for that key (JSON array)
records() {
    gp -o json usage records --tenant red --project train --key "$1" --limit 500
    assert_rc 0
    jq -c '.items' "$OUT_FILE"
}

# ---------------------------------------------------------------- setup
start_server --health-interval 1
BASE=$URL/v1
ADMIN=$TOKEN
upstream up1 llama
UP1=$UP_PORT
UP1_PID=$UP_PID
upstream up2 llama
UP2=$UP_PORT
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp member grant admin tenant-admin --tenant $t
    assert_rc 0
done
gp project create train --tenant red
assert_rc 0
gp project create web --tenant blue
assert_rc 0
gp model create llama --tenant red
assert_rc 0
gp endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP1/v1" --accelerator H100-80GB
assert_rc 0
gp endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP2/v1/" --accelerator A100-80GB
assert_rc 0
gp model create secret-b --tenant blue
assert_rc 0
gp endpoint add --tenant blue --model secret-b --url "http://127.0.0.1:$UP1/v1" --upstream-model llama
assert_rc 0
gp model create pub --tenant red --visibility public
assert_rc 0
gp endpoint add --tenant red --model pub --url "http://127.0.0.1:$UP2/v1" --upstream-model llama \
    --accelerator A100-80GB
assert_rc 0
gp app create bot --tenant red --project train
assert_rc 0
# newkey NAME ARGS...: a key of red/train (or --tenant/--project given); KEY, KEY_ID
newkey() {
    local name=$1
    shift
    gp -o json key create "$name" "$@"
    assert_rc 0
    KEY=$(jout .key)
    KEY_ID=$(jout .id)
    assert_match "$KEY" '^sk-[A-Za-z0-9_-]{40,}$' "key $name"
}
newkey k1 --tenant red --project train --app bot
K1=$KEY
K1_ID=$KEY_ID
newkey kb --tenant blue --project web
KB=$KEY

# ---------------------------------------------------------------- models
note "models per key"
ok_call "$K1" models
assert_eq "$(jout '.ids | join(",")')" "llama,pub" "red's key sees its model and the public one"
ok_call "$KB" models
assert_eq "$(jout '.ids | join(",")')" "pub,secret-b" "blue's key: the public model and its own"

# ---------------------------------------------------------------- the calls
note "chat, streams, completions, embeddings"
curl -s -X DELETE "http://127.0.0.1:$UP1/_log" >/dev/null
curl -s -X DELETE "http://127.0.0.1:$UP2/_log" >/dev/null
ok_call "$K1" chat '{"model":"llama","content":"hello big world","max_tokens":2}'
assert_eq "$(jout .content)" "echo:hello big" "chat content"
assert_eq "$(jout .usage.total_tokens)" 6 "chat usage"
FIRST=$(jout .id)
ok_call "$K1" chat '{"model":"llama","content":"hello again"}'
SECOND=$(jout .id)
assert_eq "$(echo "$FIRST $SECOND" | grep -o 'up[12]' | sort | tr '\n' ' ')" "up1 up2 " \
    "round robin over the two endpoints ($FIRST, $SECOND)"
# the body went upstream as it came, without the client's credentials
upstream_log "$UP1" >"$E2E_TMP/log1.json"
upstream_log "$UP2" >"$E2E_TMP/log2.json"
jq -s 'add | map(select(.path == "/v1/chat/completions"))' "$E2E_TMP/log1.json" "$E2E_TMP/log2.json" >"$E2E_TMP/logs.json"
assert_eq "$(jq length "$E2E_TMP/logs.json")" 2 "two chats reached the upstreams"
assert_eq "$(jq -r 'map(.headers.authorization // "none") | join(",")' "$E2E_TMP/logs.json")" "none,none" \
    "no credentials upstream"
assert_eq "$(jq -r 'map(.body.max_tokens // "none") | sort | join(",")' "$E2E_TMP/logs.json")" "2,none" \
    "bodies passed on"
ok_call "$K1" chat-stream '{"model":"llama","content":"hello big world","include_usage":true}'
assert_eq "$(jout .content)" "echo:hello big world" "stream content"
assert_eq "$(jout .usage.total_tokens)" 7 "stream usage when asked"
assert_eq "$(jout .empty_choices_chunk)" true "the usage chunk when asked"
ok_call "$K1" chat-stream '{"model":"llama","content":"hello big world"}'
assert_eq "$(jout .content)" "echo:hello big world" "stream content without usage"
assert_eq "$(jout '[.usage, .empty_choices_chunk, .usage_null_chunks] | map(tostring) | join(" ")')" \
    "null false 0" "no usage chunk and no usage fields when not asked"
# ... though the gateway asked the upstream for it
upstream_log "$UP1" >"$E2E_TMP/l1"
upstream_log "$UP2" >"$E2E_TMP/l2"
assert_eq "$(jq -s -r 'add | map(select(.body.stream == true)) | map(.body.stream_options.include_usage) | all' "$E2E_TMP/l1" "$E2E_TMP/l2")" \
    true "include_usage asked upstream for every stream"
ok_call "$K1" completion '{"model":"llama","prompt":"a b c","max_tokens":2}'
assert_eq "$(jout .text)" "echo:a b" "completion"
ok_call "$K1" completion-stream '{"model":"llama","prompt":"a b c","include_usage":true}'
assert_eq "$(jout .usage.completion_tokens)" 3 "completion stream usage"
ok_call "$K1" embed-float '{"model":"llama","input":["hello","world"]}'
FLOAT=$(jout '.vectors | tostring')
assert_eq "$(jout '[.count, .length] | map(tostring) | join(" ")')" "2 8" "float embeddings"
ok_call "$K1" embed-base64 '{"model":"llama","input":["hello","world"]}'
assert_eq "$(jout '.vectors | tostring')" "$FLOAT" "base64 embeddings decode to the same vectors"
ok_call "$K1" chat '{"model":"pub","content":"public one"}'
assert_eq "$(jout .model)" "llama" "the public model's upstream name"
ok_call "$KB" chat '{"model":"pub","content":"from blue"}'

# ---------------------------------------------------------------- errors
note "error classes"
err_call sk-nope chat '{"model":"llama","content":"x"}' 401 invalid_api_key
assert_eq "$(jout .class)" AuthenticationError "401 class"
err_call "$K1" chat '{"model":"nope","content":"x"}' 404 model_not_found
assert_eq "$(jout .class)" NotFoundError "404 class"
err_call "$K1" chat '{"model":"secret-b","content":"x"}' 404 model_not_found
err_call "$KB" chat '{"model":"llama","content":"x"}' 404 model_not_found
err_call "$KB" chat-stream '{"model":"llama","content":"x"}' 404 model_not_found
err_call "$K1" chat '{"model":"llama","content":"x [[error-400]]"}' 400 bad_upstream
assert_eq "$(jout .class)" BadRequestError "the upstream's 400 passed on"
call "$K1" chat '{"model":"llama","content":"x [[error-500]]"}'
assert_eq "$(jout '[.ok, .status] | map(tostring) | join(" ")')" "false 500" "the upstream's 500"
call "$K1" chat-stream '{"model":"llama","content":"one [[cut]] two three","include_usage":true}'
assert_eq "$(jout '[.ok, .code] | map(tostring) | join(" ")')" "false upstream_error" \
    "a stream cut by the upstream is an error, not a quiet end"
api_raw POST /v1/chat/completions -H "Authorization: Bearer $K1" -H 'Content-Type: application/json' \
    --data-binary '{"messages":[]}'
assert_status 400
assert_eq "$(jq -r .error.code "$BODY_FILE")" missing_model "no model"
api_raw POST /v1/chat/completions -H "Authorization: Bearer $K1" --data-binary '{"model":'
assert_status 400
assert_eq "$(jq -r .error.type "$BODY_FILE")" invalid_request_error "malformed JSON"
api_raw GET /v1/models
assert_status 401
assert_eq "$(jq -r .error.code "$BODY_FILE")" invalid_api_key "no key"
# a key is no user token, and a user token is no key
api_raw GET /api/v1/tenants -H "Authorization: Bearer $K1"
assert_status 401
api_raw GET /v1/models -H "Authorization: Bearer $ADMIN"
assert_status 401

# ---------------------------------------------------------------- keys: allow-list, expiry, revocation
note "allow-list, expiry, revocation"
newkey kallow --tenant red --project train --models pub
KA=$KEY
ok_call "$KA" models
assert_eq "$(jout '.ids | join(",")')" pub "the allow-list limits the model list"
err_call "$KA" chat '{"model":"llama","content":"x"}' 404 model_not_found
newkey kexp --tenant red --project train --ttl 2
KE=$KEY
ok_call "$KE" chat '{"model":"llama","content":"before expiry"}'
newkey krev --tenant red --project train
KR=$KEY
KR_ID=$KEY_ID
ok_call "$KR" chat '{"model":"llama","content":"before revocation"}'
gp key revoke "$KR_ID" --tenant red --project train
assert_rc 0
err_call "$KR" chat '{"model":"llama","content":"after"}' 401 invalid_api_key
assert_contains "$(jout .message)" "revoked" "revoked key"
sleep 2.2
err_call "$KE" chat '{"model":"llama","content":"after expiry"}' 401 invalid_api_key
assert_contains "$(jout .message)" "expired" "expired key"

# ---------------------------------------------------------------- limits
note "requests per minute"
newkey krpm --tenant red --project train --rpm 3
KRPM=$KEY
for i in 1 2 3; do ok_call "$KRPM" chat "{\"model\":\"llama\",\"content\":\"n$i\"}"; done
err_call "$KRPM" chat '{"model":"llama","content":"n4"}' 429 rate_limit_exceeded
assert_eq "$(jout .class)" RateLimitError "429 class"
assert_match "$(jout '.headers["retry-after"]')" '^[1-9][0-9]*$' "retry-after"
ok_call "$K1" chat '{"model":"llama","content":"another key is not limited"}'

note "tokens per minute"
newkey ktpm --tenant red --project train --tpm 20
KTPM=$KEY
# each reserves 7 and uses 4: the window holds what was used, so the fifth would pass 20
N=0
for ((i = 0; i < 8; i++)); do
    call "$KTPM" chat '{"model":"llama","content":"hi there","max_tokens":5}'
    [ "$(jout .ok)" == true ] || break
    N=$((N + 1))
done
assert_eq "$N" 4 "requests within 20 tokens a minute"
assert_eq "$(jout '[.status, .code] | map(tostring) | join(" ")')" "429 rate_limit_exceeded" "the tpm refusal"
assert_contains "$(jout .message)" "tokens per minute of this key" "which limit"

note "monthly quota under 30 concurrent requests"
newkey kq --tenant red --project train --tokens-month 100
KQ=$KEY
KQ_ID=$KEY_ID
# each request reserves ceil(8/4) + 5 = 7 tokens and uses 4 (prompt 2, reply 2 words)
call "$KQ" concurrent '{"model":"llama","content":"hi there","max_tokens":5,"n":30}'
assert_eq "$(jout .ok)" true "concurrent run"
OKS=$(jout '.outcomes.ok // 0')
assert_eq "$(jout '.outcomes | keys | map(select(. != "ok" and . != "429")) | length')" 0 \
    "only successes and 429s ($(jout .outcomes))"
[ "$(jout '.outcomes["429"] // 0')" -ge 1 ] || fail "30 x 4 tokens fit a quota of 100: $(jout .outcomes)"
_pass
TOTAL=$(jout .total_tokens)
[ "$TOTAL" -le 100 ] || fail "the quota was overspent: $TOTAL tokens"
_pass
# use up what is left, one at a time, until the quota refuses
for ((i = 0; i < 30; i++)); do
    call "$KQ" chat '{"model":"llama","content":"hi there","max_tokens":5}'
    [ "$(jout .ok)" == true ] || break
    OKS=$((OKS + 1))
    TOTAL=$((TOTAL + $(jout .usage.total_tokens)))
done
assert_eq "$(jout '[.status, .code, .type] | map(tostring) | join(" ")')" "429 insufficient_quota insufficient_quota" \
    "the quota refuses ($(jout .message))"
[ "$TOTAL" -le 100 ] && [ "$TOTAL" -gt $((100 - 7)) ] ||
    fail "used $TOTAL of 100: should be within one reservation (7) of the quota"
_pass
sleep 0.5
R=$(records "$KQ_ID")
assert_eq "$(jq '[.[] | .total_tokens] | add' <<<"$R")" "$TOTAL" "records hold what the client was told"
assert_eq "$(jq 'length' <<<"$R")" "$OKS" "one record per forwarded request"

# ---------------------------------------------------------------- usage records
note "usage records"
sleep 0.5
R=$(records "$K1_ID")
assert_eq "$(jq '[.[] | select(.kind == "chat" and .stream == false and .status == 200 and .estimated == false)] | length >= 3' <<<"$R")" \
    true "chat records with the upstream's usage"
assert_eq "$(jq -r '[.[] | .accelerator] | unique | join(",")' <<<"$R")" "A100-80GB,H100-80GB" \
    "the accelerator of the endpoint that served"
assert_eq "$(jq -r '[.[] | .app] | unique | join(",")' <<<"$R")" bot "the key's application"
assert_eq "$(jq '[.[] | select(.kind == "embedding")] | length' <<<"$R")" 2 "embedding records"
assert_eq "$(jq '[.[] | select(.status == 400 or .status == 500)] | length' <<<"$R")" 2 \
    "failed upstream calls recorded too"
assert_eq "$(jq '[.[] | select(.status == 502 and .stream)] | length' <<<"$R")" 1 "the cut stream"
ok_call "$K1" chat-stream '{"model":"llama","content":"quiet [[no-usage]] one two"}'
sleep 0.5
R=$(records "$K1_ID")
assert_eq "$(jq -c '[.[] | select(.stream and .estimated)][0] | [.prompt_tokens > 0, .completion_tokens > 0]' <<<"$R")" \
    "[true,true]" "a stream without usage is estimated"
as "$ADMIN" -o json usage records --tenant blue
assert_rc 0
assert_file_lacks "$OUT_FILE" "$K1_ID"

# ---------------------------------------------------------------- failover
note "failover and health"
kill -TERM "$UP1_PID"
_wait_exit "$UP1_PID" 5
_forget_pid "$UP1_PID"
for i in 1 2 3; do
    ok_call "$K1" chat "{\"model\":\"llama\",\"content\":\"after up1 died $i\"}"
    assert_contains "$(jout .id)" up2 "served by the live endpoint"
done
ep_unhealthy() {
    gp -o json model show llama --tenant red
    [ "$(jout "[.endpoints[] | select(.url == \"http://127.0.0.1:$UP1/v1\")][0].state")" == unhealthy ]
}
poll 6 ep_unhealthy || fail "the dead endpoint was not marked unhealthy"
_pass
gp -o json model show secret-b --tenant blue
assert_eq "$(jout '.endpoints[0].state')" unhealthy "blue's endpoint on the dead upstream"
err_call "$KB" chat '{"model":"secret-b","content":"x"}' 503 no_healthy_endpoint

# ---------------------------------------------------------------- a model served by a job
note "a model served by a job"
gp member grant admin ops-engineer
gp -o json jointoken create --ttl 600
JT=$(jout .token)
cat >"$E2E_TMP/inv.json" <<'EOF'
{"nodes":[{"name":"gw-node","address":"127.0.0.1","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/agent" --interval 1 --grace 1 >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
node_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 10 node_ready || fail "the node did not register"
gp class create l4.1x --form whole --models L4 --cpus 1 --memory 1
assert_rc 0
JPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000)))
gp -o json job submit serve-jm --tenant red --project train --class l4.1x -- \
    "$(command -v node)" "$GW/upstream.mjs" --port "$JPORT" --name job1 --model jm
assert_rc 0
JOB=$(jout .id)
gp model create jm --tenant red
gp endpoint add --tenant red --model jm --job "$JOB" --port "$JPORT" --accelerator L4
assert_rc 0
newkey kjob --tenant red --project train
KJ=$KEY
job_serves() {
    call "$KJ" chat '{"model":"jm","content":"from the job"}'
    [ "$(jout .ok)" == true ]
}
poll 15 job_serves || fail "the job-backed model did not answer: $(head -c 300 "$OUT_FILE")"
_pass
assert_contains "$(jout .id)" job1 "served by the job's process"
gp job cancel "$JOB" --tenant red --project train
assert_rc 0
err_call "$KJ" chat '{"model":"jm","content":"after cancel"}' 503 no_healthy_endpoint
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10
_forget_pid "$AGENT_PID"
pkill -f -- "--name job1 --model jm" 2>/dev/null

# ---------------------------------------------------------------- the gateway alone
note "gpupool gateway alone, on the same store"
"$GPUPOOL_BIN" gateway --data "$DATA" $(store_flag "$DATA") --listen 127.0.0.1:0 >"$E2E_TMP/gw.out" 2>"$E2E_TMP/gw.err" </dev/null &
GWPID=$!
E2E_PIDS+=("$GWPID")
gw_up() { [ -s "$DATA/gateway.url" ] && curl -sf "$(cat "$DATA/gateway.url")/healthz" >/dev/null; }
poll 10 gw_up || { _show stderr "$E2E_TMP/gw.err"; fail "the gateway did not start"; }
_pass
GWURL=$(cat "$DATA/gateway.url")
SAVE=$BASE
BASE=$GWURL/v1
ok_call "$K1" chat '{"model":"llama","content":"through the lone gateway"}'
BASE=$SAVE
note "rate limits hold across the server and the gateway (shared windows, ~1 s behind)"
newkey kshared --tenant red --project train --rpm 3
KSH=$KEY
ok_call "$KSH" chat '{"model":"llama","content":"s1"}'
ok_call "$KSH" chat '{"model":"llama","content":"s2"}'
sleep 2.5
BASE=$GWURL/v1
ok_call "$KSH" chat '{"model":"llama","content":"g1"}'
err_call "$KSH" chat '{"model":"llama","content":"g2"}' 429 rate_limit_exceeded
assert_contains "$(jout .message)" "requests per minute of this key" "which limit (gateway)"
BASE=$SAVE
sleep 2.5
err_call "$KSH" chat '{"model":"llama","content":"s3"}' 429 rate_limit_exceeded
assert_contains "$(jout .message)" "requests per minute of this key" "which limit (server)"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN" "$GWURL/api/v1/tenants")" 404 \
    "the gateway serves no management API"
kill -TERM "$GWPID"
_wait_exit "$GWPID" 10 || fail "the gateway did not stop"
_forget_pid "$GWPID"
assert_eq "$_EXIT" 0 "the gateway's exit code"
R=$(records "$K1_ID")
assert_eq "$(jq '[.[] | select(.prompt_tokens > 0 and .status == 200)] | length > 0' <<<"$R")" true "records"
N_BEFORE=$(jq length <<<"$R")

# ---------------------------------------------------------------- nothing lost on a clean stop
note "clean stop keeps every record"
for i in 1 2 3 4 5; do ok_call "$K1" chat "{\"model\":\"llama\",\"content\":\"last $i\"}"; done
stop_server
start_server --health-interval 1
R=$(records "$K1_ID")
assert_eq "$(jq length <<<"$R")" $((N_BEFORE + 5)) "records after the restart"
stop_server
done_testing
