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
#
# Issue 22: the Responses API (client.responses.create, plain and streamed:
# response.* events passed through, usage from input/output_tokens, records of
# kind "response", hostile usage clipped, a cut stream is an error, quota and
# RAG), GET /v1/models/{id}; limits before work (a key over its rpm or quota
# makes no KB query: gpupool_gateway_retrievals_total); requests in flight
# per key (max_parallel, also across the server and a lone gateway); outlier
# ejection after three failures in a row (not one) and panic mode (every
# endpoint down: tried anyway).
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
start_server --health-interval 1 --endpoint-allow 127.0.0.0/8  # the fake upstreams are on loopback
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

# ---------------------------------------------------------------- the Responses API
note "the Responses API (client.responses.create), GET /v1/models/{id}"
newkey kresp --tenant red --project train
KRS=$KEY
KRS_ID=$KEY_ID
curl -s -X DELETE "http://127.0.0.1:$UP1/_log" >/dev/null
curl -s -X DELETE "http://127.0.0.1:$UP2/_log" >/dev/null
ok_call "$KRS" response '{"model":"llama","input":"hello big world","max_output_tokens":2}'
assert_eq "$(jout '[.output_text, .status] | join(" ")')" "echo:hello big incomplete" "response output"
# input ceil(15/4) = 4, output 2 words
assert_eq "$(jout '[.usage.input_tokens, .usage.output_tokens, .usage.total_tokens] | map(tostring) | join(" ")')" \
    "4 2 6" "response usage"
ok_call "$KRS" response '{"model":"llama","input":"hello big world","instructions":"be brief"}'
assert_eq "$(jout '[.output_text, .status, .usage.input_tokens] | map(tostring) | join(" ")')" \
    "echo:hello big world completed 6" "instructions count towards the input"
ok_call "$KRS" response-stream '{"model":"llama","input":"hello big world"}'
assert_eq "$(jout .text)" "echo:hello big world" "streamed response text"
assert_eq "$(jout '[.usage.input_tokens, .usage.output_tokens] | map(tostring) | join(" ")')" "4 3" \
    "streamed response usage (response.completed)"
assert_eq "$(jout '[.types[] | select(. == "response.created" or . == "response.output_text.delta" or . == "response.completed")] | length')" \
    3 "response.* events passed through ($(jout '.types | join(",")'))"
upstream_log "$UP1" >"$E2E_TMP/l1"
upstream_log "$UP2" >"$E2E_TMP/l2"
jq -s 'add | map(select(.path == "/v1/responses"))' "$E2E_TMP/l1" "$E2E_TMP/l2" >"$E2E_TMP/rl.json"
assert_eq "$(jq length "$E2E_TMP/rl.json")" 3 "three responses reached the upstreams"
assert_eq "$(jq -r 'map(.body.stream_options // "none" | tostring) | join(",")' "$E2E_TMP/rl.json")" \
    "none,none,none" "the body goes upstream as it came (usage is always in the response)"
assert_eq "$(jq -r 'map(.headers.authorization // "none") | join(",")' "$E2E_TMP/rl.json")" \
    "none,none,none" "no credentials upstream"
call "$KRS" response-stream '{"model":"llama","input":"one [[cut]] two three"}'
assert_eq "$(jout '[.ok, .code] | map(tostring) | join(" ")')" "false upstream_error" \
    "a response stream the upstream cuts ends with an error event"
err_call "$KRS" response '{"model":"llama","input":"x [[error-400]]"}' 400 bad_upstream
err_call "$KB" response '{"model":"llama","input":"x"}' 404 model_not_found
err_call sk-nope response '{"model":"llama","input":"x"}' 401 invalid_api_key
api_raw POST /v1/responses -H "Authorization: Bearer $KRS" -H 'Content-Type: application/json' \
    --data-binary '{"model":"llama","input":"x","max_output_tokens":0}'
assert_status 400
assert_eq "$(jq -r '[.error.code, .error.param] | join(" ")' "$BODY_FILE")" "invalid_value max_output_tokens" \
    "max_output_tokens out of range"
api_raw POST /v1/responses -H "Authorization: Bearer $KRS" -H 'Content-Type: application/json' \
    --data-binary '{"model":"llama","input":"x","stream":"yes"}'
assert_status 400
# a stored response lives on the upstream: through another tenant's public model, not referable
api_raw POST /v1/responses -H "Authorization: Bearer $KB" -H 'Content-Type: application/json' \
    --data-binary '{"model":"pub","input":"x","previous_response_id":"resp_up2_1"}'
