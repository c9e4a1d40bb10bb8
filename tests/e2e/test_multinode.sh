#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # commands expand on the node; start_server takes optional flags; poll calls helpers indirectly
#
# test_multinode.sh - jobs that span nodes end to end (docs/scheduling.md,
# "Jobs that span nodes"; docs/workloads.md, "Distributed jobs"; issue 37
# items 1-2), on a simulated fleet of three 2-GPU nodes (one agent, each
# node's processes on loopback):
#
#  1. node labels ops set (`node label`): shown over the agent's, `rack` and
#     `switch` kept as the node's topology; bad keys and values refused (400),
#     a tenant's user cannot label a node (404), audited;
#  2. topology: a 2 x 1 job lands on the two nodes of rack r1;
#  3. all or nothing: with only two nodes able to take 2 cards, a 3 x 2 job
#     waits holding no binding (never, across many rounds, `gpupool check`
#     clean) with the reason; freed, it is placed whole (2 cards on each of 3
#     nodes), and a cancel takes it whole;
#     the same for a 2 x 2 job while only one node has free cards (the
#     others cordoned): pending, no binding; then on rack r1's two nodes;
#  4. refusals that change nothing: units_per_node without nodes, nodes 0,
#     units that do not split, units that disagree, more than 64 units;
#  5. a 2 x 2 job whose ranks really meet: rank 0 listens on MASTER_PORT (a
#     port its node reserved, in the rendezvous range, kept on the job and
#     audited), rank 1 connects to MASTER_ADDR:MASTER_PORT, they exchange
#     their NODE_RANKs; each saw NNODES=2, WORLD_SIZE=4, GPUPOOL_NODES, the
#     node names, GPUS_PER_NODE=2 and a hostfile "127.0.0.1 slots=2" per node;
#     the job succeeds with rank 0;
#  6. a failed rank ends the gang: rank 1 exits 3 after meeting rank 0; the
#     job fails naming rank 1 and its node, exit 3, and rank 0 is stopped
#     (its TERM handler runs: the grace period), every binding ended;
#  7. the job ends when rank 0 ends: rank 0 exits 0 after meeting rank 1,
#     which sleeps on; the job succeeds and rank 1 is stopped;
#  8. a rank that ends 0 before rank 0 is done, not started again: the job
#     runs on until rank 0 ends, and succeeds;
#  9. cancellation takes it whole: both ranks stopped, every binding
#     cancelled; `gpupool check` clean throughout;
# 10. concurrent submits and preemption: with the cluster full of low jobs,
#     three urgent 2 x 1 jobs (may preempt) and quick jobs submitted at once;
#     the urgent ones preempt, meet and succeed; read back from the bindings'
#     timeline, every placement ever made of a job that spans nodes in this
#     test was whole (all its units at one start, on `nodes` distinct nodes);
# 11. node loss: a second agent's node nd, holding rank 1 of a 2 x 1 job, falls
#     silent: both of the job's bindings end node_lost, rank 0 on na is stopped,
#     the job is requeued and placed again whole, and its ranks meet again (a
#     second rendezvous);
# 12. an array of jobs that span nodes: each task a whole 2 x 1 job, each rank
#     meets its other rank, each with its GPUPOOL_ARRAY_INDEX and NODE_RANK.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_multinode.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/msleep"
command -v python3 >/dev/null 2>&1 || fail "this test needs python3 (the ranks' rendezvous)"
# the ranks' side: meet through MASTER_ADDR:MASTER_PORT, exchange NODE_RANKs, then as MODE says
cat >"$BIN/rdv.py" <<'EOF'
import os, signal, socket, sys, time

