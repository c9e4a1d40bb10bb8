#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # workload commands expand on the node; start_server takes optional flags; poll calls helpers indirectly
#
# test_workloads.sh - the node agent runs the jobs' commands, end to end: real
# short shell commands on simulated nodes (`agent --interval 1 --grace 2`).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_workloads.sh
#
# Checked: a workload's clean environment (job id, tenant, project, its GPU,
# MIG or shared-slice devices and the MPS limits; nothing of the agent's own
# environment, e.g. its join token or a SECRET_MARKER); its captured output
# (`job logs`, hidden from another tenant); exit codes (0: succeeded/completed,
# 3: failed "exited 3"); a command that cannot be run; a job without a command;
# time limits; cancel with a grace period (a TERM trap runs; a process ignoring
# TERM is killed after the grace); preemption (the victim's process stops, it
# is requeued, the preemptor runs, then the victim runs again); node loss
# (kill -9 of an agent: --node-timeout 5, requeue/fail per --recovery, bindings
# end node_lost, and what happens when the agent comes back); an agent restart
# (processes re-adopted, never started twice; one that died meanwhile is
# reported with exit 255).
#
# Fleet: agent "main" with nodes a (16x A100 whole), b (1x H100, 2x 3g.40gb MIG),
# c (1x L40S shared), p (1x L4 whole, for preemption); agent "zed" with node
# z (2x T4 whole), the one that is lost; with python3, agent "yy" with node y
# (1x A10 whole), started under a keeper that never reaps.  Tenants red (project train) and blue
# (project serve), each with a project-user.
#
# Long-running workloads run $BIN/wlsleep (a link to sleep, so every such
# process carries this run's temporary folder in its command line): pgrep -f
# on "$BIN/wlsleep N" counts them, and the EXIT trap kills whatever is left.
#
# Regressions of four defects are asserted last, after the server stopped
# cleanly (see the comments there): a job re-placed on the node where its old
# process is being stopped; output that is not UTF-8; only 16 KiB of output
# kept; zombies re-adopted as running.  The zombie check needs python3 (a non-reaping
# subreaper); without it that check is skipped.
. "$(dirname "$0")/lib.sh"

BIN=$E2E_TMP/bin
mkdir -p "$BIN"
ln -s "$(command -v sleep)" "$BIN/wlsleep"

# Kill every workload process of this run (they live in their own sessions and
# outlive agents), then run lib.sh's cleanup with the original exit code.
_wl_kill_all() {
    local pid
    for pid in $(pgrep -f -- "$BIN/" 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null
    done
}
_wl_exit() {
    local rc=$?
    local keeper_agent
    # an agent started under the keeper is not a child of this shell
    if [ -s "$E2E_TMP/yy.pid" ]; then
        keeper_agent=$(cat "$E2E_TMP/yy.pid")
        if grep -qF -- "$E2E_TMP" "/proc/$keeper_agent/cmdline" 2>/dev/null; then
            kill -TERM "$keeper_agent" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                kill -0 "$keeper_agent" 2>/dev/null || break
                sleep 0.2
            done
            kill -KILL "$keeper_agent" 2>/dev/null
        fi
    fi
    _wl_kill_all
    (exit "$rc")
    _e2e_cleanup
}
trap _wl_exit EXIT

# a command that traps TERM, says so and exits 0
cat >"$BIN/trapterm.sh" <<EOF
#!/bin/sh
trap 'echo "got TERM"; exit 0' TERM
echo started
"$BIN/wlsleep" 302 &
wait
EOF
# a command that ignores TERM (the exec'd sleep inherits the ignored signal)
cat >"$BIN/ignterm.sh" <<EOF
#!/bin/sh
trap '' TERM
echo started
exec "$BIN/wlsleep" 303
EOF
chmod +x "$BIN/trapterm.sh" "$BIN/ignterm.sh"

# ---------------------------------------------------------------- helpers

scope_of() {
    case $1 in
    red) echo "red train" ;;
    blue) echo "blue serve" ;;
    esac
}

# sub WHO NAME ARGS...: `job submit NAME ARGS` as WHO's project-user; JID = its id
sub() {
    local who=$1 tok t p
    shift
    read -r t p <<<"$(scope_of "$who")"
    tok=$([ "$who" == red ] && echo "$RU" || echo "$BU")
    as "$tok" -o json job submit --tenant "$t" --project "$p" "$@"
    assert_rc 0
    JID=$(jout .id)
    assert_match "$JID" '^[0-9a-f]{16,}$' "id of job $1"
}