assert_status 400
assert_eq "$(jq -r '[.error.code, .error.param] | join(" ")' "$BODY_FILE")" \
    "unsupported_parameter previous_response_id" "no previous_response_id through another tenant's model"
api_raw POST /v1/responses -H "Authorization: Bearer $KB" -H 'Content-Type: application/json' \
    --data-binary '{"model":"pub","input":"x","conversation":"conv_1"}'
assert_status 400
api_raw POST /v1/responses -H "Authorization: Bearer $KRS" -H 'Content-Type: application/json' \
    --data-binary '{"model":"pub","input":"x","previous_response_id":"resp_up2_1"}'
assert_status 200
api_raw POST /v1/responses -H "Authorization: Bearer $KB" -H 'Content-Type: application/json' \
    --data-binary '{"model":"pub","input":"from blue"}'
assert_status 200
# hostile usage is clipped as for chat
ok_call "$KRS" response '{"model":"llama","input":"huge [[usage-huge]]","max_output_tokens":5}'
ok_call "$KRS" response-stream '{"model":"llama","input":"negative [[usage-negative]]","max_output_tokens":5}'
ok_call "$KRS" model '{"model":"llama"}'
assert_eq "$(jout '[.id, .object, .owned_by] | join(" ")')" "llama model red" "one model"
ok_call "$KRS" model '{"model":"pub"}'
err_call "$KRS" model '{"model":"secret-b"}' 404 model_not_found
err_call "$KRS" model '{"model":"nope"}' 404 model_not_found
sleep 0.5
R=$(records "$KRS_ID")
assert_eq "$(jq '[.[] | select(.kind == "response")] | length' <<<"$R")" 8 "a record per forwarded response"
assert_eq "$(jq -c '[.[] | select(.kind == "response" and .status == 200 and .stream == false and .clipped == false)] | map([.prompt_tokens, .completion_tokens]) | sort' <<<"$R")" \
    "[[1,1],[4,2],[6,3]]" "records hold the response's usage"
assert_eq "$(jq -c '[.[] | select(.kind == "response" and .stream and .status == 200 and .clipped == false)] | map([.prompt_tokens, .completion_tokens])' <<<"$R")" \
    "[[4,3]]" "the streamed response's record"
assert_eq "$(jq '[.[] | select(.kind == "response" and .clipped)] | length' <<<"$R")" 2 "hostile usage clipped"
assert_eq "$(jq '[.[] | select(.kind == "response" and .clipped) | .prompt_tokens >= 0 and .prompt_tokens < 200 and .completion_tokens <= 100] | all' <<<"$R")" \
    true "clipped to what the response could have used"
assert_eq "$(jq '[.[] | select(.kind == "response" and .status == 502 and .stream)] | length' <<<"$R")" 1 "the cut response stream"

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
err_call "$KA" model '{"model":"llama"}' 404 model_not_found
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

note "limits before work: a refused request queries no knowledge base"
gp app create ragbot --tenant red --project train
assert_rc 0
printf 'The hydraulic pump pressure must stay between 150 and 180 bar.\n' >"$E2E_TMP/pump.txt"
gp kb create manual --tenant red
assert_rc 0
gp kb upload manual "$E2E_TMP/pump.txt" --tenant red
assert_rc 0
gp app bind ragbot --tenant red --project train --model llama --kbs manual --k 2
assert_rc 0
# retrievals: gpupool_gateway_retrievals_total (knowledge-base queries made for requests)
retrievals() {
    api GET /metrics
    awk '/^gpupool_gateway_retrievals_total /{print $2}' "$BODY_FILE"
}
newkey krag --tenant red --project train --app ragbot --rpm 2
KRAG=$KEY
B0=$(retrievals)
ok_call "$KRAG" chat-sources '{"model":"llama","content":"hydraulic pump pressure"}'
assert_eq "$(jout '.sources[0].document')" pump.txt "chat retrieval"
assert_eq "$(retrievals)" $((B0 + 1)) "one KB query for an admitted request"
curl -s -X DELETE "http://127.0.0.1:$UP1/_log" >/dev/null
curl -s -X DELETE "http://127.0.0.1:$UP2/_log" >/dev/null
ok_call "$KRAG" response '{"model":"llama","input":"hydraulic pump pressure","instructions":"Be short."}'
assert_eq "$(jout '.sources[0].document')" pump.txt "responses retrieval: sources on the response"
upstream_log "$UP1" >"$E2E_TMP/l1"
upstream_log "$UP2" >"$E2E_TMP/l2"
assert_eq "$(jq -s -r 'add | map(select(.path == "/v1/responses"))[0].body.instructions | (contains("[1] manual / pump.txt") and contains("150 and 180 bar") and endswith("Be short."))' "$E2E_TMP/l1" "$E2E_TMP/l2")" \
    true "the context goes ahead of the instructions"
