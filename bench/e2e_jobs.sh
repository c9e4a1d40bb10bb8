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
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/one_node.sh
. "$HERE/one_node.sh"
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