mode = sys.argv[1]
rank, n = int(os.environ["NODE_RANK"]), int(os.environ["NNODES"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print("rank=%d nnodes=%d world=%s master=%s:%d nodes=%s names=%s per_node=%s idx=%s" % (
    rank, n, os.environ["WORLD_SIZE"], addr, port, os.environ["GPUPOOL_NODES"],
    os.environ["GPUPOOL_NODE_NAMES"], os.environ["GPUPOOL_GPUS_PER_NODE"],
    os.environ.get("GPUPOOL_ARRAY_INDEX", "-")), flush=True)
with open(os.environ["GPUPOOL_HOSTFILE"]) as f:
    print("rank %d hostfile=%s" % (rank, f.read().replace("\n", ";")), flush=True)


def stopped(sig, frame):
    print("rank %d stopped by TERM" % rank, flush=True)
    sys.exit(143)


signal.signal(signal.SIGTERM, stopped)
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    s.listen(n)
    s.settimeout(90)
    met = []
    for _ in range(n - 1):
        c, _ = s.accept()
        c.settimeout(30)
        met.append(c.recv(16).decode())
        c.sendall(b"0")
        c.close()
    print("rank 0 met ranks %s" % ",".join(sorted(met)), flush=True)
else:
    deadline = time.time() + 90
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    c.sendall(str(rank).encode())
    print("rank %d met rank %s" % (rank, c.recv(16).decode()), flush=True)
    c.close()
if mode == "rank1-fails" and rank == 1:
    print("rank 1 fails", flush=True)
    sys.exit(3)
if mode == "rank1-first" and rank == 0:
    time.sleep(4)  # several heartbeats: rank 1, done, must not start again
    sys.exit(0)
if rank in {"meet": (0, 1), "rank0-ends": (0,), "rank1-first": (1,)}.get(mode, ()):
    sys.exit(0)
while True:
    time.sleep(1)
EOF
chmod 0644 "$BIN/rdv.py"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[
 {"name":"na","address":"127.0.0.1","cpus":16,"memory_gib":64,"labels":{"rack":"r1"},
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]},
 {"name":"nb","address":"127.0.0.1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]},
 {"name":"nc","address":"127.0.0.1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]}]}
EOF
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"

start_server --node-timeout 5
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp project create p --tenant red --class development
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" --token "$ADMIN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project p
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")
R=(--tenant red --project p)

# sub NAME ARGS...: red's project-user submits NAME; JID its id
sub() {
    local name=$1
    shift
    as "$RU" -o json job submit "$name" "${R[@]}" --class a100.1x "$@"
    assert_rc 0
    JID=$(jout .id)
    assert_match "$JID" '^[0-9a-f]{32}$' "id of job $name"
}
jshow() { as "$RU" -o json job show "$1" "${R[@]}"; }
state_is() {
    jshow "$1"
    [ "$(jout .state)" == "$2" ]
}
wait_state() {
    poll "${3:-20}" state_is "$1" "$2" ||
        fail "job $1 did not become $2 (state '$(jout .state)', reason '$(jout .reason)')"
    _pass
}
# open bindings of job $1, as "node node ..." sorted
open_nodes() {
    db_sql "$DATA" "SELECT node FROM bindings WHERE job_id = '$1' AND end_us IS NULL ORDER BY node" |
        tr -d ' ' | grep -v '^$' | tr '\n' ' ' | sed 's/ $//'
}
bindings_of() {
    db_sql "$DATA" "SELECT COUNT(*) FROM bindings WHERE job_id = '$1'" | tr -d ' \n'
}
check_clean() {
    # shellcheck disable=SC2046  # store_flag: nothing, or "--store URI"
    run_cli check --data "$DATA" $(store_flag "$DATA")
    assert_rc 0
}

note "1. labels ops set on nodes"
gp -o json node label nb rack=r1 switch=s1 team=vision
assert_rc 0
assert_json '"\(.labels.rack) \(.labels.switch) \(.ops_labels.team)"' "r1 s1 vision" "$OUT_FILE"
gp -o json node label nc rack=r2
assert_rc 0
gp -o json node label nb switch- team-
assert_rc 0
assert_json '"\(.labels.rack) \(.labels.switch) \(.ops_labels | keys | join(","))"' "r1 null rack" \
    "$OUT_FILE"
# the agent's own label shows, and ops' wins over it
gp -o json node show na
assert_json .labels.rack r1 "$OUT_FILE"
topo=$(db_sql "$DATA" "SELECT name || ':' || topo_rack || ':' || topo_switch FROM nodes ORDER BY name" |
    tr -d ' ' | grep -v '^$' | tr '\n' ' ')
assert_eq "$topo" "na:r1: nb:r1: nc:r2: " "the nodes' topology"
for bad in Rack=1 "rack=has space" "=x" "rack" "rack=$(printf 'x%.0s' {1..64})"; do
    gp node label nb "$bad"
    [ "$RC" != 0 ] || fail "node label nb '$bad' was accepted"
    _pass
done
gp node label nb 'Rack=1'
assert_denied 400
as "$RU" node label na rack=r9
assert_denied 404
gp -o json audit list --action node.label
assert_json '[.items[] | select(.result == "ok")] | length' 3 "$OUT_FILE"

note "2. topology: a 2 x 1 job lands on rack r1 (na, nb)"
sub two --nodes 2 --units-per-node 1 -- "$BIN/msleep" 600
T=$JID
wait_state "$T" running
assert_json '"\(.nodes) \(.units_per_node) \(.units)"' "2 1 2" "$OUT_FILE"
assert_eq "$(open_nodes "$T")" "na nb" "the 2 x 1 job's nodes"
check_clean
as "$RU" job cancel "$T" "${R[@]}"
assert_rc 0
wait_state "$T" cancelled
assert_eq "$(open_nodes "$T")" "" "open bindings of the cancelled job"
ends=$(db_sql "$DATA" "SELECT DISTINCT end_reason FROM bindings WHERE job_id = '$T'" | tr -d ' \n')
assert_eq "$ends" cancelled "how its bindings ended"

note "3. all or nothing: 3 x 2 while only two nodes can take 2"
gp node cordon na
assert_rc 0
gp node cordon nb
assert_rc 0
sub blocker -- "$BIN/msleep" 600
B=$JID
wait_state "$B" running
assert_eq "$(open_nodes "$B")" "nc" "the blocker's node"
gp node uncordon na
assert_rc 0
gp node uncordon nb
assert_rc 0
sub wide --nodes 3 --units-per-node 2 -- "$BIN/msleep" 600
W=$JID
reason_has() {
    jshow "$1"
    [[ "$(jout .reason)" == *"$2"* ]]
}
poll 20 reason_has "$W" "needs 3 nodes with 2 free units each, all at once; 2 nodes can take 2 now" ||
    fail "the waiting job's reason: $(jout .reason)"
_pass
assert_json '"\(.nodes) \(.units_per_node) \(.units)"' "3 2 6" "$OUT_FILE"
# many rounds (every submit, heartbeat and the leader's tick run one): never a binding of it
for _ in 1 2 3 4 5 6; do
    sub filler --units 1 -- true
    sleep 0.5
    assert_eq "$(bindings_of "$W")" 0 "bindings of the waiting 3 x 2 job"
done
check_clean
as "$RU" -o json job explain "$W" "${R[@]}"
assert_rc 0
assert_json '[.suggestions[] | select(.change == "free_capacity") | .nodes] | .[0]' 1 "$OUT_FILE"
as "$RU" job cancel "$B" "${R[@]}"
assert_rc 0
wait_state "$W" running
assert_eq "$(open_nodes "$W")" "na na nb nb nc nc" "the 3 x 2 job's cards"
# each rank's units on one node: units 0-1, 2-3, 4-5
ranks=$(db_sql "$DATA" "SELECT COUNT(DISTINCT node) FROM bindings WHERE job_id = '$W'
  AND end_us IS NULL GROUP BY unit / 2 ORDER BY unit / 2" | tr -d ' ' | grep -v '^$' | tr '\n' ' ')
assert_eq "$ranks" "1 1 1 " "nodes per rank"
check_clean
as "$RU" job cancel "$W" "${R[@]}"
assert_rc 0
wait_state "$W" cancelled
assert_eq "$(open_nodes "$W")" "" "open bindings of the cancelled 3 x 2 job"

note "3b. 2 x 2 while only one node has free cards: pending, no binding"
gp node cordon nb
assert_rc 0
gp node cordon nc
assert_rc 0
sub pair --nodes 2 --units-per-node 2 -- "$BIN/msleep" 600
PR=$JID
poll 20 reason_has "$PR" "needs 2 nodes with 2 free units each, all at once; 1 node can take 2 now" ||
    fail "the waiting job's reason: $(jout .reason)"
_pass
sleep 2
assert_eq "$(bindings_of "$PR")" 0 "bindings of the waiting 2 x 2 job"
gp node uncordon nb
assert_rc 0
gp node uncordon nc
assert_rc 0
wait_state "$PR" running
assert_eq "$(open_nodes "$PR")" "na na nb nb" "the 2 x 2 job's cards (rack r1)"
as "$RU" job cancel "$PR" "${R[@]}"
assert_rc 0
wait_state "$PR" cancelled

note "4. refusals change nothing"
count_jobs() {
    as "$RU" -o json job list "${R[@]}"
    jout '.items | length'
}
before=$(count_jobs)
as "$RU" job submit x "${R[@]}" --class a100.1x --units-per-node 2
assert_rc 2
for bad in "--nodes 0" "--nodes 2 --units 3" "--nodes 2 --units-per-node 2 --units 5" \
    "--nodes 16 --units-per-node 8" "--nodes 2 --units-per-node 0" "--nodes 65"; do
    # shellcheck disable=SC2086  # the flags split on purpose
    as "$RU" job submit x "${R[@]}" --class a100.1x $bad
    assert_denied 400
done
AUTH_HEADER="Authorization: Bearer $RU" api POST /api/v1/tenants/red/projects/p/jobs \
    '{"name":"x","class":"a100.1x","units_per_node":2}'
assert_status 400
assert_contains "$(cat "$BODY_FILE")" "units_per_node needs nodes"
AUTH_HEADER="Authorization: Bearer $RU" api POST /api/v1/tenants/red/projects/p/jobs \
    '{"name":"x","class":"a100.1x","nodes":"2"}'
assert_status 400
assert_eq "$(count_jobs)" "$before" "jobs after the refused submits"

note "5. a 2 x 2 job whose ranks really meet"
log_has() {
    as "$RU" -o json job logs "$1" "${R[@]}"
    [[ "$(jout .log)" == *"$2"* ]]
}
wait_log() {
    poll "${3:-20}" log_has "$1" "$2" || fail "job $1's log lacks '$2': $(jout .log)"
    _pass
}
sub meet --nodes 2 --units-per-node 2 -- python3 "$BIN/rdv.py" meet
M=$JID
wait_state "$M" succeeded 60
wait_log "$M" "rank 0 met ranks 1"
wait_log "$M" "rank 1 met rank 0"
port=$(db_sql "$DATA" "SELECT master_port FROM jobs WHERE id = '$M'" | tr -d ' \n')
assert_match "$port" '^(29[5-9][0-9][0-9]|30[0-4][0-9][0-9])$' "the job's MASTER_PORT"
for r in 0 1; do
    wait_log "$M" "rank=$r nnodes=2 world=4 master=127.0.0.1:$port nodes=127.0.0.1,127.0.0.1 names=na,nb per_node=2"
    wait_log "$M" "rank $r hostfile=127.0.0.1 slots=2;127.0.0.1 slots=2;"
done
jshow "$M"
assert_json '"\(.exit_code) \(.reason)"' "0 exited 0" "$OUT_FILE"
assert_json '[.events[] | select(.kind == "rendezvous")] | length' 1 "$OUT_FILE"
assert_contains "$(jout '.events[] | select(.kind == "rendezvous") | .message')" \
    "rank 0 on node na listens for its ranks on port $port"
gp -o json audit list --tenant red --action job.rendezvous
assert_json "[.items[] | select(.result == \"ok\" and .target.id == \"$M\") | .summary.master_port | tostring] | join(\",\")" \
    "$port" "$OUT_FILE"
check_clean

note "6. a failed rank ends the gang"
sub fails --nodes 2 --units-per-node 1 -- python3 "$BIN/rdv.py" rank1-fails
F=$JID
wait_state "$F" failed 60
assert_json .exit_code 3 "$OUT_FILE"
assert_contains "$(jout .reason)" "rank 1 on node nb exited 3"
wait_log "$F" "rank 1 fails"
wait_log "$F" "rank 0 stopped by TERM"
assert_eq "$(open_nodes "$F")" "" "open bindings of the failed job"
check_clean

note "7. the job ends when rank 0 ends"
sub ends --nodes 2 --units-per-node 1 -- python3 "$BIN/rdv.py" rank0-ends
E=$JID
wait_state "$E" succeeded 60
wait_log "$E" "rank 0 met ranks 1"
wait_log "$E" "rank 1 stopped by TERM"
assert_eq "$(open_nodes "$E")" "" "open bindings of the ended job"

note "8. a rank done before rank 0 is not started again"
sub first --nodes 2 --units-per-node 1 -- python3 "$BIN/rdv.py" rank1-first
P=$JID
wait_state "$P" succeeded 60
assert_json '[.events[] | select(.kind == "rank_exited")] | length' 1 "$OUT_FILE"
as "$RU" -o json job logs "$P" "${R[@]}"
assert_eq "$(jout .log | grep -c '^rank=1 ')" 1 "rank 1's starts"
assert_eq "$(jout .log | grep -c '^rank=0 ')" 1 "rank 0's starts"

note "9. cancellation takes it whole"
sub hold --nodes 2 --units-per-node 2 -- python3 "$BIN/rdv.py" hold
H=$JID
wait_log "$H" "rank 0 met ranks 1" 60
check_clean
as "$RU" job cancel "$H" "${R[@]}"
assert_rc 0
wait_state "$H" cancelled
wait_log "$H" "rank 0 stopped by TERM"
wait_log "$H" "rank 1 stopped by TERM"
ends=$(db_sql "$DATA" "SELECT DISTINCT end_reason FROM bindings WHERE job_id = '$H'" | tr -d ' \n')
assert_eq "$ends" cancelled "how its bindings ended"
check_clean

note "10. concurrent submits and preemption: never a partial placement in the bindings"
gp priority create urgent --value 1000 --may-preempt yes --preemptible no
assert_rc 0
LOW=()
for i in 1 2 3 4 5 6; do
    sub "low$i" -- "$BIN/msleep" 600
    LOW+=("$JID")
done
full() { [ "$(db_sql "$DATA" "SELECT COUNT(*) FROM bindings WHERE end_us IS NULL" | tr -d ' \n')" == 6 ]; }
poll 30 full || fail "the low jobs did not fill the cluster"
_pass
SUBS=()
for i in 1 2 3; do
    "$GPUPOOL_BIN" --server "$URL" --token "$RU" -o json job submit "urgent$i" "${R[@]}" \
        --class a100.1x --priority-class urgent --nodes 2 -- python3 "$BIN/rdv.py" meet \
        >"$E2E_TMP/urgent$i.out" 2>&1 &
    SUBS+=("$!")
    "$GPUPOOL_BIN" --server "$URL" --token "$RU" -o json job submit "quick$i" "${R[@]}" \
        --class a100.1x -- true >"$E2E_TMP/quick$i.out" 2>&1 &
    SUBS+=("$!")
done
wait "${SUBS[@]}" # (not the server's and the agent's)
for i in 1 2 3; do
    U=$(jq -r .id "$E2E_TMP/urgent$i.out")
    assert_match "$U" '^[0-9a-f]{32}$' "urgent job $i"
    wait_state "$U" succeeded 90
    wait_log "$U" "rank 0 met ranks 1"
done
preempted=$(db_sql "$DATA" "SELECT COUNT(*) FROM bindings WHERE end_reason = 'preempted'" | tr -d ' \n')
assert_match "$preempted" '^[1-9][0-9]*$' "bindings preempted for the urgent jobs"
# the timeline: every placement of every job that spans nodes is whole, from its first binding on
partial=$(db_sql "$DATA" "SELECT COUNT(*) FROM (SELECT b.job_id, b.start_us FROM bindings b
  JOIN jobs j ON j.id = b.job_id WHERE j.nodes > 0 GROUP BY b.job_id, b.start_us, j.units, j.nodes
  HAVING COUNT(*) <> j.units OR COUNT(DISTINCT b.node) <> j.nodes) x" | tr -d ' \n')
assert_eq "$partial" 0 "placements of jobs that span nodes that were not whole"
runs=$(db_sql "$DATA" "SELECT COUNT(DISTINCT b.job_id || '/' || b.start_us) FROM bindings b
  JOIN jobs j ON j.id = b.job_id WHERE j.nodes > 0" | tr -d ' \n')
assert_match "$runs" '^[1-9][0-9]+$' "placements of jobs that span nodes checked"
check_clean
for L in "${LOW[@]}"; do
    as "$RU" job cancel "$L" "${R[@]}"
    assert_rc 0
done

note "11. node loss takes it whole, and recovery requeues it whole"
cat >"$E2E_TMP/nd.json" <<'EOF'
{"nodes":[{"name":"nd","address":"127.0.0.1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]}]}
EOF
gp -o json jointoken create --ttl 600
assert_rc 0
JT=$(jout .token)
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/nd.json" \
    --state-dir "$E2E_TMP/nd-state" --interval 1 >"$E2E_TMP/nd.out" 2>"$E2E_TMP/nd.err" </dev/null &
ND=$!
E2E_PIDS+=("$ND")
nd_ready() {
    gp -o json node show nd
    [ "$(jout .state)" == ready ]
}
poll 15 nd_ready || { _show "agent nd" "$E2E_TMP/nd.err"; fail "node nd did not join"; }
_pass
for n in nb nc; do
    gp node cordon "$n"
    assert_rc 0
done
sub lost --nodes 2 -- python3 "$BIN/rdv.py" hold
LJ=$JID
wait_log "$LJ" "rank 0 met ranks 1" 60
assert_eq "$(open_nodes "$LJ")" "na nd" "the job's nodes"
FIRST=$(db_sql "$DATA" "SELECT MIN(start_us) FROM bindings WHERE job_id = '$LJ'" | tr -d ' \n')
for n in nb nc; do
    gp node uncordon "$n"
    assert_rc 0
done
# node nd falls silent (its rank runs on, orphaned; the test's exit ends it)
{ kill -KILL "$ND" && wait "$ND"; } 2>/dev/null
lost_whole() {
    [ "$(db_sql "$DATA" "SELECT COUNT(*) FROM bindings WHERE job_id = '$LJ' AND start_us = $FIRST
      AND end_reason = 'node_lost'" | tr -d ' \n')" == 2 ]
}
poll 30 lost_whole || fail "the job's first placement did not end node_lost, whole"
_pass
wait_log "$LJ" "rank 0 stopped by TERM" 20 # rank 0, on na, is stopped with it
placed_again() {
    [ "$(db_sql "$DATA" "SELECT COUNT(DISTINCT node) FROM bindings WHERE job_id = '$LJ'
      AND end_us IS NULL AND start_us > $FIRST" | tr -d ' \n')" == 2 ]
}
poll 30 placed_again || fail "the requeued job was not placed again, whole"
_pass
assert_contains "$(open_nodes "$LJ")" "nb" "the requeued job's nodes"
met_twice() {
    as "$RU" -o json job logs "$LJ" "${R[@]}"
    [ "$(jout .log | grep -c 'rank 0 met ranks 1')" -ge 2 ]
}
poll 60 met_twice || fail "the requeued job's ranks did not meet again: $(jout .log)"
_pass
jshow "$LJ"
assert_json '[.events[] | select(.kind == "rendezvous")] | length' 2 "$OUT_FILE"
assert_json .state running "$OUT_FILE"
check_clean
as "$RU" job cancel "$LJ" "${R[@]}"
assert_rc 0

note "12. an array of jobs that span nodes: each task a whole 2 x 1 job"
sub arr --array 0-1 --nodes 2 -- python3 "$BIN/rdv.py" meet
A=$JID
assert_json '"\(.size) \(.tasks.queued)"' "2 2" "$OUT_FILE"
arr_done() {
    as "$RU" -o json job array show "$A" "${R[@]}"
    [ "$(jout .tasks.succeeded)" == 2 ]
}
poll 60 arr_done || fail "the array's tasks did not succeed: $(cat "$OUT_FILE")"
_pass
as "$RU" -o json job list "${R[@]}" --array "$A"
assert_json '[.items[] | "\(.nodes) \(.units_per_node)"] | unique | join(",")' "2 1" "$OUT_FILE"
for k in 0 1; do
    T=$(jq -r ".items[] | select(.array.index == $k) | .id" "$OUT_FILE")
    wait_log "$T" "rank 0 met ranks 1"
    for r in 0 1; do
        wait_log "$T" "rank=$r nnodes=2 world=2 master=127.0.0.1:"
        wait_log "$T" "per_node=1 idx=$k"
    done
    as "$RU" -o json job list "${R[@]}" --array "$A"
done

stop_server
done_testing
