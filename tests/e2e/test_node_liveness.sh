#!/usr/bin/env bash
# shellcheck disable=SC2317  # poll calls helpers indirectly
#
# test_node_liveness.sh - a server must never declare healthy nodes lost for its
# own absence (docs/inventory.md, "Liveness"):
#  1. the server is down longer than --node-timeout (its nodes' last heartbeats
#     grow old in the store) and comes back: the nodes are not marked unreachable
#     by its first sweep, the job running there keeps running (before, every node
#     was marked lost and its jobs failed a second after the start);
#  2. most nodes falling silent at once (an agent with 12 simulated nodes frozen,
#     one real node heartbeating) is held: not marked unreachable, the log says
#     why; once the agent is gone for good they are marked after 5 timeouts.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_node_liveness.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/lvsleep"
T=3 # --node-timeout
cat >"$E2E_TMP/one.json" <<'EOF'
{"nodes":[{"name":"real","cpus":8,"memory_gib":32,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":1,"mode":"whole"}]}]}
EOF
cat >"$E2E_TMP/sim.json" <<'EOF'
{"nodes":[{"name":"sim","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF

start_server --node-timeout "$T"
ADMIN=$TOKEN
DATA_DIR=$DATA
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600 --uses 13
assert_rc 0
JT=$(jout .token)
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/one.json" \
    --state-dir "$E2E_TMP/a1" --interval 1 >"$E2E_TMP/a1.out" 2>"$E2E_TMP/a1.err" </dev/null &
A1=$!
E2E_PIDS+=("$A1")
ready_count() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == "$1" ]
}
poll 15 ready_count 1 || fail "node real did not register"
_pass
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp member grant admin tenant-admin --tenant red
assert_rc 0
gp project create p --tenant red
assert_rc 0
gp -o json job submit hold --tenant red --project p --class a100.1x -- "$BIN/lvsleep" 300
assert_rc 0
JOB=$(jout .id)
job_state() {
    gp -o json job show "$JOB" --tenant red --project p
    jout .state
}
running() { [ "$(job_state)" == running ]; }
poll 15 running || fail "the job did not start"
_pass

# ---------------------------------------------------------------- 1. the server away
note "the server is away for $((T + 3)) s (> --node-timeout $T), the agent frozen meanwhile"
kill -STOP "$A1"
stop_server
sleep $((T + 3))
launch_server "$DATA_DIR" --data "$DATA_DIR" --listen "127.0.0.1:${URL##*:}" --node-timeout "$T"
sleep 2 # the first sweeps have run
kill -CONT "$A1"
poll 15 ready_count 1 || fail "node real is not ready after the restart"
_pass
sleep 2
gp -o json node show real
assert_json .state ready "$OUT_FILE"
gp -o json node history real
assert_rc 0
assert_eq "$(jq '[.items[]? | select(.to == "unreachable")] | length' "$OUT_FILE")" 0 \
    "node real was never marked unreachable ($(head -c 300 "$OUT_FILE"))"
assert_eq "$(job_state)" running "the job on node real kept running"

# ---------------------------------------------------------------- 2. a mass silence
note "12 simulated nodes of 13 fall silent at once: held"
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/sim.json" \
    --simulate 12 --state-dir "$E2E_TMP/a2" --interval 1 >"$E2E_TMP/a2.out" 2>"$E2E_TMP/a2.err" </dev/null &
A2=$!
E2E_PIDS+=("$A2")
poll 20 ready_count 13 || { _show "agent stderr" "$E2E_TMP/a2.err"; fail "the simulated nodes did not register"; }
_pass
kill -STOP "$A2"
sleep $((T * 2 + 1))
gp -o json node list
assert_eq "$(jout '[.items[] | select(.state == "ready")] | length')" 13 \
    "all thirteen still ready after $((T * 2 + 1)) s (timeout $T s)"
assert_file_contains "$SERVER_LOG" "most nodes fell silent at once"
jq -c '[.items[] | select(.name | startswith("sim-")) | {(.name): .last_heartbeat}] | add' \
    "$OUT_FILE" >"$E2E_TMP/frozen.json"
kill -CONT "$A2"
# every simulated node heartbeats again before the agent goes for good (a loaded machine may
# take a while over its pass): they all fall silent from about the same moment
all_beat() {
    gp -o json node list >/dev/null || return 1
    [ "$(jq --slurpfile f "$E2E_TMP/frozen.json" '[.items[] | select(.name | startswith("sim-"))
        | select(.last_heartbeat != $f[0][.name])] | length' "$OUT_FILE")" == 12 ]
}
poll 20 all_beat || fail "the simulated nodes did not heartbeat after the agent was resumed"
note "the simulated nodes' agent is gone for good: marked after 5 timeouts"
kill -KILL "$A2"
_wait_exit "$A2" 10
_forget_pid "$A2"
poll $((T * 5 + 45)) ready_count 1 || fail "the 12 silent nodes were not marked unreachable after 5 timeouts"
_pass
gp -o json node show sim-0
assert_json .state unreachable "$OUT_FILE"
# the sweep that first marks some of them does so while most are silent: those say they were
# held (the last few, marked once most are already unreachable, are no longer a mass silence;
# which ones those are depends on where the agent was frozen in its pass over its nodes)
held=0
for i in $(seq 0 11); do
    gp -o json node history "sim-$i"
    jq -r '[.items[] | select(.to == "unreachable")][0].cause' "$OUT_FILE" |
        grep -q "held while most nodes fell silent at once" && held=$((held + 1))
done
[ "$held" -ge 1 ] || fail "no silent node's cause says it was held"
_pass
gp -o json node show real
assert_json .state ready "$OUT_FILE"
# each silent node's critical alarm is open while it stays silent
gp -o json alarm list --state open
assert_eq "$(jout '[.items[] | select(.kind == "node" and .node == "sim-0")] | length')" 1 \
    "sim-0's unreachable alarm is open"

note "the simulated nodes come back: their alarms resolve themselves"
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/sim.json" \
    --simulate 12 --state-dir "$E2E_TMP/a2" --interval 1 >"$E2E_TMP/a3.out" 2>"$E2E_TMP/a3.err" </dev/null &
A3=$!
E2E_PIDS+=("$A3")
poll 30 ready_count 13 || { _show "agent stderr" "$E2E_TMP/a3.err"; fail "the simulated nodes did not come back"; }
_pass
gp -o json alarm list --state open
assert_eq "$(jout '[.items[] | select(.kind == "node")] | length')" 0 "no node alarm left open"
gp -o json alarm list --state resolved
assert_eq "$(jout '[.items[] | select(.kind == "node" and .node == "sim-0")][0].resolution')" \
    "node ready: heartbeats resumed" "sim-0's alarm says what cleared it"
gp -o json audit list --action alarm.resolve
assert_eq "$(jout '[.items[] | select(.target.id != null)] | length >= 12')" true \
    "each resolution audited"
kill -TERM "$A3"
_wait_exit "$A3" 10
_forget_pid "$A3"

kill -TERM "$A1"
_wait_exit "$A1" 10
_forget_pid "$A1"
stop_server
done_testing