assert_eq "$(retrievals)" $((B0 + 2)) "a KB query for the admitted response"
# over its rpm: refused before retrieval
err_call "$KRAG" chat '{"model":"llama","content":"hydraulic pump pressure"}' 429 rate_limit_exceeded
err_call "$KRAG" response '{"model":"llama","input":"hydraulic pump pressure"}' 429 rate_limit_exceeded
assert_eq "$(retrievals)" $((B0 + 2)) "no KB query for requests over the rate limit"
# over its monthly quota: refused before retrieval too
newkey kragq --tenant red --project train --app ragbot --tokens-month 50
KRAGQ=$KEY
err_call "$KRAGQ" chat '{"model":"llama","content":"hydraulic pump pressure"}' 429 insufficient_quota
assert_eq "$(retrievals)" $((B0 + 2)) "no KB query for requests over the quota"
newkey kragr --tenant red --project train --app ragbot
ok_call "$KEY" response-stream '{"model":"llama","input":"hydraulic pump pressure"}'
assert_eq "$(jout '[.first_sources[0].document, .events_with_sources] | map(tostring) | join(" ")')" "pump.txt 1" \
    "a streamed response carries the sources on its first event"
assert_eq "$(jout .text)" "echo:hydraulic pump pressure" "the streamed response after retrieval"

note "requests in flight per key (max_parallel)"
newkey kpar --tenant red --project train --max-parallel 2
KPAR=$KEY
gp -o json key show "$KEY_ID" --tenant red --project train
assert_eq "$(jout .max_parallel)" 2 "the key shows its max_parallel"
call "$KPAR" concurrent-responses '{"model":"llama","input":"wait [[slow-800]]","n":6}'
assert_eq "$(jout '[.outcomes.ok, .outcomes["429"]] | map(tostring) | join(" ")')" "2 4" \
    "two in flight at once, the rest refused ($(jout .outcomes))"
ok_call "$KPAR" chat '{"model":"llama","content":"after they ended"}'
call "$KPAR" concurrent '{"model":"llama","content":"wait [[slow-800]]","n":5}'
assert_eq "$(jout '[.outcomes.ok, .outcomes["429"]] | map(tostring) | join(" ")')" "2 3" \
    "chat too ($(jout .outcomes))"
gp key create kbad --tenant red --project train --max-parallel -1
assert_denied 400

note "the Responses API against a monthly quota"
newkey kqresp --tenant red --project train --tokens-month 10
KQR=$KEY
# reserves ceil(8/4) + 5 = 7, uses 2 + 2 = 4; then 4 + 7 > 10: the second is cut to the
# max_output_tokens left (10 - 4 - 2 = 4; docs/gateway.md, "Token budgets"), uses 4 too; then
# not even one token is left: refused
ok_call "$KQR" response '{"model":"llama","input":"hi there","max_output_tokens":5}'
assert_eq "$(jout .usage.total_tokens)" 4 "the first response fits"
ok_call "$KQR" response '{"model":"llama","input":"hi there","max_output_tokens":5}'
assert_eq "$(jout .usage.total_tokens)" 4 "the second is cut to what is left"
err_call "$KQR" response '{"model":"llama","input":"hi there","max_output_tokens":5}' 429 insufficient_quota
assert_eq "$(jout '[.type, .class] | join(" ")')" "insufficient_quota RateLimitError" "the quota refusal, as the SDK sees it"
newkey kqresp2 --tenant red --project train --tokens-month 60
call "$KEY" concurrent-responses '{"model":"llama","input":"hi there","max_output_tokens":5,"n":20}'
assert_eq "$(jout '.outcomes | keys | map(select(. != "ok" and . != "429")) | length')" 0 \
    "only successes and 429s ($(jout .outcomes) $(jout .errors))"
