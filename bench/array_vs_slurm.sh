#!/usr/bin/env bash
#
# array_vs_slurm.sh - many small jobs as one job array, gpupool against Slurm in the same run
# (issue 37): one node with 8 GPUs, N one-GPU tasks running `true`, submitted as ONE request
# each (gpupool: `POST .../jobs` with "array": "0-(N-1)"; Slurm: `sbatch --array=0-(N-1)`,
# ../shared/tools/slurm-baseline/run.sh with ARRAY=1), end to end = N / (the submit .. every
# task ended).  Every gpupool task must have succeeded and `gpupool check` must pass.  Needs
# root for Slurm (run.sh installs slurm-wlm); not part of CI (bench/README.md).
#
#   sudo GPUPOOL_BIN=build-release-gcc/gpupool bench/array_vs_slurm.sh 400
#   # slurm_array_jobs_per_s=S gpupool_array_jobs_per_s=G ratio=R n=N
#   NO_SLURM=1 ... runs gpupool's side only (its line, no ratio)
set -euo pipefail
N=${1:-400}
INTERVAL=${INTERVAL:-5}
BIN=${GPUPOOL_BIN:-build/gpupool}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
SLURM=${SLURM_BASELINE:-$HERE/../../shared/tools/slurm-baseline/run.sh}

gpupool_side() (
    # shellcheck source=bench/one_node.sh
    . "$HERE/one_node.sh"
    echo "gpupool: server $URL, agent interval ${INTERVAL}s, one array of $N tasks" >&2
    T0=$(now_ms)
    A=$(curl -s -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
        -d "{\"name\":\"arr\",\"class\":\"gpu1\",\"command\":[\"true\"],\"array\":\"0-$((N - 1))\"}" \
        "$JOBS" | jq -r .id)
    T1=$(now_ms)
    ARR="$URL/api/v1/tenants/bench/projects/p/arrays/$A"
    while :; do
        # like the Slurm baseline's squeue: every 0.2 s, until no task is live
        live=$(curl -s -H "Authorization: Bearer $TOK" "$ARR" |
            jq '.tasks.queued + .tasks.admitted + .tasks.running')
        [ "$live" == 0 ] && break
        [ $(($(now_ms) - T0)) -lt 600000 ] || { echo "timed out with $live tasks left" >&2; break; }
        sleep 0.2
    done
    T2=$(now_ms)
    ok=$(curl -s -H "Authorization: Bearer $TOK" "$ARR" | jq .tasks.succeeded)
    if "$BIN" check --data "$T/data" >"$T/check.out" 2>&1; then checked=ok; else checked=FAILED; cat "$T/check.out" >&2; fi
    echo "gpupool: $((T2 - T0)) ms end to end" >&2
    echo "gpupool_array_submit_ms=$((T1 - T0)) gpupool_array_jobs_per_s=$(echo "scale=1; $N * 1000 / ($T2 - $T0)" | bc) n=$N ok=$ok check=$checked"
    [ "$checked" == ok ] && [ "$ok" == "$N" ]
)

g=$(gpupool_side | tail -n 1)
echo "$g" >&2
gr=$(sed -n 's/.*gpupool_array_jobs_per_s=\([0-9.]*\).*/\1/p' <<<"$g")
if [ "${NO_SLURM:-0}" == 1 ]; then
    echo "gpupool_array_jobs_per_s=$gr n=$N"
    exit 0
fi
[ -r "$SLURM" ] || { echo "no Slurm baseline at $SLURM (SLURM_BASELINE=...)" >&2; exit 2; }
s=$(ARRAY=1 MODES=gpu bash "$SLURM" "$N" | tail -n 1)
echo "$s" >&2
sr=$(sed -n 's/.*slurm_end_to_end_jobs_per_s=\([0-9.]*\).*/\1/p' <<<"$s")
echo "slurm_array_jobs_per_s=$sr gpupool_array_jobs_per_s=$gr ratio=$(echo "scale=1; $gr / $sr" | bc) n=$N"
