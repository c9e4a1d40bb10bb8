#!/usr/bin/env bash
# test_metrics.sh - the metrics operators use (docs/operations.md, "Metrics"):
# per-GPU series from simulated agents labelled with the job holding each card,
# the scheduler's series, the gateway's series, `promtool check metrics` on the
# scraped text, and Debian's prometheus scraping a server with the bearer token
# deploy/prometheus/prometheus.yml shows.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_metrics.sh
#
# Needs promtool and prometheus (Debian's `prometheus` package, scripts/bootstrap.sh)
# and node (the fake upstream of tests/gateway, scripts/npm-deps.sh).
. "$(dirname "$0")/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
for c in promtool prometheus node; do
    command -v "$c" >/dev/null || fail "$c is not installed (scripts/bootstrap.sh, scripts/npm-deps.sh)"
done
workload_bin
ln -s "$(command -v sleep)" "$BIN/metricsleep"

# scrape [TOKEN]: GET /metrics (with the bearer token when given) -> $E2E_TMP/scrape.txt
scrape() {
    local args=(-s -o "$E2E_TMP/scrape.txt" -w '%{http_code}')
    [ -n "${1:-}" ] && args+=(-H "Authorization: Bearer $1")
    STATUS=$(curl "${args[@]}" "$URL/metrics")
}
# series NAME: the scraped lines of that metric (its samples, not HELP/TYPE)
series() { grep -E "^$1(\{| )" "$E2E_TMP/scrape.txt" || true; }
# value LINE-REGEX: the value of the first scraped line matching the regex ("" none)
value() { grep -E "$1" "$E2E_TMP/scrape.txt" | head -n 1 | awk '{print $NF}'; }

# ---------------------------------------------------------------- setup
start_server --endpoint-allow 127.0.0.0/8 # the fake upstream is on loopback
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600 --uses 1
assert_rc 0
JT=$(jout .token)
cat >"$E2E_TMP/fleet.json" <<'EOF'
{"nodes":[{"name":"m1","cpus":32,"memory_gib":256,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]}]}
EOF
"$GPUPOOL_BIN" --server "$URL" agent --join-token "$JT" --inventory "$E2E_TMP/fleet.json" \
    --state-dir "$E2E_TMP/agent" --interval 1 >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
node_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 30 node_ready || { _show agent "$E2E_TMP/agent.err"; fail "node m1 did not register"; }
_pass
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp project create train --tenant red --class development
assert_rc 0
gp member grant admin tenant-admin --tenant red
assert_rc 0

# ---------------------------------------------------------------- who may see what
note "anonymous: request and round series, no GPU or tenant series"
scrape
assert_eq "$STATUS" 200 "anonymous /metrics"
assert_file_contains "$E2E_TMP/scrape.txt" "# TYPE gpupool_sched_round_duration_seconds histogram"
assert_eq "$(series gpupool_gpu_utilization_ratio | wc -l)" 0 "no GPU series without a token"
assert_eq "$(series gpupool_sched_queue_depth | wc -l)" 0 "no tenant series without a token"
scrape gpt_not-a-token
assert_eq "$STATUS" 401 "an invalid token"

# ---------------------------------------------------------------- GPU series
note "GPU series: every card, varying samples, free cards labelled \"\""
gpu_series() {
    scrape "$ADMIN"
    [ "$(series gpupool_gpu_power_watts | wc -l)" == 2 ]
}
poll 30 gpu_series || { _show scrape "$E2E_TMP/scrape.txt"; fail "no GPU series for the two cards"; }
_pass
for m in gpupool_gpu_utilization_ratio gpupool_gpu_memory_used_bytes gpupool_gpu_memory_total_bytes \
    gpupool_gpu_temperature_celsius gpupool_gpu_xid_errors_total gpupool_gpu_bindings; do
    assert_eq "$(series $m | wc -l)" 2 "$m: one sample per GPU"
