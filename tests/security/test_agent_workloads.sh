#!/usr/bin/env bash
#
# test_agent_workloads.sh - issue 33, item 7: agents and their workloads.  A
# real server and real agents.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_agent_workloads.sh
#
# Checked:
# - (root only: jobs then run as uids of their own) an agent whose state
#   folder sits under a folder those uids cannot cross refuses to start, with
#   one error line naming the folder and the fix, and joins nothing; an agent
#   whose state folder's parents do not exist makes them 0711 (the default
#   ./var/agent case), and its job runs (it used to fail with exit 126 "cannot
#   enter the job's folder");
# - `agent --stop-workloads-on-exit`: on SIGTERM the agent ends its workload's
#   process group before it exits (no process left); without the flag the
#   workload outlives the agent (re-adoption stays the default), and an agent
#   with the flag that re-adopted it ends it too;
# - the shared cleanup (tests/e2e/lib.sh) leaves no workload of the test
#   running: checked by the closing `ps` of each test (_e2e_cleanup).
. "$(dirname "$0")/../e2e/lib.sh"

workload_bin # BIN; whatever still runs from it is killed at exit
ln -s "$(command -v sleep)" "$BIN/awsleep"
ROOT=0
[ "$(id -u)" == 0 ] && ROOT=1

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"a","cpus":16,"memory_gib":64,
  "gpus":[{"model":"T4","memory_gib":16,"count":1,"mode":"whole"}]}]}
EOF
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"

# a node that stays ready while its agent restarts
start_server --node-timeout 60
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600 --node a
assert_rc 0
printf '%s\n' "$(jout .token)" >"$E2E_TMP/join.token"
gp class create t4.1x --form whole --models T4 --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp project create train --tenant red --class development
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" --token "$ADMIN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project train
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")

# start_agent LABEL STATE-DIR [FLAGS...]: an agent of node a in the background
start_agent() {
    local label=$1 state=$2
    shift 2
    AGENT_ERR=$E2E_TMP/agent.$label.err
    "$GPUPOOL_BIN" --server "$URL" agent --join-token-file "$E2E_TMP/join.token" \
        --inventory "$E2E_TMP/node.json" --state-dir "$state" --interval 1 --grace 1 "$@" \
        >"$E2E_TMP/agent.$label.out" 2>"$AGENT_ERR" </dev/null &
    AGENT_PID=$!
    E2E_PIDS+=("$AGENT_PID")
}
# stop_agent: SIGTERM the last agent; it must exit 0 within 10 s, without a sanitizer report
stop_agent() {
    kill -TERM "$AGENT_PID"
    _wait_exit "$AGENT_PID" 10 || fail "agent (pid $AGENT_PID) did not stop within 10 s"
    _forget_pid "$AGENT_PID"
    assert_eq "$_EXIT" 0 "the agent's exit code after SIGTERM"
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$AGENT_ERR"; then
        _show "agent stderr" "$AGENT_ERR"
        fail "the agent printed a sanitizer report"
    fi
}
node_ready() {
    gp -o json node show a
    [ "$RC" == 0 ] && [ "$(jout .state)" == ready ]
}
job_state() {
    as "$RU" -o json job show "$1" --tenant red --project train
    jout .state
}
# how many workload processes of `awsleep N` run (any uid)
procs() { pgrep -cf -- "$BIN/awsleep $1\$" || true; }
procs_are() { [ "$(procs "$1")" == "$2" ]; }

# ---------------------------------------------------------------- reachable job folders
if [ "$ROOT" == 1 ]; then
    note "root: a state folder under a folder job uids cannot cross is refused at start"
    mkdir -m 0700 "$E2E_TMP/locked"
    run_cli --server "$URL" agent --join-token-file "$E2E_TMP/join.token" \
        --inventory "$E2E_TMP/node.json" --state-dir "$E2E_TMP/locked/agent" --once
    assert_rc 1
    assert_one_line_error "cannot cross folder $E2E_TMP/locked (mode 0700)"
    assert_contains "$(cat "$ERR_FILE")" "chmod o+x $E2E_TMP/locked" "the fix"
    assert_eq "$(ls "$E2E_TMP/locked/agent" | grep -c '\.token$')" 0 "credentials of the refused agent"
    gp node show a
    assert_denied 404
else
    note "not root: jobs run as the agent's uid; the refusal of an unreachable folder is skipped"
fi

note "an agent makes the missing parents of its state folder crossable, and its job runs"
STATE=$E2E_TMP/fresh/var/agent
start_agent one "$STATE" --stop-workloads-on-exit
poll 10 node_ready || { _show "agent stderr" "$AGENT_ERR"; fail "node a did not join"; }
_pass
assert_eq "$(stat -c %a "$E2E_TMP/fresh")" 711 "mode of a parent the agent made"
assert_eq "$(stat -c %a "$E2E_TMP/fresh/var")" 711 "mode of a parent the agent made"
as "$RU" -o json job submit sleeper --tenant red --project train --class t4.1x -- "$BIN/awsleep" 3601
assert_rc 0
J1=$(jout .id)
poll 10 procs_are 3601 1 || {
    _show "agent stderr" "$AGENT_ERR"
    fail "the job's workload did not start (state $(job_state "$J1"))"
}
_pass
sleep 1.5 # a workload that cannot enter its folder exits at once (126)
assert_eq "$(procs 3601)" 1 "workloads of the job after 1.5 s"
assert_eq "$(job_state "$J1")" running "the job's state"
if [ "$ROOT" == 1 ]; then
    assert_ne "$(ps -o uid= -p "$(pgrep -f -- "$BIN/awsleep 3601")" | tr -d ' ')" 0 "the workload's uid"
fi

# ---------------------------------------------------------------- --stop-workloads-on-exit
note "--stop-workloads-on-exit: the agent's stop ends the workload"
stop_agent
assert_eq "$(procs 3601)" 0 "workloads left after the agent stopped"
assert_file_contains "$AGENT_ERR" "stopping workload"

note "the default: the workload outlives the agent; an agent with the flag re-adopts and ends it"
start_agent two "$STATE"
# the server still assigns the job to node a: the new agent starts it again
poll 10 procs_are 3601 1 || { _show "agent stderr" "$AGENT_ERR"; fail "the job did not start again"; }
_pass
PID=$(pgrep -f -- "$BIN/awsleep 3601")
stop_agent
sleep 0.5
assert_eq "$(procs 3601)" 1 "workloads after an agent without the flag stopped"
start_agent three "$STATE" --stop-workloads-on-exit
poll 10 node_ready || fail "node a did not come back"
_pass
sleep 2 # a few heartbeats: the workload is adopted, not started twice
assert_eq "$(procs 3601)" 1 "workloads once the agent re-adopted it"
assert_eq "$(pgrep -f -- "$BIN/awsleep 3601")" "$PID" "the re-adopted workload's pid"
stop_agent
assert_eq "$(procs 3601)" 0 "workloads left after the re-adopting agent stopped"

stop_server
done_testing
