#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317  # workload commands expand on the node; poll calls helpers indirectly
#
# test_cgroup.sh - `gpupool agent --cgroup DIR`: each workload runs in its own
# child folder DIR/gpupool-<job>-<placement>, with cpu.max and memory.max from
# its resource class (times its units), and enters it (cgroup.procs) before its
# command runs; an OOM kill counted in memory.events becomes the job's reason.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_cgroup.sh
#
# DIR here is a plain folder standing in for a delegated cgroup v2 folder (the
# test machines have no delegated cgroup v2 tree), so what is checked is what
# the agent writes, not the kernel's enforcement; on a plain folder the agent
# cannot remove a workload's folder (it holds files), which it logs.
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/cgsleep"

CG=$E2E_TMP/cg
mkdir -p "$CG"
cat >"$E2E_TMP/inv.json" <<'EOF'
{"nodes":[{"name":"g","cpus":32,"memory_gib":256,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"

note "usage errors"
run_cli --server http://127.0.0.1:9 agent --cgroup "$E2E_TMP/nosuch" --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/st0" --once --join-token x
assert_rc 1
assert_file_contains "$ERR_FILE" "is not a writable folder"
# a cgroup folder (it has cgroup.controllers) that does not hand cpu and memory to its children
mkdir -p "$E2E_TMP/cgnoctl"
echo "cpu memory pids" >"$E2E_TMP/cgnoctl/cgroup.controllers"
echo "pids" >"$E2E_TMP/cgnoctl/cgroup.subtree_control"
run_cli --server http://127.0.0.1:9 agent --cgroup "$E2E_TMP/cgnoctl" --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/st0" --once --join-token x
assert_rc 1
assert_file_contains "$ERR_FILE" "does not enable the cpu and memory controllers"
# ... and one that does (the agent then fails only because no server answers)
echo "cpu memory" >"$E2E_TMP/cgnoctl/cgroup.subtree_control"
run_cli --server http://127.0.0.1:9 agent --cgroup "$E2E_TMP/cgnoctl" --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/st0" --once --join-token x
assert_rc 1
assert_file_contains "$ERR_FILE" "127.0.0.1:9"

start_server
note "server at $URL"
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600
assert_rc 0
JT=$(jout .token)
AGENT_ERR=$E2E_TMP/agent.err
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/state" --interval 1 --grace 1 --cgroup "$CG" \
    >"$E2E_TMP/agent.out" 2>"$AGENT_ERR" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 10 ready || { _show "agent stderr" "$AGENT_ERR"; fail "node g did not register"; }
_pass
gp class create a100.c4 --form whole --models A100-80GB --cpus 4 --memory 16
assert_rc 0
gp tenant create red
assert_rc 0
gp project create train --tenant red
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" --token "$ADMIN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project train
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")

sub() {
    as "$RU" -o json job submit --tenant red --project train "$@"
    assert_rc 0
    JID=$(jout .id)
}
state_of() {
    as "$RU" -o json job show "$1" --tenant red --project train
    echo "$(jout .state)|$(jout .reason)"
}
cg_of() { compgen -G "$CG/gpupool-$1-*" | head -n 1; }
has_cg() { [ -n "$(cg_of "$1")" ] && [ -s "$(cg_of "$1")/cgroup.procs" ]; }

note "a workload's cgroup: limits from its class times its units; its process inside"
sub big --class a100.c4 --units 2 -- "$BIN/cgsleep" 301
BIG=$JID
poll 8 has_cg "$BIG" || { _show "agent stderr" "$AGENT_ERR"; fail "no cgroup for job big"; }
_pass
D=$(cg_of "$BIG")
assert_eq "$(cat "$D/cpu.max")" "800000 100000" "cpu.max of 2 units of 4 CPUs"
assert_eq "$(cat "$D/memory.max")" "$((32 * 1024 * 1024 * 1024))" "memory.max of 2 units of 16 GiB"
PID=$(pgrep -f -- "$BIN/cgsleep 301\$")
assert_eq "$(tr -d '\n' <"$D/cgroup.procs")" "$PID" "the pid in cgroup.procs is the workload's"
assert_match "$(basename "$D")" "^gpupool-$BIG-[0-9a-f]+\$" "cgroup folder name"

note "an OOM kill in memory.events is the job's reason"
sub oom --class a100.c4 -- sh -c 'sleep 2; kill -9 $$'
OOM=$JID
poll 8 has_cg "$OOM" || fail "no cgroup for job oom"
_pass
printf 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n' >"$(cg_of "$OOM")/memory.events"
oom_done() { [[ "$(state_of "$OOM")" == failed\|* ]]; }
poll 10 oom_done || fail "job oom did not end: $(state_of "$OOM")"
_pass
assert_eq "$(state_of "$OOM")" "failed|exited 137: out of memory (its memory limit)" "state|reason of an OOM-killed job"

note "a job that ends normally is not called OOM"
sub fine --class a100.c4 -- sh -c 'exit 3'
FINE=$JID
fine_done() { [[ "$(state_of "$FINE")" == failed\|* ]]; }
poll 10 fine_done || fail "job fine did not end"
_pass
assert_eq "$(state_of "$FINE")" "failed|exited 3" "state|reason of a job that exited 3"

note "stop"
as "$RU" job cancel "$BIG" --tenant red --project train
assert_rc 0
gone() { [ -z "$(pgrep -f -- "$BIN/cgsleep 301\$")" ]; }
poll 8 gone || fail "the cancelled workload still runs"
_pass
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop"
_forget_pid "$AGENT_PID"
assert_eq "$_EXIT" 0 "exit code of the agent"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$AGENT_ERR"; then
    _show "agent stderr" "$AGENT_ERR"
    fail "agent printed a sanitizer report"
fi
stop_server
done_testing