done
assert_eq "$(series gpupool_gpu_ecc_errors_total | wc -l)" 4 "ECC: corrected and uncorrected per GPU"
assert_match "$(series gpupool_gpu_utilization_ratio | head -n 1)" \
    '^gpupool_gpu_utilization_ratio\{node="m1",gpu="[^"]+",model="A100-80GB",form="whole",tenant="",project="",job_id=""\} 0\.[2-8][0-9]$' \
    "a free card's utilisation, labelled with no holder"
assert_eq "$(value '^gpupool_gpu_memory_total_bytes\{')" $((80 * 1024 * 1024 * 1024)) "memory in all"
U1=$(series gpupool_gpu_utilization_ratio | awk '{print $NF}' | tr '\n' ' ')
varied() {
    scrape "$ADMIN"
    [ "$(series gpupool_gpu_utilization_ratio | awk '{print $NF}' | tr '\n' ' ')" != "$U1" ]
}
poll 30 varied || fail "the simulated utilisation never changed ($U1)"
_pass

note "promtool check metrics on the scraped text"
promtool check metrics <"$E2E_TMP/scrape.txt" >"$E2E_TMP/promtool.out" 2>&1
assert_eq "$?" 0 "promtool check metrics ($(head -c 600 "$E2E_TMP/promtool.out"))"

note "a running job: its card carries its tenant, project and id"
gp -o json job submit --tenant red --project train --class a100.1x m1job -- "$BIN/metricsleep" 600
assert_rc 0
JOB=$(jout .id)
assert_json .state running "$OUT_FILE"
gp -o json job show "$JOB" --tenant red --project train
assert_rc 0
JGPU=$(jout '.bindings[0].gpu')
held() {
    scrape "$ADMIN"
    series gpupool_gpu_utilization_ratio | grep -q "gpu=\"$JGPU\",model=\"A100-80GB\",form=\"whole\",tenant=\"red\",project=\"train\",job_id=\"$JOB\""
}
poll 30 held || { _show scrape "$E2E_TMP/scrape.txt"; fail "the job's card is not labelled with it"; }
_pass
for m in gpupool_gpu_power_watts gpupool_gpu_temperature_celsius gpupool_gpu_memory_used_bytes; do
    assert_contains "$(series $m)" "gpu=\"$JGPU\",model=\"A100-80GB\",form=\"whole\",tenant=\"red\",project=\"train\",job_id=\"$JOB\"" \
        "$m of the job's card"
done
assert_eq "$(value "^gpupool_gpu_bindings\{node=\"m1\",gpu=\"$JGPU\"")" 1 "one binding on the job's card"
assert_eq "$(series gpupool_gpu_utilization_ratio | grep -c 'job_id=""')" 1 "the other card is free"

note "scheduler series: a placement, its wait, the queue"
assert_eq "$(value '^gpupool_sched_placements_total\{tenant="red",priority_class="normal"\}')" 1 \
    "one placement of red/normal"
assert_eq "$(value '^gpupool_sched_queue_wait_seconds_count\{tenant="red",priority_class="normal"\}')" 1 \
    "its queue wait observed"
assert_eq "$(value '^gpupool_sched_queue_depth\{tenant="red",priority_class="normal"\}')" 0 "nothing queued"
assert_eq "$(value '^gpupool_sched_preemptions_total\{tenant="red",priority_class="normal"\}')" 0 "no preemption"
ROUNDS=$(value '^gpupool_sched_round_duration_seconds_count ')
assert_match "$ROUNDS" '^[1-9][0-9]*$' "rounds counted in the round histogram"
gp -o json job submit --tenant red --project train --class a100.1x m1a -- "$BIN/metricsleep" 600
assert_rc 0
J2=$(jout .id)
gp -o json job submit --tenant red --project train --class a100.1x m1b -- "$BIN/metricsleep" 600
assert_rc 0
J3=$(jout .id)
assert_match "$(jout .state)" '^(queued|admitted)$' "the third job waits (two cards)"
scrape "$ADMIN"
assert_eq "$(value '^gpupool_sched_queue_depth\{tenant="red",priority_class="normal"\}')" 1 "one job queued"
assert_eq "$(value '^gpupool_sched_placements_total\{tenant="red",priority_class="normal"\}')" 2 "two placed"