# job WHO VERB ID [ARGS...]: `job VERB ID` as WHO's project-user in WHO's project
job() {
    local who=$1 verb=$2 tok t p
    shift 2
    read -r t p <<<"$(scope_of "$who")"
    tok=$([ "$who" == red ] && echo "$RU" || echo "$BU")
    as "$tok" -o json job "$verb" --tenant "$t" --project "$p" "$@"
}

# jf ID FILTER: a field of red's job ID ("" if the call failed)
jf() {
    job red show "$1"
    [ "$RC" == 0 ] && jout "$2"
}
state_in() { [[ "$(jf "$1" .state)" =~ ^($2)$ ]]; }

# wait_state ID STATE-ERE [SECONDS]: poll until red's job ID is in a matching state
wait_state() {
    poll "${3:-6}" state_in "$1" "$2" ||
        fail "job $1 did not become $2 within ${3:-6} s (state '$(jf "$1" .state)', reason '$(jout .reason)')"
    _pass
}

# logs_of ID FILE: red's `job logs ID` (plain) into FILE
logs_of() {
    as "$RU" job logs "$1" --tenant red --project train
    cp "$OUT_FILE" "$2"
}
log_has() {
    as "$RU" job logs "$1" --tenant red --project train
    [ "$RC" == 0 ] && grep -qF -- "$2" "$OUT_FILE"
}

# assert_line FILE LINE: FILE has LINE as a whole line
assert_line() {
    if grep -qxF -- "$2" "$1"; then _pass; return 0; fi
    _show "$(basename "$1")" "$1"
    fail "$(basename "$1"): no line '$2'"
}

# nproc_of N: how many live processes run "$BIN/wlsleep N" (zombies have no command line)
nproc_of() { pgrep -f -- "$BIN/wlsleep $1\$" | wc -l; }
procs_are() { [ "$(nproc_of "$1")" == "$2" ]; }
wait_procs() {
    poll "${3:-6}" procs_are "$1" "$2" ||
        fail "expected $2 process(es) of 'wlsleep $1' within ${3:-6} s, found $(nproc_of "$1")"
    _pass
}

# start_agent LABEL STATE-DIR INVENTORY: an agent (heartbeat every second, grace 2 s)
# whose own environment holds things that must never reach a workload
start_agent() {
    local label=$1
    AGENT_ERR=$E2E_TMP/agent.$label.err
    GPUPOOL_JOIN_TOKEN=$JT GPUPOOL_TOKEN=$ADMIN SECRET_MARKER=xyz-agent-secret \
        "$GPUPOOL_BIN" --server "$URL" agent --inventory "$3" --state-dir "$2" \
        --interval 1 --grace 2 >>"$E2E_TMP/agent.$label.out" 2>>"$AGENT_ERR" </dev/null &
    AGENT_PID=$!
    E2E_PIDS+=("$AGENT_PID")
}

# start_agent_under_keeper LABEL STATE-DIR INVENTORY: start_agent, but as the child
# of a python3 "keeper" that is a child subreaper and never reaps orphans: when
# the agent is gone its workloads become the keeper's children, and one that
# dies stays a zombie (as under a container init that does not reap).  Sets
# KEEPER_PID; the agent's pid is in $E2E_TMP/LABEL.pid, its exit code (once it
# ended) in $E2E_TMP/LABEL.exit.
start_agent_under_keeper() {
    local label=$1
    AGENT_ERR=$E2E_TMP/agent.$label.err
    GPUPOOL_JOIN_TOKEN=$JT GPUPOOL_TOKEN=$ADMIN SECRET_MARKER=xyz-agent-secret \
        python3 -c 'import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
open(sys.argv[1], "w").write(str(pid))
st = os.waitpid(pid, 0)[1]  # the agent only; orphans are never reaped
open(sys.argv[2], "w").write(str(st >> 8 if st & 0x7f == 0 else 128 + (st & 0x7f)))
while True:
    time.sleep(60)' "$E2E_TMP/$label.pid" "$E2E_TMP/$label.exit" \
        "$GPUPOOL_BIN" --server "$URL" agent --inventory "$3" --state-dir "$2" \
        --interval 1 --grace 2 >>"$E2E_TMP/agent.$label.out" 2>>"$AGENT_ERR" </dev/null &
    KEEPER_PID=$!
    E2E_PIDS+=("$KEEPER_PID")
}