[ "$(jout .total_tokens)" -le 60 ] || fail "the quota was overspent by responses: $(jout .total_tokens)"
_pass
[ "$(jout '.outcomes["429"] // 0')" -ge 1 ] || fail "20 x 4 tokens fit a quota of 60: $(jout .outcomes)"
_pass

note "monthly quota under 30 concurrent requests"
newkey kq --tenant red --project train --tokens-month 100
KQ=$KEY
KQ_ID=$KEY_ID
# each request reserves ceil(8/4) + 5 = 7 tokens and uses 4 (prompt 2, reply 2 words)
call "$KQ" concurrent '{"model":"llama","content":"hi there","max_tokens":5,"n":30}'
assert_eq "$(jout .ok)" true "concurrent run"
OKS=$(jout '.outcomes.ok // 0')
assert_eq "$(jout '.outcomes | keys | map(select(. != "ok" and . != "429")) | length')" 0 \
    "only successes and 429s ($(jout .outcomes) $(jout .errors))"
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
# metric NAME: a gateway counter of the server's /metrics
metric() {
    api GET /metrics
    awk -v m="$1" '$1 == m {print $2}' "$BODY_FILE"
}
# panic mode: every endpoint of secret-b is unhealthy, so it is tried anyway (and is dead)
P0=$(metric gpupool_gateway_panic_total)
err_call "$KB" chat '{"model":"secret-b","content":"x"}' 502 upstream_unreachable
assert_eq "$(metric gpupool_gateway_panic_total)" $((P0 + 1)) "routed in panic mode"

note "outlier ejection after consecutive failures, panic mode"
upstream up3 llama
UP3=$UP_PORT
gp model create flaky --tenant red
assert_rc 0
# one endpoint answers every request with 503 (the switch rides on its upstream model name),
# the other one serves; both pass their health checks
gp endpoint add --tenant red --model flaky --url "http://127.0.0.1:$UP3/v1" --upstream-model "bad [[error-503]]"
assert_rc 0
gp endpoint add --tenant red --model flaky --url "http://127.0.0.1:$UP3/v1" --upstream-model llama
assert_rc 0
newkey kflaky --tenant red --project train
KFL=$KEY
E0=$(metric gpupool_gateway_ejections_total)
N503=0
NOK=0
for ((i = 0; i < 12; i++)); do
    call "$KFL" chat '{"model":"flaky","content":"x"}'
    [ "$(jout .ok)" == true ] && NOK=$((NOK + 1))
    [ "$(jout .status)" == 503 ] && N503=$((N503 + 1))
done
assert_eq "$N503 $NOK" "3 9" "three failures in a row eject the failing endpoint, not one"
assert_eq "$(metric gpupool_gateway_ejections_total)" $((E0 + 1)) "one ejection"
note "an endpoint's concurrency bound: a line, then 503 upstream_busy"
gp model create bounded --tenant red
assert_rc 0
gp endpoint add --tenant red --model bounded --url "http://127.0.0.1:$UP3/v1" --upstream-model llama \
    --max-concurrency 1 --max-queue 2
assert_rc 0
gp -o json endpoint list --tenant red --model bounded
assert_eq "$(jout '.items[0] | [.max_concurrency, .max_queue] | map(tostring) | join(" ")')" "1 2" \
    "the endpoint shows its bound and its line"
gp endpoint add --tenant red --model bounded --url "http://127.0.0.1:$UP3/v1" --max-queue 5
assert_denied 400
gp endpoint add --tenant red --model bounded --url "http://127.0.0.1:$UP3/v1" --max-concurrency -1
assert_denied 400
gp endpoint add --tenant red --model bounded --url "http://127.0.0.1:$UP3/v1" --max-concurrency x
assert_rc 2
newkey kbound --tenant red --project train
Q0=$(metric gpupool_gateway_endpoint_queued_total)
# five at once, each answered after 1.5 s: one in flight, two waiting in line, two refused
call "$KEY" concurrent '{"model":"bounded","content":"wait [[slow-1500]]","n":5}'
assert_eq "$(jout '[.outcomes.ok, .outcomes["503"]] | map(tostring) | join(" ")')" "3 2" \
    "one in flight, two served from the line, two refused ($(jout .outcomes))"
assert_eq "$(metric gpupool_gateway_endpoint_queued_total)" $((Q0 + 2)) "two waited in line"
ok_call "$KEY" chat '{"model":"bounded","content":"after the line drained"}'

