#!/usr/bin/env bash
# bench_openb.sh BENCH DATA - ctest's bench_openb: `gpupool-bench openb` on a tiny
# hand-made trace (output format, reproducibility, argument errors), then, when the
# openb trace is in DATA (../shared/data/openb), the replay of the FGD paper's
# simulator on its CPU-heavy mix: 2 seeds of fgd within 0.4 point of the published
# 94.82 (bench/README.md; the sampled protocol with nodes in file order gave 94.07), and
# one point of the held-out grid (--mix-report --grid-only): its format and that one
# --grid-seed draws the same synthetic mix twice.
set -euo pipefail
bench=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,4,A
n1,32000,131072,2,B
n2,16000,65536,8,A
CSV
cat > "$tmp/tasks.csv" <<'CSV'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
t0,4000,8192,1,1000,
t1,2000,4096,1,500,
t2,1000,2048,0,0,
t3,8000,16384,2,1000,B
t4,2000,4096,1,250,A|B
CSV
out1=$("$bench" openb --nodes "$tmp/nodes.csv" --tasks "$tmp/tasks.csv" --seeds 3 2>/dev/null)
out2=$("$bench" openb --nodes "$tmp/nodes.csv" --tasks "$tmp/tasks.csv" --seeds 3 2>/dev/null)
[ "$out1" = "$out2" ] || fail "two runs differ: $out1 / $out2"
for p in bestfit fgd gpupool; do
  grep -Eq "^policy=$p alloc_at_100=[0-9]+\.[0-9]{2} alloc_at_130=[0-9]+\.[0-9]{2} seeds=3$" \
    <<<"$out1" || fail "no line for $p in: $out1"
done
for bad in "--protocol x" "--seeds 0" "--coverage 2" "--policy nope" "--grid -1" "--grid-seed x"; do
  # shellcheck disable=SC2086
  if "$bench" openb --nodes "$tmp/nodes.csv" --tasks "$tmp/tasks.csv" $bad >/dev/null 2>&1; then
    fail "openb $bad accepted"
  fi
done
if "$bench" openb --mix-report --data "$tmp" --seeds 1 >/dev/null 2>&1; then
  fail "--mix-report without the mixes succeeded"
fi

if [ ! -f "$data/openb_pod_list_cpu200.csv" ]; then
  echo "ok (openb trace not in $data: the published comparison skipped)"
  exit 0
fi
line=$("$bench" openb --nodes "$data/openb_node_list_gpu_node.csv" \
  --tasks "$data/openb_pod_list_cpu200.csv" --seeds 2 --policy fgd 2>/dev/null)
a100=$(sed -n 's/.*alloc_at_100=\([0-9.]*\).*/\1/p' <<<"$line")
awk -v a="$a100" 'BEGIN { d = a - 94.82; exit !(d <= 0.4 && d >= -0.4) }' ||
  fail "fgd on cpu200 at 100 %: $a100, published 94.82"
# the held-out grid (issue 41): one synthetic mix, one seed, twice from the printed seed
g1=$("$bench" openb --mix-report --data "$data" --grid-only --grid 1 --seeds 1 --grid-seed 41 2>/dev/null)
g2=$("$bench" openb --mix-report --data "$data" --grid-only --grid 1 --seeds 1 --grid-seed 41 2>/dev/null)
[ "$g1" = "$g2" ] || fail "the grid from one seed differs: $g1 / $g2"
grep -Eq '^0 +0\.[0-9]{2} +0\.[0-9]{2} +0\.[0-9]{2} +0\.[0-9]{2} +[0-9.]+ +[0-9.]+ +[-+][0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+$' \
  <<<"$g1" || fail "no grid point line in: $g1"
grep -Eq '^seeds=1 grid_points=1 grid_seed=41 grid_min_margin=[-+][0-9]+\.[0-9]{2}$' <<<"$g1" ||
  fail "no grid summary in: $g1"
echo "ok ($line; grid: $(tail -1 <<<"$g1"))"
