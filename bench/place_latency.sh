#!/usr/bin/env bash
#
# place_latency.sh - submit -> running on an idle cluster (issue 25): one real
# server and agent (bench/one_node.sh: one simulated 8-GPU node, SQLite),
# N one-GPU `true` jobs submitted one at a time, GAP_MS apart (default 100,
# so each has ended before the next: the cluster is idle at every submit),
# each by one `curl` process.  Not part of CI (bench/README.md).
#
#   GPUPOOL_BIN=build/gpupool bench/place_latency.sh 200
#   # last line: submit_to_placed_p50_ms=.. p99_ms=.. submit_to_started_p50_ms=..
#   #            submit_to_started_p99_ms=.. n=N ok=N
#
# "placed" is the job's started_at (the round's commit), "started" the
# agent's own "workload started" log line (the process exists); both from
# the job's created_at (the submit's commit).  All three clocks are this
# machine's.  Exits 1 unless every job succeeded.
set -euo pipefail
N=${1:-200}
GAP_MS=${GAP_MS:-100}
INTERVAL=${INTERVAL:-5}
BIN=${GPUPOOL_BIN:-build/gpupool}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/one_node.sh
. "$HERE/one_node.sh"
echo "server $URL, $N jobs one at a time, ${GAP_MS} ms apart" >&2
for ((k = 1; k <= N; k++)); do
    t=$(now_ms)
    curl -s -o /dev/null -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
        -d "{\"name\":\"l$k\",\"class\":\"gpu1\",\"command\":[\"true\"]}" "$JOBS"
    left=$((GAP_MS - ($(now_ms) - t)))
    [ "$left" -le 0 ] || sleep "$(printf '0.%03d' "$left")"
done
for _ in $(seq 600); do
    live=0
    for st in queued admitted running; do
        live=$((live + $(curl -s -H "Authorization: Bearer $TOK" "$JOBS?state=$st" | jq '.items | length')))
    done
    [ "$live" == 0 ] && break
    sleep 0.1
done
ok=$(curl -s -H "Authorization: Bearer $TOK" "$JOBS?state=succeeded&limit=1000" | jq '.items | length')
sqlite3 -separator ' ' "$T/data/gpupool.db" "SELECT id, created_at, started_at FROM jobs" >"$T/jobs.txt"
python3 - "$T/jobs.txt" "$T/agent.err" "$N" "$ok" <<'PY'
import re, sys, datetime
jobs = {}
for line in open(sys.argv[1]):
    i, c, s = line.split()
    jobs[i] = (int(c), int(s))
started = {}
pat = re.compile(r'^ts=(\S+)Z .*msg="workload started" .*job=([0-9a-f]+)')
for line in open(sys.argv[2]):
    m = pat.match(line)
    if m:
        t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
        t = t.replace(tzinfo=datetime.timezone.utc)
        started[m.group(2)] = int(t.timestamp() * 1_000_000)
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] / 1000.0
placed = [s - c for c, s in jobs.values()]
run = [started[i] - jobs[i][0] for i in jobs if i in started]
n, ok = int(sys.argv[3]), int(sys.argv[4])
print("submit_to_placed_p50_ms=%.1f submit_to_placed_p99_ms=%.1f "
      "submit_to_started_p50_ms=%.1f submit_to_started_p99_ms=%.1f n=%d ok=%d started=%d"
      % (pct(placed, .5), pct(placed, .99), pct(run, .5), pct(run, .99), n, ok, len(run)))
sys.exit(0 if ok == n and len(run) == n else 1)
PY