# an endpoint whose checks fail (its health path answers 404) is unhealthy after three checks
# in a row; the model's only endpoint, so requests try it anyway and it serves
gp model create sick --tenant red
assert_rc 0
gp endpoint add --tenant red --model sick --url "http://127.0.0.1:$UP3/v1" --health-path /nope
assert_rc 0
newkey ksick --tenant red --project train
KSI=$KEY
ok_call "$KSI" chat '{"model":"sick","content":"before any check"}'
sick_unhealthy() {
    gp -o json model show sick --tenant red
    [ "$(jout '.endpoints[0].state')" == unhealthy ]
}
poll 8 sick_unhealthy || fail "the endpoint failing its checks was not marked unhealthy"
_pass
P0=$(metric gpupool_gateway_panic_total)
ok_call "$KSI" chat '{"model":"sick","content":"in panic mode"}'
assert_eq "$(jout .content)" "echo:in panic mode" "served in panic mode"
assert_eq "$(metric gpupool_gateway_panic_total)" $((P0 + 1)) "counted as panic routing"

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
note "a job that serves no model leaves the gateway's read cache alone (migration 17)"
E0=$(db_sql "$DATA" "SELECT n FROM gw_epoch WHERE id = 1")
gp -o json job submit plain --tenant red --project train --class l4.1x -- true
assert_rc 0
PLAIN=$(jout .id)
plain_done() {
    gp -o json job show "$PLAIN" --tenant red --project train
    [ "$(jout .state)" == succeeded ]
}
poll 20 plain_done || fail "the plain job did not succeed: $(head -c 300 "$OUT_FILE")"
_pass
assert_eq "$(db_sql "$DATA" "SELECT n FROM gw_epoch WHERE id = 1")" "$E0" \
    "no gateway cache invalidation for a job that serves no model"
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
E1=$(db_sql "$DATA" "SELECT n FROM gw_epoch WHERE id = 1")
gp job cancel "$JOB" --tenant red --project train
assert_rc 0
[ "$(db_sql "$DATA" "SELECT n FROM gw_epoch WHERE id = 1")" -gt "$E1" ] ||
    fail "the serving job's cancel did not invalidate the gateway's read cache"
_pass
err_call "$KJ" chat '{"model":"jm","content":"after cancel"}' 503 no_healthy_endpoint
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10
_forget_pid "$AGENT_PID"
pkill -f -- "--name job1 --model jm" 2>/dev/null

# ---------------------------------------------------------------- the gateway alone
note "gpupool gateway alone, on the same store"
"$GPUPOOL_BIN" gateway --data "$DATA" $(store_flag "$DATA") --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 >"$E2E_TMP/gw.out" 2>"$E2E_TMP/gw.err" </dev/null &
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
note "requests in flight hold across the server and the gateway (~1 s behind)"
newkey kpar1 --tenant red --project train --max-parallel 1
KP1=$KEY
timeout 60 node "$GW/client.mjs" "$BASE" "$KP1" response '{"model":"llama","input":"long [[slow-10000]]"}' \
    >"$E2E_TMP/slow.json" 2>&1 &
SLOW=$!
BASE=$GWURL/v1
# the gateway learns of the server's request in flight about a second after it started (and
# node takes a while to start on a busy machine): ask until it is refused, 8 s at most
for _ in $(seq 1 16); do
    sleep 0.5
    call "$KP1" response '{"model":"llama","input":"meanwhile"}'
    [ "$(jout .status)" != 429 ] || break
done
assert_eq "$(jout '[.ok, .status, .code] | map(tostring) | join(" ")')" "false 429 rate_limit_exceeded" \
    "client.mjs response meanwhile -> 429 rate_limit_exceeded ($(jout .message))"
assert_contains "$(jout .message)" "max_parallel" "which limit (in flight on the server)"
BASE=$SAVE
wait "$SLOW"
assert_eq "$(jq -r .ok "$E2E_TMP/slow.json")" true "the long request ended well"
sleep 2.5
BASE=$GWURL/v1
ok_call "$KP1" response '{"model":"llama","input":"once it ended"}'
BASE=$SAVE
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
start_server --health-interval 1 --endpoint-allow 127.0.0.0/8  # the fake upstreams are on loopback
R=$(records "$K1_ID")
assert_eq "$(jq length <<<"$R")" $((N_BEFORE + 5)) "records after the restart"
stop_server
done_testing
