#!/usr/bin/env bash
# bench_shares.sh BENCH DATA - ctest's bench_shares: `gpupool-bench shares` on a small
# generated trace (output format, reproducibility, argument errors), then, when the openb
# trace is in DATA (../shared/data/openb), the default replay: guarantees with borrowing
# must raise the cards' allocation over hard ceilings while the p99 wait of the jobs within
# their guarantee rises by no more than one round plus the grace period (bench/README.md).
# The replay is deterministic (the round is pure): no figure here depends on timing.
set -euo pipefail
bench=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 400 whole-card tasks of 1, 2, 4 and 8 cards, 10 min to 3 h, a few shared slices and a
# CPU-only task (skipped), in the openb pod list's columns
awk 'BEGIN {
  print "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
  srand(7)
  for (i = 0; i < 400; i++) {
    g = (i % 13 == 0) ? 8 : (i % 7 == 0) ? 4 : (i % 5 == 0) ? 2 : 1
    c = i * 60; d = 600 + int(rand() * 10200)
    printf "p%d,1000,1024,%d,1000,,LS,Running,%d,%d,%d\n", i, g, c, c + d, c
  }
  print "s0,1000,1024,1,500,,LS,Running,0,100,0"
  print "c0,1000,1024,0,0,,LS,Running,0,100,0"
}' > "$tmp/tasks.csv"
run() { "$bench" shares --tasks "$tmp/tasks.csv" --gpus 64 --tenants 4 --burst 20 "$@"; }
figures() { sed 's/ round_ms=[0-9.]*//'; } # every figure but the wall time
out1=$(run 2>/dev/null)
out2=$(run 2>/dev/null)
[ "$(figures <<<"$out1")" = "$(figures <<<"$out2")" ] || fail "two runs differ: $out1 / $out2"
grep -Eq '^jobs=400 tenants=4 gpus=64 load=1\.00 round_s=10 grace_s=30 seed=42$' <<<"$out1" ||
  fail "no header line in: $out1"
for m in ceilings borrowing; do
  grep -Eq "^mode=$m alloc_pct=[0-9.]+ goodput_pct=[0-9.]+ within_jobs=[0-9]+ p50_wait_within_s=[0-9]+ p99_wait_within_s=[0-9]+ p99_wait_all_s=[0-9]+ reclaimed=[0-9]+ rounds=[0-9]+ round_ms=[0-9.]+$" \
    <<<"$out1" || fail "no line for $m in: $out1"
done
grep -Eq '^alloc_ratio=[0-9.]+ p99_wait_within_rise_s=-?[0-9]+ bound_s=40 verdict=(ok|not_met)$' \
  <<<"$out1" || fail "no verdict line in: $out1"
# hard ceilings never reclaim
grep -q '^mode=ceilings .* reclaimed=0 ' <<<"$out1" || fail "ceilings reclaimed: $out1"
[ "$(run --seed 43 2>/dev/null | figures)" != "$(figures <<<"$out1")" ] || fail "the seed changes nothing"
for bad in "--tenants 9" "--tenants 1" "--gpus 12" "--gpus 16" "--load 0" "--round 0" \
           "--grace x" "--seed" "--nope 1"; do
  # shellcheck disable=SC2086
  if run $bad >/dev/null 2>&1; then fail "shares $bad accepted"; fi
done
if "$bench" shares --tasks "$tmp/none.csv" >/dev/null 2>&1; then fail "a missing file accepted"; fi
printf 'name,num_gpu\nx,1\n' > "$tmp/bad.csv"
if "$bench" shares --tasks "$tmp/bad.csv" >/dev/null 2>&1; then fail "a file without lifetimes accepted"; fi

if [ ! -f "$data/openb_pod_list_default.csv" ]; then
  echo "bench_shares: no openb trace in $data; the replay's figures not checked"
  exit 0
fi
out=$("$bench" shares --tasks "$data/openb_pod_list_default.csv")
echo "$out"
ratio=$(sed -n 's/^alloc_ratio=\([0-9.]*\) .*/\1/p' <<<"$out")
awk -v r="$ratio" 'BEGIN { exit !(r >= 1.10) }' || fail "borrowing raised the allocation by less than 10 %: $ratio"
grep -q 'verdict=ok$' <<<"$out" || fail "the within-guarantee wait rose past its bound: $out"
echo "bench_shares: ok"