note "the job ends: its card is free again"
for j in "$JOB" "$J2" "$J3"; do
    gp -o json job cancel "$j" --tenant red --project train
    assert_rc 0
done
freed() {
    scrape "$ADMIN"
    [ "$(series gpupool_gpu_utilization_ratio | grep -c 'tenant="",project="",job_id=""')" == 2 ]
}
poll 30 freed || { _show scrape "$E2E_TMP/scrape.txt"; fail "the cards still carry a holder"; }
_pass
assert_eq "$(value "^gpupool_gpu_bindings\{node=\"m1\",gpu=\"$JGPU\"")" 0 "no binding on the card"
assert_eq "$(value '^gpupool_sched_queue_depth\{tenant="red",priority_class="normal"\}')" 0 "queue empty"

note "bounded samples: hostile figures clamped, too many GPUs refused"
A0=$(head -n 1 "$E2E_TMP/agent/m1.token")
assert_match "$A0" '^gpt_' "the node's credential"
gp -o json gpu list --node m1
assert_rc 0
mapfile -t G < <(jout '.items | sort_by(.index) | .[].uuid')
kill -STOP "$AGENT_PID" # its heartbeats would overwrite the hostile sample at once
hostile="{\"utilization\":{\"gpu\":1000},\"temperature_c\":99999,\"power_mw\":-5,\"memory_used_mib\":1e30,\"xid_total\":-1}"
# poll: a heartbeat of the agent's that was in flight when it stopped may land after ours
clamped() {
    AUTH_HEADER="Authorization: Bearer $A0" api POST /api/v1/agent/heartbeat \
        "{\"node\":\"m1\",\"gpus\":[{\"uuid\":\"${G[0]}\",\"signals\":$hostile},{\"uuid\":\"${G[1]}\",\"signals\":{}}]}"
    [ "$STATUS" == 200 ] || return 1
    scrape "$ADMIN"
    [ "$(value "^gpupool_gpu_utilization_ratio\{node=\"m1\",gpu=\"${G[0]}\"")" == 1.00 ]
}
poll 20 clamped || { _show scrape "$E2E_TMP/scrape.txt"; fail "utilisation 1000 % was not clamped to 1 (status $STATUS)"; }
_pass
assert_eq "$(value "^gpupool_gpu_temperature_celsius\{node=\"m1\",gpu=\"${G[0]}\"")" 150 "temperature clamped"
assert_eq "$(value "^gpupool_gpu_power_watts\{node=\"m1\",gpu=\"${G[0]}\"")" 0.000 "negative power clamped to 0"
assert_eq "$(value "^gpupool_gpu_memory_used_bytes\{node=\"m1\",gpu=\"${G[0]}\"")" "" "a non-integer figure dropped"
assert_eq "$(value "^gpupool_gpu_xid_errors_total\{node=\"m1\",gpu=\"${G[0]}\"")" "" "a negative counter dropped"
AUTH_HEADER="Authorization: Bearer $A0" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"m1\",\"gpus\":[{\"uuid\":\"${G[0]}\"},{\"uuid\":\"${G[1]}\"},{\"uuid\":\"${G[0]}\"}]}"
assert_status 400
assert_json .error.message "a heartbeat lists at most the node's 2 GPUs (it listed 3)"
kill -CONT "$AGENT_PID"

# ---------------------------------------------------------------- gateway series
note "gateway series: requests, tokens, latency and time to first token"
node "$GW/upstream.mjs" --port 0 --name up1 --model llama >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
up_port() { UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out"); [ -n "$UP" ]; }
poll 10 up_port || fail "the upstream did not start: $(cat "$E2E_TMP/up.out")"
_pass
gp model create llama --tenant red
assert_rc 0
gp endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP/v1"
assert_rc 0
gp -o json key create mk --tenant red --project train
assert_rc 0
KEY=$(jout .key)
chat() {
    curl -s -o "$E2E_TMP/chat.out" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
        -H "Content-Type: application/json" --data-binary "$1" "$URL/v1/chat/completions"
}
assert_eq "$(chat '{"model":"llama","messages":[{"role":"user","content":"hello there"}],"max_tokens":4}')" 200 "a chat"
assert_eq "$(chat '{"model":"llama","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":4}')" 200 "a stream"
assert_eq "$(chat '{"model":"llama","messages":[{"role":"user","content":"x [[error-400]]"}]}')" 400 "the upstream's 400"
gw_counted() {
    scrape "$ADMIN"
    [ "$(value '^gpupool_gateway_requests_total\{model="llama",tenant="red",code="2xx"\}')" == 2 ]
}
poll 10 gw_counted || { _show scrape "$E2E_TMP/scrape.txt"; fail "the gateway's requests were not counted"; }
_pass
assert_eq "$(value '^gpupool_gateway_requests_total\{model="llama",tenant="red",code="4xx"\}')" 1 "the 400 counted"
P=$(value '^gpupool_gateway_tokens_total\{model="llama",tenant="red",kind="prompt"\}')
C=$(value '^gpupool_gateway_tokens_total\{model="llama",tenant="red",kind="completion"\}')
assert_match "$P/$C" '^[1-9][0-9]*/[1-9][0-9]*$' "prompt and completion tokens counted"
assert_eq "$(value '^gpupool_gateway_upstream_latency_seconds_count\{model="llama"\}')" 3 "latency of the three calls"
assert_eq "$(value '^gpupool_gateway_ttft_seconds_count\{model="llama"\}')" 3 "time to first token of the three"
assert_eq "$(value '^gpupool_gateway_ttft_seconds_bucket\{model="llama",le="\+Inf"\}')" 3 "TTFT +Inf bucket"
promtool check metrics <"$E2E_TMP/scrape.txt" >"$E2E_TMP/promtool.out" 2>&1
assert_eq "$?" 0 "promtool check metrics with every family ($(head -c 600 "$E2E_TMP/promtool.out"))"

note "the NVML path: the fake libnvidia-ml.so's samples"
if [ -n "${FAKE_NVML_PATH:-}" ] && [ -r "$FAKE_NVML_PATH" ]; then
    gp -o json jointoken create --ttl 3600 --uses 1
    assert_rc 0
    FAKE_NVML_XID=13 GPUPOOL_NVML_LIBRARY=$FAKE_NVML_PATH run_cli --server "$URL" agent --once \
        --node-name gpu-box --join-token "$(jout .token)" --state-dir "$E2E_TMP/nvml-state"
    assert_rc 0
    scrape "$ADMIN"
    L='node="gpu-box",gpu="GPU-fake-0000",model="NVIDIA A100-SXM4-80GB",form="whole",tenant="",project="",job_id=""'
    L1='node="gpu-box",gpu="GPU-fake-0001",model="NVIDIA H100 80GB HBM3",form="mig",tenant="",project="",job_id=""'
    assert_eq "$(value "^gpupool_gpu_utilization_ratio\{$L\}")" 0.12 "NVML utilisation"
    assert_eq "$(value "^gpupool_gpu_utilization_ratio\{$L1\}")" "" "no utilisation where NVML has none (MIG)"
    assert_eq "$(value "^gpupool_gpu_temperature_celsius\{$L\}")" 45 "NVML temperature"
    assert_match "$(value "^gpupool_gpu_power_watts\{$L\}")" '^(70|80|90|100|110)\.000$' "NVML power of GPU 0"
    assert_match "$(value "^gpupool_gpu_power_watts\{$L1\}")" '^3[0-4]0\.000$' "NVML power of GPU 1"
    assert_match "$(value "^gpupool_gpu_memory_used_bytes\{$L\}")" '^[0-9]{9,11}$' "NVML memory in use"
    assert_eq "$(value "^gpupool_gpu_xid_errors_total\{$L1\}")" 1 "the Xid the fake reported"
    assert_eq "$(value "^gpupool_gpu_xid_errors_total\{$L\}")" 0 "no Xid on GPU 0"
    assert_eq "$(value "^gpupool_gpu_ecc_errors_total\{$L,kind=\"uncorrected\"\}")" 0 "ECC from NVML"
else
    note "FAKE_NVML_PATH not set: NVML section skipped"
fi

note "the Grafana dashboard queries only series the server exports"
DASH=$(dirname "$0")/../../deploy/grafana/gpupool.json
jq -e '.panels | length > 10' "$DASH" >/dev/null
assert_eq "$?" 0 "deploy/grafana/gpupool.json is JSON with its panels"
for m in $(jq -r '[.. | .expr? // empty] | .[]' "$DASH" | grep -oE 'gpupool_[a-z_]+' |
    sed -E 's/_(bucket|sum|count)$//' | sort -u); do
    assert_file_contains "$E2E_TMP/scrape.txt" "# TYPE $m "
done

# ---------------------------------------------------------------- Prometheus scrapes the server
note "Debian's prometheus scrapes the server with a bearer token"
printf '%s' "$ADMIN" >"$E2E_TMP/scrape.token"
HOSTPORT=${URL#http://}
sed -e "s|/etc/gpupool/scrape.token|$E2E_TMP/scrape.token|" -e "s|gpupool-server:7070|$HOSTPORT|" \
    -e 's|scrape_interval: 15s|scrape_interval: 1s|' \
    "$(dirname "$0")/../../deploy/prometheus/prometheus.yml" >"$E2E_TMP/prom.yml"
promtool check config "$E2E_TMP/prom.yml" >"$E2E_TMP/promcfg.out" 2>&1
assert_eq "$?" 0 "promtool check config ($(head -c 400 "$E2E_TMP/promcfg.out"))"
PROM_PID=""
for try in 1 2 3 4 5; do
    PP=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    (: </dev/tcp/127.0.0.1/$PP) 2>/dev/null && continue # taken
    prometheus --config.file="$E2E_TMP/prom.yml" --storage.tsdb.path="$E2E_TMP/tsdb.$try" \
        --web.listen-address="127.0.0.1:$PP" >"$E2E_TMP/prom.$try.log" 2>&1 &
    PROM_PID=$!
    E2E_PIDS+=("$PROM_PID")
    # ready, or gone (its port was taken after all: try another)
    prom_settled() { ! kill -0 "$PROM_PID" 2>/dev/null || curl -sf -o /dev/null "http://127.0.0.1:$PP/-/ready"; }
    poll 60 prom_settled && kill -0 "$PROM_PID" 2>/dev/null && break
    kill "$PROM_PID" 2>/dev/null
    wait "$PROM_PID" 2>/dev/null
    PROM_PID=""
done
[ -n "$PROM_PID" ] || { _show prometheus "$E2E_TMP/prom.$try.log"; fail "prometheus did not start"; }
_pass
pq() { curl -s -G "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
scraped() {
    [ "$(pq 'up{job="gpupool"}' | jq -r '.data.result[0].value[1] // empty')" == 1 ] &&
        [ "$(pq 'count(gpupool_gpu_temperature_celsius{node="m1"})' | jq -r '.data.result[0].value[1] // empty')" == 2 ]
}
poll 60 scraped || { _show prometheus "$E2E_TMP/prom.$try.log"; fail "prometheus did not scrape the GPU series ($(pq 'up'))"; }
_pass
assert_eq "$(pq 'sum(gpupool_gateway_requests_total{tenant="red"})' | jq -r '.data.result[0].value[1]')" 3 \
    "the gateway's requests in Prometheus"
kill -TERM "$PROM_PID"
_wait_exit "$PROM_PID" 20 || fail "prometheus did not stop"

kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 20 || fail "the agent did not stop"
assert_eq "$_EXIT" 0 "the agent's exit code"
stop_server
done_testing
