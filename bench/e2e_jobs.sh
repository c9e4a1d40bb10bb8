#!/usr/bin/env bash
#
# e2e_jobs.sh - end-to-end jobs/s on one simulated 8-GPU node: the shape of
# ../shared/tools/slurm-baseline (SUBMITTERS loops of one curl process per
# job, N one-GPU jobs running `true`), against a real gpupool server and agent
# on loopback.  Not part of CI (bench/README.md).
#
#   GPUPOOL_BIN=build-rel/gpupool SUBMITTERS=2 bench/e2e_jobs.sh 400
#   # last line: gpupool_submit_jobs_per_s=X gpupool_end_to_end_jobs_per_s=Y n=N ok=N check=ok
#
# End to end = N / (first submit .. every job ended); every job must have
# succeeded (ok=N) and `gpupool check` must pass (no GPU bound twice), or the
# script exits 1.  INTERVAL (default 5, the agent's
# default) is the agent's heartbeat interval: with events the rate does not
# depend on it.
set -euo pipefail
N=${1:-400}
SUBMITTERS=${SUBMITTERS:-2}
INTERVAL=${INTERVAL:-5}
BIN=${GPUPOOL_BIN:-build/gpupool}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
T=$(mktemp -d /tmp/gpupool-bench.XXXXXX)
chmod 711 "$T" # jobs of an agent run as root get uids of their own: they cross it
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
export NO_PROXY='*' no_proxy='*'
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

"$BIN" server --data "$T/data" --listen 127.0.0.1:0 >"$T/server.out" 2>"$T/server.err" </dev/null &
PIDS+=($!)
for _ in $(seq 150); do [ -s "$T/data/server.url" ] && break; sleep 0.1; done
URL=$(head -n 1 "$T/data/server.url")
ADMIN=$(head -n 1 "$T/data/admin.token")
gp() { "$BIN" --server "$URL" --token "$ADMIN" "$@" >/dev/null; }
for _ in $(seq 50); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done
gp member grant admin ops-engineer
JT=$("$BIN" --server "$URL" --token "$ADMIN" -o json jointoken create --ttl 3600 | jq -r .token)
cat >"$T/node.json" <<'EOF'
{"nodes":[{"name":"n1","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]}]}
EOF
"$BIN" --server "$URL" agent --join-token "$JT" --inventory "$T/node.json" \
    --state-dir "$T/agent" --interval "$INTERVAL" >"$T/agent.out" 2>"$T/agent.err" </dev/null &
PIDS+=($!)
gp class create gpu1 --form whole --models A100-80GB --cpus 1 --memory 1
gp tenant create bench
gp project create p --tenant bench --class development
printf 'bench-Secret-9\n' >"$T/pw"
"$BIN" --server "$URL" --token "$ADMIN" user create bu <"$T/pw" >/dev/null
gp member grant bu project-user --tenant bench --project p
TOK=$("$BIN" --server "$URL" login bu <"$T/pw" | head -n 1)
for _ in $(seq 100); do
    [ "$("$BIN" --server "$URL" --token "$ADMIN" -o json node list | jq '[.items[] | select(.state == "ready")] | length')" == 1 ] && break
    sleep 0.1
done
JOBS="$URL/api/v1/tenants/bench/projects/p/jobs"
echo "server $URL, agent interval ${INTERVAL}s, $N jobs, $SUBMITTERS submitters" >&2

submitter() {
    local k
    for ((k = $1; k <= N; k += SUBMITTERS)); do
        curl -s -o /dev/null -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
            -d "{\"name\":\"j$k\",\"class\":\"gpu1\",\"command\":[\"true\"]}" "$JOBS"
    done
}
T0=$(now_ms)
sp=()
for ((s = 1; s <= SUBMITTERS; s++)); do
    submitter "$s" &
    sp+=($!)
done
for p in "${sp[@]}"; do wait "$p"; done
T1=$(now_ms)
while :; do
    # like the Slurm baseline's squeue: every 0.2 s, only the live jobs
    live=0
    for st in queued admitted running; do
        live=$((live + $(curl -s -H "Authorization: Bearer $TOK" "$JOBS?state=$st" | jq '.items | length')))
    done
    [ "$live" == 0 ] && break
    [ $(($(now_ms) - T0)) -lt 600000 ] || { echo "timed out with $live jobs left" >&2; break; }
    sleep 0.2
done
T2=$(now_ms)
ok=$(curl -s -H "Authorization: Bearer $TOK" "$JOBS?state=succeeded" | jq '.items | length')
sub=$(echo "scale=1; $N * 1000 / ($T1 - $T0)" | bc)
e2e=$(echo "scale=1; $N * 1000 / ($T2 - $T0)" | bc)
# no GPU bound twice, every job's bindings consistent (the store's invariants, read-only)
if "$BIN" check --data "$T/data" >"$T/check.out" 2>&1; then checked=ok; else checked=FAILED; cat "$T/check.out" >&2; fi
echo "gpupool_submit_jobs_per_s=$sub gpupool_end_to_end_jobs_per_s=$e2e n=$N ok=$ok check=$checked"
[ "$checked" == ok ] || exit 1
[ "$ok" == "$N" ] || { curl -s -H "Authorization: Bearer $TOK" "$JOBS" | jq -c ".items[0] | {state, reason, exit_code}" >&2; curl -s -H "Authorization: Bearer $TOK" "$JOBS" | jq -c "[.items[] | .state] | group_by(.) | map({(.[0]): length}) | add" >&2; exit 1; }
