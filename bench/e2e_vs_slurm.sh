#!/usr/bin/env bash
#
# e2e_vs_slurm.sh - Slurm and gpupool, one after the other, on the same shape
# (one node, 8 GPUs, N one-GPU `true` jobs, SUBMITTERS loops of one process per
# submit), and the ratio of their end-to-end rates.  Needs root and Debian's
# slurm-wlm (../shared/tools/slurm-baseline/run.sh installs it); not part of CI.
#
#   sudo GPUPOOL_BIN=build/gpupool SUBMITTERS=2 bench/e2e_vs_slurm.sh 400
#   # slurm_end_to_end_jobs_per_s=S gpupool_end_to_end_jobs_per_s=G ratio=R n=N
set -euo pipefail
N=${1:-400}
export SUBMITTERS=${SUBMITTERS:-2}
here=$(cd "$(dirname "$0")" && pwd)
SLURM=${SLURM_BASELINE:-$here/../../shared/tools/slurm-baseline/run.sh}
[ -x "$SLURM" ] || [ -r "$SLURM" ] || { echo "no Slurm baseline at $SLURM (SLURM_BASELINE=...)" >&2; exit 2; }
s=$(MODES=gpu bash "$SLURM" "$N" | tail -n 1)
g=$("$here/e2e_jobs.sh" "$N" | tail -n 1)
echo "$s" >&2
echo "$g" >&2
sr=$(sed -n 's/.*slurm_end_to_end_jobs_per_s=\([0-9.]*\).*/\1/p' <<<"$s")
gr=$(sed -n 's/.*gpupool_end_to_end_jobs_per_s=\([0-9.]*\).*/\1/p' <<<"$g")
echo "slurm_end_to_end_jobs_per_s=$sr gpupool_end_to_end_jobs_per_s=$gr ratio=$(echo "scale=1; $gr / $sr" | bc) n=$N"
