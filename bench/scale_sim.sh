#!/usr/bin/env bash
#
# scale_sim.sh - one server under a large simulated fleet (issue 25): NODES
# simulated 8-GPU nodes heartbeating from `agent --simulate` (PER_AGENT each), TENANTS
# tenants each capped at QUOTA GPUs, QUEUED jobs waiting behind those caps,
# then RATE submits a second for SECONDS while the heartbeats go on.  Not part
# of CI (bench/README.md).
#
#   NODES=10000 TENANTS=100 QUEUED=50000 RATE=100 SECONDS=60 bench/scale_sim.sh
#   # last line: nodes=.. submit_p50_ms=.. submit_p99_ms=.. heartbeat_p99_ms=..
#   #            server_cpu_cores=.. agents_cpu_cores=.. server_rss_mib=.. unreachable=0 ...
#
# KEEP=1 keeps the temporary folder (logs, the store); PER_AGENT=N nodes per agent process
# (default 250, at most 1,000).
# What it checks, and exits 1 on: every node ready before the measure, no node
# ever unreachable, no job failed, every submit answered 201.  What it
# measures: submit latency (open loop, RATE a second over 4 keep-alive
# connections, python3), the heartbeat route's p99 from the server's own
# histogram (gpupool_http_request_duration_seconds), rounds (count, p99), the
# server's CPU (cores, from /proc over the measured window) and peak RSS.
set -euo pipefail
NODES=${NODES:-1000}
TENANTS=${TENANTS:-20}
QUOTA=${QUOTA:-2}
QUEUED=${QUEUED:-5000}
RATE=${RATE:-100}
SECONDS_=${SECONDS:-30}
INTERVAL=${INTERVAL:-5}
BIN=${GPUPOOL_BIN:-build/gpupool}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/gpupool-scale.XXXXXX)
chmod 711 "$T"
PIDS=()
cleanup() {
    # the agents end their jobs when they stop (--stop-workloads-on-exit): wait for them
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" == 1 ]; then echo "scale_sim: kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
export NO_PROXY='*' no_proxy='*'
say() { echo "scale_sim: $*" >&2; }

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$BIN" server --data "$T/data" --listen 127.0.0.1:0 --max-connections 20000 \
    --log-level warn >"$T/server.out" 2>"$T/server.err" </dev/null &
SPID=$!
PIDS+=($SPID)
for _ in $(seq 150); do [ -s "$T/data/server.url" ] && break; sleep 0.1; done
URL=$(head -n 1 "$T/data/server.url")
ADMIN=$(head -n 1 "$T/data/admin.token")
gp() { "$BIN" --server "$URL" --token "$ADMIN" "$@" >/dev/null; }
for _ in $(seq 50); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done
gp member grant admin ops-engineer
JT=$("$BIN" --server "$URL" --token "$ADMIN" -o json jointoken create --ttl 3600 --uses "$NODES" | jq -r .token)
gp class create gpu1 --form whole --models A100-80GB --cpus 1 --memory 1
printf 'bench-Secret-9\n' >"$T/pw"
"$BIN" --server "$URL" --token "$ADMIN" user create bu <"$T/pw" >/dev/null
for ((t = 1; t <= TENANTS; t++)); do
    gp tenant create "t$t"
    gp project create p --tenant "t$t" --class development
    gp quota set --tenant "t$t" --gpus "$QUOTA"
    gp member grant bu project-user --tenant "t$t" --project p
done
TOK=$("$BIN" --server "$URL" login bu <"$T/pw" | head -n 1)
# one agent simulates PER_AGENT nodes (at most 1,000; default 250): as many agents as that
# takes, nodes a<K>-<I>.  A simulating agent joins and heartbeats its nodes one after another,
# so one agent of 1,000 nodes cannot keep 5 s heartbeats once each takes 5 ms, and its first
# pass of joins outlasts --node-timeout: those nodes would be silent for real.
PER=${PER_AGENT:-250}
[ "$PER" -ge 1 ] && [ "$PER" -le 1000 ] || { echo "PER_AGENT must be 1..1000" >&2; exit 2; }
AGENTS=$(((NODES + PER - 1) / PER))
APIDS=()
say "server $URL: starting $AGENTS agent(s) simulating $NODES nodes (${INTERVAL}s heartbeats)"
for ((a = 1; a <= AGENTS; a++)); do
    n=$((a < AGENTS ? PER : NODES - PER * (AGENTS - 1)))
    cat >"$T/node$a.json" <<EOF
{"nodes":[{"name":"a$a","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]}]}
EOF
    "$BIN" --server "$URL" agent --join-token "$JT" --inventory "$T/node$a.json" --simulate "$n" \
        --state-dir "$T/agent$a" --interval "$INTERVAL" --stop-workloads-on-exit >"$T/agent$a.out" 2>"$T/agent$a.err" </dev/null &
    PIDS+=($!)
    APIDS+=($!)
done
metric() { curl -s --max-time 10 "$URL/metrics" | awk -v k="$1" '$1 == k && !n++ {print $2}'; }
# counts read from the store itself (SQLite; read-only, while the server runs)
db() { sqlite3 -readonly "file:$T/data/gpupool.db?mode=ro" ".timeout 5000" "$1" 2>/dev/null | tail -n 1; }
ready() { db "SELECT count(*) FROM nodes WHERE state = 'ready'"; }
t0=$(date +%s)
while :; do
    r=$(ready)
    r=${r:-0}
    [ "$r" -ge "$NODES" ] && break
    [ $(($(date +%s) - t0)) -gt $((60 + NODES / 50)) ] && { say "only $r of $NODES nodes ready"; exit 1; }
    sleep 1
done
say "$NODES nodes ready after $(($(date +%s) - t0)) s; queueing $QUEUED jobs"
python3 "$HERE/scale_submit.py" fill "$URL" "$TOK" "$TENANTS" "$QUEUED" >"$T/fill.json"
say "filled: $(cat "$T/fill.json")"
sleep "$INTERVAL" # a full heartbeat cycle with the queue in place

cpu() { awk '{print $14 + $15}' "/proc/$SPID/stat"; }
# the simulating agents' CPU together (they share this machine with the server)
acpu() { for p in "${APIDS[@]}"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'; }
# hist FILE: the heartbeat route's and the rounds' histogram buckets ("h LE N" / "r LE N")
hist() {
    curl -s --max-time 10 "$URL/metrics" | awk '
        /^gpupool_http_request_duration_seconds_bucket\{/ && /agent\/heartbeat/ { k = "h" }
        /^gpupool_http_request_duration_seconds_bucket\{/ && /method="POST"/ &&
            /route="\/api\/v1\/tenants\/\{tenant\}\/projects\/\{project\}\/jobs"/ { k = "s" }
        /^gpupool_sched_round_duration_seconds_bucket\{/ { k = "r" }
        /^gpupool_sched_round_phase_seconds_bucket\{/ && /phase="write"/ { k = "w" }
        /^gpupool_sched_round_phase_seconds_bucket\{/ && /phase="read"/ { k = "x" }
        k { match($0, /le="[^"]*"/); print k "_" substr($0, RSTART + 4, RLENGTH - 5), $2; k = "" }' |
        sort -k1,1 >"$1"
}
# p99 KIND: over the window, the first bucket (ms) holding 99 % of the new observations
p99() {
    join "$T/hist0" "$T/hist1" | awk -v k="$1_" 'index($1, k) == 1 {
        le = substr($1, length(k) + 1); d = $3 - $2
        if (le == "+Inf") inf = d; else { n++; L[n] = le + 0; D[n] = d } }
        END { if (inf <= 0) { print "none"; exit }
              # buckets in increasing order of le
              for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                  if (L[j] < L[i]) { t = L[i]; L[i] = L[j]; L[j] = t; t = D[i]; D[i] = D[j]; D[j] = t }
              for (i = 1; i <= n; i++) if (D[i] >= 0.99 * inf) { print L[i] * 1000; exit }
              print "inf" }'
}
hist "$T/hist0"
r0=$(metric gpupool_sched_round_duration_seconds_count || echo 0)
c0=$(cpu)
a0=$(acpu)
w0=$(date +%s.%N)
python3 "$HERE/scale_submit.py" rate "$URL" "$TOK" "$TENANTS" "$RATE" "$SECONDS_" >"$T/rate.json" &
RP=$!
rss=0
while kill -0 "$RP" 2>/dev/null; do
    v=$(awk '/^VmRSS/ {print $2}' "/proc/$SPID/status")
    [ "$v" -gt "$rss" ] && rss=$v
    sleep 1
done
wait "$RP"
c1=$(cpu)
a1=$(acpu)
w1=$(date +%s.%N)
hist "$T/hist1"
r1=$(metric gpupool_sched_round_duration_seconds_count || echo 0)
tck=$(getconf CLK_TCK)
cores=$(echo "($c1 - $c0) / $tck / ($w1 - $w0)" | bc -l)
acores=$(echo "($a1 - $a0) / $tck / ($w1 - $w0)" | bc -l)
hb_p99=$(p99 h)
submit_srv_p99=$(p99 s)
round_p99=$(p99 r)
write_p99=$(p99 w)
read_p99=$(p99 x)
unreach=$(db "SELECT count(*) FROM health_events WHERE kind = 'node' AND to_state = 'unreachable'")
failed=$(db "SELECT count(*) FROM jobs WHERE state = 'failed'")
r=$(ready)
notready=$((${r:-0} < NODES ? 1 : 0))
read -r p50 p99 ok bad <<<"$(jq -r '"\(.p50_ms) \(.p99_ms) \(.ok) \(.bad)"' "$T/rate.json")"
printf 'nodes=%s queued=%s rate=%s submit_p50_ms=%s submit_p99_ms=%s submits_ok=%s submits_bad=%s submit_server_p99_ms=%s heartbeat_p99_ms=%s rounds=%s round_p99_ms=%s round_read_p99_ms=%s round_write_p99_ms=%s server_cpu_cores=%.2f agents_cpu_cores=%.2f server_rss_mib=%d unreachable=%s failed=%s\n' \
    "$NODES" "$QUEUED" "$RATE" "$p50" "$p99" "$ok" "$bad" "$submit_srv_p99" "$hb_p99" "$((r1 - r0))" "$round_p99" "$read_p99" "$write_p99" "$cores" "$acores" \
    "$((rss / 1024))" "$((unreach + notready))" "$failed"
[ "$bad" == 0 ] && [ "$unreach" == 0 ] && [ "$notready" == 0 ] && [ "$failed" == 0 ]