# stop_agent PID ERR: SIGTERM the agent; it exits 0 promptly, without a sanitizer report
stop_agent() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null
    if ! _wait_exit "$pid" 10; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        _forget_pid "$pid"
        fail "agent (pid $pid) did not stop within 10 s of SIGTERM"
    fi
    _forget_pid "$pid"
    assert_eq "$_EXIT" 0 "exit code of the agent after SIGTERM"
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$2"; then
        grep -E -A30 'Sanitizer|runtime error:' "$2" | head -n 60 | sed 's/^/    | /' >&2
        fail "agent printed a sanitizer report"
    fi
    _pass
}

node_state() {
    gp -o json node list
    jout ".items[] | select(.name == \"$1\") | .state"
}
node_is() { [ "$(node_state "$1")" == "$2" ]; }

MAIN_STATE=$E2E_TMP/state-main
ZED_STATE=$E2E_TMP/state-zed
cat >"$E2E_TMP/main.json" <<'EOF'
{"nodes":[
 {"name":"a","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":16,"mode":"whole"}]},
 {"name":"b","cpus":64,"memory_gib":512,
  "gpus":[{"model":"H100-80GB","memory_gib":80,"count":1,"mode":"mig","mig":["3g.40gb","3g.40gb"]}]},
 {"name":"c","cpus":32,"memory_gib":256,
  "gpus":[{"model":"L40S","memory_gib":48,"count":1,"mode":"shared"}]},
 {"name":"p","cpus":16,"memory_gib":64,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF
cat >"$E2E_TMP/yy.json" <<'EOF'
{"nodes":[
 {"name":"y","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A10","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF
cat >"$E2E_TMP/zed.json" <<'EOF'
{"nodes":[
 {"name":"z","cpus":16,"memory_gib":64,
  "gpus":[{"model":"T4","memory_gib":16,"count":2,"mode":"whole"}]}]}
EOF
for u in ru bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

# ---------------------------------------------------------------- setup
# 5 s: an agent restart (stop, a kill, a start under ASan) stays well inside it
start_server --node-timeout 5
note "server at $URL"
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600 --uses 6 # nodes a, b, c, p, z and y
assert_rc 0
JT=$(jout .token)
start_agent main "$MAIN_STATE" "$E2E_TMP/main.json"
MAIN_PID=$AGENT_PID
MAIN_ERR=$AGENT_ERR
start_agent zed "$ZED_STATE" "$E2E_TMP/zed.json"
ZED_PID=$AGENT_PID
ZED_ERR=$AGENT_ERR
NNODES=5
HAVE_PY=0
if command -v python3 >/dev/null 2>&1; then
    HAVE_PY=1
    NNODES=6
    YY_STATE=$E2E_TMP/state-yy
    start_agent_under_keeper yy "$YY_STATE" "$E2E_TMP/yy.json"
    YY_ERR=$AGENT_ERR
else
    note "no python3: the zombie check is skipped"
fi
fleet_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == "$NNODES" ]
}
poll 10 fleet_ready || { _show "agent stderr" "$MAIN_ERR"; fail "the fleet did not register within 10 s"; }
_pass
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create h100.3g --form mig:3g.40gb --models H100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create l40s.12g --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0
gp class create l4.1x --form whole --models L4 --cpus 1 --memory 1
assert_rc 0
gp class create t4.1x --form whole --models T4 --cpus 1 --memory 1
assert_rc 0
gp class create a10.1x --form whole --models A10 --cpus 1 --memory 1
assert_rc 0
gp priority create high --value 1000 --may-preempt yes --preemptible no
assert_rc 0
gp priority create low --value 10
assert_rc 0
gp tenant create red
assert_rc 0
gp tenant create blue
assert_rc 0
gp project create train --tenant red --class development
assert_rc 0
gp project create serve --tenant blue --class production
assert_rc 0
for u in ru bu; do
    run_in "$E2E_TMP/pw.$u" --server "$URL" --token "$ADMIN" user create "$u"
    assert_rc 0
done
gp member grant ru project-user --tenant red --project train
assert_rc 0
gp member grant bu project-user --tenant blue --project serve
assert_rc 0
login() {
    run_in "$E2E_TMP/pw.$1" --server "$URL" login "$1"
    assert_rc 0
    head -n 1 "$OUT_FILE"
}
RU=$(login ru)
BU=$(login bu)
assert_match "$RU/$BU" '^gpt_[^/]+/gpt_[^/]+$' "login tokens"

# ---------------------------------------------------------------- submit a batch at once
note "submitting: environment, exit codes, time limit, cancel, preemption, node loss"
sub red env2 --class a100.1x --units 2 -- /usr/bin/env
ENV2=$JID
# placed by the first round; events reach the agent at once, so a command this short may
# already have ended by the time `job submit` shows the job
assert_match "$(jout .state)" '^(running|succeeded)$' "state of env2 after its first round"
sub red envm --class h100.3g -- env
ENVM=$JID
sub red envs --class l40s.12g -- env
ENVS=$JID
sub red ok0 --class a100.1x -- sh -c 'echo "hello from $GPUPOOL_JOB_ID"; echo "to stderr" >&2; pwd'
OK0=$JID
sub red ex3 --class a100.1x -- sh -c 'echo "about to fail"; exit 3'
EX3=$JID
sub red nocmd --class a100.1x -- no-such-command-xyz --flag
NOCMD=$JID
sub red tl --class a100.1x --time-limit 1 -- "$BIN/wlsleep" 301
TL=$JID
assert_json .time_limit_s 1 "$OUT_FILE"
sub red tt --class a100.1x -- "$BIN/trapterm.sh"
TT=$JID
sub red it --class a100.1x -- "$BIN/ignterm.sh"
IT=$JID
sub red hold --class a100.1x
HOLD=$JID
assert_json '.command | length' 0 "$OUT_FILE"
sub red pl --class l4.1x --priority-class low -- "$BIN/wlsleep" 304
PL=$JID
assert_json .preemptible true "$OUT_FILE"
# probes: output that is not UTF-8; 39200 bytes of output (more than one 16 KiB report)
sub red bin --class a100.1x -- sh -c 'printf "before\\377\\376after\\n"; exit 0'
BINJ=$JID
sub red big --class a100.1x -- sh -c 'i=10000; while [ $i -lt 10800 ]; do echo "line $i ....................................."; i=$((i + 1)); done'
BIG=$JID
YD=""
if [ "$HAVE_PY" == 1 ]; then
    sub red yd --class a10.1x -- "$BIN/wlsleep" 331
    YD=$JID
fi
sub red zr --class t4.1x -- "$BIN/wlsleep" 311
ZR=$JID
sub red zf --class t4.1x --recovery fail -- "$BIN/wlsleep" 312
ZF=$JID
for id in "$ENVM" "$ENVS" "$OK0" "$EX3" "$NOCMD" "$TL" "$TT" "$IT" "$HOLD" "$PL" "$ZR" "$ZF" "$BINJ" "$BIG" $YD; do
    # each is placed at once (or by the next round), and may already have ended
    wait_state "$id" 'running|succeeded|failed' 3
done

# the node of z is lost early, so that its timeout runs while the rest is checked
note "node loss: kill -9 the agent of node z"
wait_procs 311 1
wait_procs 312 1
wait_state "$ZR" running 1
wait_state "$ZF" running 1
kill -KILL "$ZED_PID"
wait "$ZED_PID" 2>/dev/null
_forget_pid "$ZED_PID"
T_ZED_KILLED=$(_now_ms)

# ---------------------------------------------------------------- environment
note "the environment of a workload"
wait_state "$ENV2" succeeded
job red show "$ENV2"
assert_json .exit_code 0 "$OUT_FILE"
assert_json .reason "exited 0" "$OUT_FILE"
assert_json '[.bindings[].end_reason] | unique | join(",")' completed "$OUT_FILE"
assert_json '.bindings | length' 2 "$OUT_FILE"
ENV2_GPUS=$(jout '.bindings | sort_by(.unit) | map(.gpu) | join(",")')
assert_match "$ENV2_GPUS" '^GPU-[^,]+,GPU-[^,]+$' "GPUs of env2"
logs_of "$ENV2" "$E2E_TMP/env2.log"
assert_line "$E2E_TMP/env2.log" "GPUPOOL_JOB_ID=$ENV2"
assert_line "$E2E_TMP/env2.log" "GPUPOOL_TENANT=red"
assert_line "$E2E_TMP/env2.log" "GPUPOOL_PROJECT=train"
assert_line "$E2E_TMP/env2.log" "GPUPOOL_VENDOR=nvidia"
assert_line "$E2E_TMP/env2.log" "CUDA_VISIBLE_DEVICES=$ENV2_GPUS"
assert_line "$E2E_TMP/env2.log" "NVIDIA_VISIBLE_DEVICES=$ENV2_GPUS"
assert_line "$E2E_TMP/env2.log" "HOME=$MAIN_STATE/work/$ENV2"
assert_line "$E2E_TMP/env2.log" "PATH=/usr/local/bin:/usr/bin:/bin"
assert_line "$E2E_TMP/env2.log" "TMPDIR=$MAIN_STATE/work/$ENV2/tmp"
assert_file_lacks "$E2E_TMP/env2.log" "CUDA_MPS_"
# nothing of the agent's own environment
for leak in xyz-agent-secret SECRET_MARKER GPUPOOL_TOKEN GPUPOOL_JOIN_TOKEN "$JT" "$ADMIN" ASAN_OPTIONS XDG_CONFIG_HOME; do
    assert_file_lacks "$E2E_TMP/env2.log" "$leak" "env2's environment (agent's $leak)"
done
assert_eq "$(grep -cE '^[A-Za-z_][A-Za-z0-9_]*=' "$E2E_TMP/env2.log" | tr -d ' ')" \
    "$(grep -cE '^(PATH|HOME|TMPDIR|GPUPOOL_JOB_ID|GPUPOOL_TENANT|GPUPOOL_PROJECT|GPUPOOL_VENDOR|CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES)=' "$E2E_TMP/env2.log" | tr -d ' ')" \
    "variables in env2's environment beyond the documented ones"
# the node keeps the output in the job's folder
assert_file_contains "$MAIN_STATE/work/$ENV2/output.log" "GPUPOOL_JOB_ID=$ENV2"

note "a MIG slice: its MIG uuid"
wait_state "$ENVM" succeeded
job red show "$ENVM"
ENVM_SLICE=$(jout '.bindings[0].slice')
assert_match "$ENVM_SLICE" '^MIG-' "slice of envm"
logs_of "$ENVM" "$E2E_TMP/envm.log"
assert_line "$E2E_TMP/envm.log" "CUDA_VISIBLE_DEVICES=$ENVM_SLICE"
assert_line "$E2E_TMP/envm.log" "NVIDIA_VISIBLE_DEVICES=$ENVM_SLICE"
assert_line "$E2E_TMP/envm.log" "GPUPOOL_JOB_ID=$ENVM"
assert_file_lacks "$E2E_TMP/envm.log" "CUDA_MPS_"
assert_file_lacks "$E2E_TMP/envm.log" "xyz-agent-secret"

note "a shared slice: the MPS limits"
wait_state "$ENVS" succeeded
job red show "$ENVS"
ENVS_GPU=$(jout '.bindings[0].gpu')
assert_json '.bindings[0].form' "shared:12/25" "$OUT_FILE"
logs_of "$ENVS" "$E2E_TMP/envs.log"
assert_line "$E2E_TMP/envs.log" "CUDA_VISIBLE_DEVICES=$ENVS_GPU"
assert_line "$E2E_TMP/envs.log" "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"
assert_match "$(grep '^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=' "$E2E_TMP/envs.log")" \
    "^CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=($ENVS_GPU|0)=12G$" "the shared slice's memory limit"
assert_file_lacks "$E2E_TMP/envs.log" "xyz-agent-secret"

# ---------------------------------------------------------------- logs and exit codes
note "exit 0: succeeded, completed; output in job logs"
wait_state "$OK0" succeeded
job red show "$OK0"
assert_json '"\(.state) \(.reason) \(.exit_code)"' "succeeded exited 0 0" "$OUT_FILE"
assert_json '[.bindings[].end_reason] | join(",")' completed "$OUT_FILE"
assert_match "$(jout '.bindings[0].end')" '^20' "end of ok0's binding"
assert_match "$(jout .ended_at)" '^20' "ended_at of ok0"
assert_json '[.events[] | select(.kind == "exited") | .message] | join("|")' "exited 0" "$OUT_FILE"
as "$RU" job logs "$OK0" --tenant red --project train
assert_rc 0
assert_file_contains "$OUT_FILE" "hello from $OK0"
assert_file_contains "$OUT_FILE" "to stderr"
assert_line "$OUT_FILE" "$MAIN_STATE/work/$OK0"
job red logs "$OK0"
assert_rc 0
assert_json .exit_code 0 "$OUT_FILE"
assert_json .state succeeded "$OUT_FILE"
assert_contains "$(jout .log)" "hello from $OK0" "job logs -o json"
# another tenant's user: not found, through either project
as "$BU" job logs "$OK0" --tenant red --project train
assert_denied 404
as "$BU" job logs "$OK0" --tenant blue --project serve
assert_denied 404
as "$RU" job logs 0123456789abcdef0123 --tenant red --project train
assert_denied 404

note "exit 3: failed, exited 3"
wait_state "$EX3" failed
job red show "$EX3"
assert_json '"\(.state)|\(.reason)|\(.exit_code)"' "failed|exited 3|3" "$OUT_FILE"
assert_json '[.bindings[].end_reason] | join(",")' failed "$OUT_FILE"
assert_match "$(jout .ended_at)" '^20' "ended_at of ex3"
as "$RU" job logs "$EX3" --tenant red --project train
assert_rc 0
assert_file_contains "$OUT_FILE" "about to fail"

note "a command that cannot be run: 127"
wait_state "$NOCMD" failed
job red show "$NOCMD"
assert_json '"\(.state)|\(.exit_code)"' "failed|127" "$OUT_FILE"
assert_match "$(jout .reason)" '^exited 127' "reason of nocmd"
as "$RU" job logs "$NOCMD" --tenant red --project train
assert_file_contains "$OUT_FILE" "no-such-command-xyz"

note "a job without a command holds its GPUs"
job red show "$HOLD"
assert_json '"\(.state) \(.exit_code)"' "running null" "$OUT_FILE"
assert_eq "$(find "$MAIN_STATE/work" -maxdepth 1 -name "$HOLD" | wc -l | tr -d ' ')" 0 "work folder of the job without a command"
job red cancel "$HOLD"
assert_rc 0
assert_json .state cancelled "$OUT_FILE"

# ---------------------------------------------------------------- time limit
note "time limit: stopped, failed"
wait_state "$TL" failed 6
job red show "$TL"
assert_json '"\(.state)|\(.reason)"' "failed|time limit reached; stopped" "$OUT_FILE"
assert_json '[.bindings[].end_reason] | join(",")' time_limit "$OUT_FILE"
assert_match "$(jout .exit_code)" '^[0-9]+$' "exit code of the stopped tl"
assert_ne "$(jout .exit_code)" 0 "exit code of the stopped tl"
wait_procs 301 0 1

# ---------------------------------------------------------------- cancel with a grace
note "cancel: TERM, then KILL after the grace"
poll 5 log_has "$TT" started || fail "trapterm did not start"
_pass
poll 5 log_has "$IT" started || fail "ignterm did not start"
_pass
wait_procs 302 1
wait_procs 303 1
job red cancel "$TT"
assert_rc 0
assert_json .state cancelled "$OUT_FILE"
job red cancel "$IT"
assert_rc 0
assert_json .state cancelled "$OUT_FILE"
T_CANCEL=$(_now_ms)
# the TERM trap runs, its output still reaches the job's log
poll 5 log_has "$TT" "got TERM" || { _show logs "$OUT_FILE"; fail "trapterm's log never showed 'got TERM'"; }
_pass
wait_procs 302 0 2
# the one ignoring TERM lives through the grace, then is killed
wait_procs 303 0 8
T_GONE=$(_now_ms)
assert_match "$((T_GONE - T_CANCEL))" '^[0-9]+$' "ms from cancel to kill"
[ $((T_GONE - T_CANCEL)) -ge 1900 ] || fail "ignterm was gone $((T_GONE - T_CANCEL)) ms after the cancel, before its 2 s grace"
_pass
# a late exit report does not overwrite the cancel
sleep 1.2
for id in "$TT" "$IT"; do
    job red show "$id"
    assert_json '"\(.state) \(.exit_code)"' "cancelled null" "$OUT_FILE"
    assert_json '[.bindings[].end_reason] | join(",")' cancelled "$OUT_FILE"
done

# ---------------------------------------------------------------- preemption
note "preemption: the victim's process stops, the preemptor runs, the victim runs again"
wait_state "$PL" running 1
wait_procs 304 1
job red show "$PL"
PL_GPU=$(jout '.bindings[0].gpu')
sub red ph --class l4.1x --priority-class high -- sh -c 'echo "high ran on $CUDA_VISIBLE_DEVICES"; pgrep -f "wlsleep 30[4]" >/dev/null && echo "victim still there" || echo "victim gone"'
PH=$JID
wait_state "$PH" succeeded 8
job red show "$PH"
assert_json '[.bindings[] | "\(.gpu) \(.end_reason)"] | join(",")' "$PL_GPU completed" "$OUT_FILE"
as "$RU" job logs "$PH" --tenant red --project train
assert_file_contains "$OUT_FILE" "high ran on $PL_GPU"
# the victim (a sleep, which TERM ends at once) was stopped before the preemptor started
assert_file_contains "$OUT_FILE" "victim gone"
job red show "$PL"
assert_json .preemptions 1 "$OUT_FILE"
assert_json '.bindings | sort_by(.start) | .[0].end_reason' preempted "$OUT_FILE"
assert_json '[.events[] | select(.kind == "preempted") | .message] | length' 1 "$OUT_FILE"
assert_match "$(jout '[.events[] | select(.kind == "preempted") | .message] | .[0]')" '^requeued: ' "preemption event of pl"
# the preemptor is done: the victim is placed again, with one fresh process
wait_state "$PL" running 5
wait_procs 304 1 5
sleep 1.2
assert_eq "$(nproc_of 304)" 1 "processes of pl after it runs again"
job red show "$PL"
assert_json .state running "$OUT_FILE"
assert_json '[.bindings | sort_by(.start)[] | .end_reason // "open"] | join(",")' "preempted,open" "$OUT_FILE"
job red cancel "$PL"
assert_rc 0
wait_procs 304 0 5

# ---------------------------------------------------------------- node loss
note "node loss: z unreachable, jobs requeued or failed"
poll 15 node_is z unreachable || fail "node z is '$(node_state z)' 15 s after its agent was killed"
_pass
T_UNREACH=$(_now_ms)
[ $((T_UNREACH - T_ZED_KILLED)) -ge 3900 ] || fail "node z was unreachable $((T_UNREACH - T_ZED_KILLED)) ms after the kill (timeout 5 s)"
_pass
wait_state "$ZF" failed 3
job red show "$ZF"
assert_json .reason "failed: node z lost" "$OUT_FILE"
assert_json '[.bindings[].end_reason] | join(",")' node_lost "$OUT_FILE"
wait_state "$ZR" 'queued|admitted' 3
job red show "$ZR"
assert_match "$(jout '[.events[] | select(.kind == "node_lost") | .message] | join("|")')" '^requeued: node z lost$' "node_lost event of zr"
assert_json '[.bindings[].end_reason] | join(",")' node_lost "$OUT_FILE"
gp -o json binding list --job "$ZR"
assert_json '[.items[] | select(.end == null)] | length' 0 "$OUT_FILE"
# nobody is left on z to stop them: the orphans run on
assert_eq "$(nproc_of 311)/$(nproc_of 312)" "1/1" "orphaned processes of zr/zf while z is lost"

note "node z comes back: its orphans are stopped; the requeued job runs again"
start_agent zed "$ZED_STATE" "$E2E_TMP/zed.json"
ZED_PID=$AGENT_PID
poll 5 node_is z ready || fail "node z did not come back"
_pass
# zf failed: its orphaned process is stopped and stays stopped
wait_procs 312 0 6
# zr was requeued; z is free again, so it is placed there again
wait_state "$ZR" 'running|failed' 5
sleep 3.5 # the orphan's stop (grace 2 s) and its report have passed
ZR_AFTER=$(jf "$ZR" '"\(.state)|\(.reason)"')
ZR_PROCS=$(nproc_of 311)

# ---------------------------------------------------------------- probes
note "output that is not UTF-8; output over 16 KiB"
poll 3 state_in "$BINJ" 'succeeded|failed'
BIN_AFTER=$(jf "$BINJ" '"\(.state)|\(.reason)"')
wait_state "$BIG" succeeded
as "$RU" job logs "$BIG" --tenant red --project train
assert_rc 0
assert_line "$OUT_FILE" "line 10799 ....................................."
BIG_BYTES=$(wc -c <"$OUT_FILE" | tr -d ' ')
BIG_FIRST=$(head -n 1 "$OUT_FILE")
assert_eq "$(wc -c <"$MAIN_STATE/work/$BIG/output.log" | tr -d ' ')" $((800 * 49)) "bytes in big's output.log on the node"

# ---------------------------------------------------------------- a dead process kept as a zombie
YD_AFTER="skipped"
if [ "$HAVE_PY" == 1 ]; then
    note "agent restart while a workload that died is still a zombie"
    wait_state "$YD" running 1
    wait_procs 331 1
    YY_AGENT=$(cat "$E2E_TMP/yy.pid")
    kill -TERM "$YY_AGENT"
    poll 10 test -s "$E2E_TMP/yy.exit" || fail "agent yy did not stop within 10 s of SIGTERM"
    assert_eq "$(cat "$E2E_TMP/yy.exit")" 0 "exit code of agent yy after SIGTERM"
    YD_PID=$(pgrep -f -- "$BIN/wlsleep 331\$")
    kill -KILL "$YD_PID"
    zombie() { [ "$(ps -o stat= -p "$YD_PID" | cut -c1)" == Z ]; }
    poll 3 zombie || fail "yd's process $YD_PID did not become a zombie of the keeper"
    _pass
    start_agent yy "$YY_STATE" "$E2E_TMP/yy.json"
    YY_PID=$AGENT_PID
    poll 5 state_in "$YD" failed
    YD_AFTER=$(jf "$YD" '"\(.state)|\(.exit_code)"')
    [ "$(jf "$YD" .state)" == running ] && { job red cancel "$YD"; assert_rc 0; }
    stop_agent "$YY_PID" "$YY_ERR"
fi

# ---------------------------------------------------------------- agent restart
note "agent restart: workloads re-adopted, never started twice"
sub red rs --class a100.1x -- "$BIN/wlsleep" 321
RS=$JID
sub red rd --class a100.1x -- "$BIN/wlsleep" 322
RD=$JID
wait_procs 321 1
wait_procs 322 1
wait_state "$RS" running 1
RS_PID=$(pgrep -f -- "$BIN/wlsleep 321\$")
stop_agent "$MAIN_PID" "$MAIN_ERR"
assert_file_contains "$MAIN_STATE/workloads.json" "$RS"
# one dies while no agent watches it
kill -KILL "$(pgrep -f -- "$BIN/wlsleep 322\$")"
start_agent main "$MAIN_STATE" "$E2E_TMP/main.json"
MAIN_PID=$AGENT_PID
sleep 2.5 # a couple of heartbeats
assert_eq "$(nproc_of 321)" 1 "processes of rs after the agent restart"
assert_eq "$(pgrep -f -- "$BIN/wlsleep 321\$")" "$RS_PID" "pid of rs's process after the restart"
job red show "$RS"
assert_json .state running "$OUT_FILE"
assert_json '[.bindings[] | select(.end == null)] | length' 1 "$OUT_FILE"
assert_file_contains "$MAIN_ERR" "re-adopted"
job red cancel "$RS"
assert_rc 0
wait_procs 321 0 5
# the one that died meanwhile is reported with exit 255 (asserted at the end: where
# init reaps orphans lazily it may still be a zombie when the agent starts, see yd)
poll 5 state_in "$RD" failed
RD_AFTER=$(jf "$RD" '"\(.state)|\(.exit_code)"')
if [ "$RD_AFTER" == "failed|255" ]; then
    assert_match "$(jout .reason)" '^exited 255: ' "reason of rd"
    assert_json '[.bindings[].end_reason] | join(",")' failed "$OUT_FILE"
else
    job red cancel "$RD"
    assert_rc 0
fi

# ---------------------------------------------------------------- the end
note "stop"
if state_in "$ZR" 'running|queued|admitted'; then
    job red cancel "$ZR"
    assert_rc 0
fi
stop_agent "$ZED_PID" "$ZED_ERR"
stop_agent "$MAIN_PID" "$MAIN_ERR"
stop_server

assert_eq "$RD_AFTER" "failed|255" "state|exit_code of rd, killed while its agent was down"

note "regressions of four defects found while writing this test"
note "observed: zr '$ZR_AFTER' (processes: $ZR_PROCS); bin '$BIN_AFTER'; big: $BIG_BYTES bytes kept, from '$BIG_FIRST'; yd '$YD_AFTER'"
# 1. A job re-placed on a node where its previous process is still being
#    stopped must get a new process, and the old process's exit must not end
#    the new placement: assignments carry a placement id (the first binding
#    id), echoed in the agent's report and matched by jobs_node_report.
assert_eq "$ZR_AFTER" "running|running on z" "state|reason of zr after z came back"
assert_eq "$ZR_PROCS" 1 "processes of zr after z came back"
# 2. Output that is not valid UTF-8 is cleaned ('?') before it goes into the
#    heartbeat's JSON, so the exit is reported and the job ends.
assert_eq "$BIN_AFTER" "succeeded|exited 0" "state|reason of a job whose output is not UTF-8"
# 3. The server keeps the last 64 KiB of output: the agent sends only what is
#    new since the last acknowledged report (up to 64 KiB for an exited
#    workload) and jobs_node_report appends it.
assert_eq "$BIG_FIRST" "line 10000 ....................................." "first line kept of big's 39200 bytes of output"
# 4. A workload that died while its agent was down but is still a zombie is
#    not re-adopted as running: /proc/PID/stat's state field is checked.
[ "$YD_AFTER" == skipped ] || assert_eq "$YD_AFTER" "failed|255" "state|exit_code of yd, dead (a zombie) when its agent restarted"
done_testing
