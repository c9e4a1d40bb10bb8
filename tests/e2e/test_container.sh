#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317  # workload commands expand on the node; poll calls helpers indirectly
#
# test_container.sh - jobs with an image (`job submit --image REF`) run under
# the node's container runtime (`gpupool agent --runtime R`), end to end.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_container.sh
#
# There is no podman or docker daemon here: the runtime is a stand-in,
# $BIN/fake-podman, that records its argument list (one per line) and its own
# environment under $RT/, then does what a container would: runs the command
# after the image with only the -e variables (env -i), or prints "ran IMAGE"
# when there is none; `fake-podman kill NAME` is recorded in $RT/kill.log.
#
# Checked: the exact argument list (run --rm --name gpupool-<job>-<placement>,
# one --device nvidia.com/gpu=<UUID> per GPU or MIG slice of the job, -e for
# the job's variables, --cpus/--memory from the class only when it sets them,
# --workdir /work, -v <job folder>:/work, the image, the command); nothing of
# the agent's environment (its join token, a SECRET_MARKER) in the arguments,
# in the runtime's environment or in the container's; output through `job
# logs`; exit codes (0 succeeded, 7 failed "exited 7"); cancel (TERM, and
# `R kill NAME` plus SIGKILL after the grace period for a container ignoring
# TERM); the time limit; an image on a node whose agent has no --runtime
# (exit 126 with the reason); --image validation (HTTP 400, CLI one-line
# error); a command-only job on the runtime's node still runs directly; the
# agent refusing a --runtime that names no executable; the --help texts.
#
# Fleet: agent "rt" (--runtime fake-podman) with nodes m (4x A100 whole) and
# h (1x H100 as 2x 3g.40gb MIG); agent "plain" (no runtime) with node k (1x T4).
. "$(dirname "$0")/lib.sh"

BIN=$E2E_TMP/bin
RT=$E2E_TMP/rt
mkdir -p "$BIN" "$RT"
ln -s "$(command -v sleep)" "$BIN/ctrsleep"
_ctr_exit() {
    local rc=$? pid
    for pid in $(pgrep -f -- "$BIN/ctrsleep" 2>/dev/null); do
        kill -KILL "$pid" 2>/dev/null
    done
    (exit "$rc")
    _e2e_cleanup
}
trap _ctr_exit EXIT

cat >"$BIN/fake-podman" <<EOF
#!/bin/sh
# a stand-in container runtime: see the head of test_container.sh
RT='$RT'
if [ "\$1" = kill ]; then
    echo "kill \$2" >>"\$RT/kill.log"
    exit 0
fi
[ "\$1" = run ] || { echo "fake-podman: unknown command \$1" >&2; exit 125; }
name=unnamed
for a in "\$@"; do
    case \$prev in --name) name=\$a ;; esac
    prev=\$a
done
printf '%s\n' "\$0" "\$@" >"\$RT/\$name.args"
env >"\$RT/\$name.env"
echo "\$name" >>"\$RT/calls.log"
shift
vars=
while [ \$# -gt 0 ]; do
    case \$1 in
    --rm) shift ;;
    -e) vars="\$vars
\$2"; shift 2 ;;
    --name|--device|--cpus|--memory|--workdir|-v) shift 2 ;;
    -*) echo "fake-podman: unknown option \$1" >&2; exit 125 ;;
    *) break ;;
    esac
done
image=\$1
shift
[ \$# -gt 0 ] || { echo "ran \$image"; exit 0; }
# the container: only the -e variables (none of them holds a newline)
IFS='
'
# shellcheck disable=SC2086
exec env -i \$vars "\$@"
EOF
chmod +x "$BIN/fake-podman"

cat >"$E2E_TMP/rt.json" <<'EOF'
{"nodes":[
 {"name":"m","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"h","cpus":64,"memory_gib":512,
  "gpus":[{"model":"H100-80GB","memory_gib":80,"count":1,"mode":"mig","mig":["3g.40gb","3g.40gb"]}]}]}
EOF
cat >"$E2E_TMP/plain.json" <<'EOF'
{"nodes":[
 {"name":"k","cpus":16,"memory_gib":64,
  "gpus":[{"model":"T4","memory_gib":16,"count":1,"mode":"whole"}]}]}
EOF
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"

note "usage: --runtime must name an executable; the help texts"
run_cli --server http://127.0.0.1:9 agent --runtime "$E2E_TMP/nosuch" --inventory "$E2E_TMP/rt.json" \
    --state-dir "$E2E_TMP/st0" --once --join-token x
assert_rc 1
assert_one_line_error "--runtime $E2E_TMP/nosuch: no executable file"
run_cli --server http://127.0.0.1:9 agent --runtime no-such-runtime-gpupool \
    --inventory "$E2E_TMP/rt.json" --state-dir "$E2E_TMP/st0" --once --join-token x
assert_rc 1
assert_one_line_error "--runtime no-such-runtime-gpupool: no executable file"
run_cli agent --help
assert_rc 0
assert_file_contains "$OUT_FILE" "--runtime R"
assert_file_contains "$OUT_FILE" "nvidia.com/gpu="
run_cli job submit --help
assert_rc 0
assert_file_contains "$OUT_FILE" "--image REF"

start_server
note "server at $URL"
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600 --uses 3 # nodes m, h and k
assert_rc 0
JT=$(jout .token)

# start_agent LABEL INVENTORY [ARGS...]: an agent whose environment holds secrets
start_agent() {
    local label=$1 inv=$2
    shift 2
    AGENT_ERR=$E2E_TMP/agent.$label.err
    GPUPOOL_JOIN_TOKEN=$JT GPUPOOL_TOKEN=$ADMIN SECRET_MARKER=xyz-agent-secret \
        "$GPUPOOL_BIN" --server "$URL" agent --inventory "$inv" --state-dir "$E2E_TMP/state-$label" \
        --interval 1 --grace 2 "$@" >"$E2E_TMP/agent.$label.out" 2>"$AGENT_ERR" </dev/null &
    AGENT_PID=$!
    E2E_PIDS+=("$AGENT_PID")
}
stop_agent() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null
    _wait_exit "$pid" 10 || fail "agent (pid $pid) did not stop within 10 s of SIGTERM"
    _forget_pid "$pid"
    assert_eq "$_EXIT" 0 "exit code of the agent after SIGTERM"
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$2"; then
        _show "agent stderr" "$2"
        fail "agent printed a sanitizer report"
    fi
    _pass
}
start_agent rt "$E2E_TMP/rt.json" --runtime "$BIN/fake-podman"
RT_PID=$AGENT_PID
RT_ERR=$AGENT_ERR
start_agent plain "$E2E_TMP/plain.json"
PLAIN_PID=$AGENT_PID
PLAIN_ERR=$AGENT_ERR
ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 3 ]
}
poll 10 ready || { _show "agent stderr" "$RT_ERR"; fail "the nodes did not register"; }
_pass
assert_file_contains "$RT_ERR" "jobs with an image run in containers"

gp class create a100.c4 --form whole --models A100-80GB --cpus 4 --memory 16
assert_rc 0
gp class create h100.3g --form mig:3g.40gb --models H100-80GB --cpus 0 --memory 0
assert_rc 0
gp class create t4.1x --form whole --models T4 --cpus 1 --memory 1
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
    assert_match "$JID" '^[0-9a-f]{16,}$' "id of job $1"
}
jshow() { as "$RU" -o json job show "$1" --tenant red --project train; }
state_of() {
    jshow "$1"
    echo "$(jout .state)|$(jout .reason)"
}
ended() { [[ "$(state_of "$1")" =~ ^(succeeded|failed|cancelled)\| ]]; }
wait_end() {
    poll "${2:-10}" ended "$1" || fail "job $1 did not end: $(state_of "$1")"
    _pass
}
logs_of() {
    as "$RU" job logs "$1" --tenant red --project train
    cp "$OUT_FILE" "$E2E_TMP/logs.$1"
}
# placement and devices of a job (its bindings in unit order)
placement_of() {
    jshow "$1"
    jout '.bindings | sort_by(.unit) | .[0].id'
}
devices_of() {
    jshow "$1"
    jout '[.bindings | sort_by(.unit)[] | (.slice // .gpu)] | join(",")'
}
args_of() { cat "$RT/gpupool-$1-$(placement_of "$1").args"; }

note "--image validation: HTTP 400 and the CLI's one-line error"
P=/api/v1/tenants/red/projects/train/jobs
for bad in '""' '"two words"' '"tab\there"' '"-privileged"' '"caf\u00e9:1"' '42' \
    "\"$(printf 'r%.0s' $(seq 256))\""; do
    AUTH_HEADER="Authorization: Bearer $RU" api POST "$P" "{\"name\":\"bad\",\"class\":\"a100.c4\",\"image\":$bad}"
    assert_status 400
    assert_json '.error.code' invalid_argument
    assert_contains "$(jq -r .error.message "$BODY_FILE")" "image"
done
AUTH_HEADER="Authorization: Bearer $RU" api POST "$P" "{\"name\":\"ok255\",\"class\":\"t4.1x\",\"image\":\"$(printf 'r%.0s' $(seq 255))\"}"
assert_status 201
OK255=$(jq -r .id "$BODY_FILE")
as "$RU" job submit bad --tenant red --project train --class a100.c4 --image 'bad ref'
assert_rc 1
assert_one_line_error "field 'image' ('bad ref') is not valid: OCI image reference"
assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of a refused job submit"

note "a container job: its exact argument list, output, exit 0"
IMG=registry.example.com/team/train:1.0
sub ok --class a100.c4 --units 2 --image "$IMG" -- sh -c 'echo "in $GPUPOOL_JOB_ID at $(pwd)"; env | sort'
OK=$JID
assert_json .image "$IMG" "$OUT_FILE"
wait_end "$OK"
assert_eq "$(state_of "$OK")" "succeeded|exited 0" "state|reason of the container job"
PL=$(placement_of "$OK")
DEVS=$(devices_of "$OK")
assert_match "$DEVS" '^GPU-[^,]+,GPU-[^,]+$' "the job's two GPUs"
D1=${DEVS%,*}
D2=${DEVS#*,}
WORK=$(cd "$E2E_TMP/state-rt/work/$OK" && pwd -P)
cat >"$E2E_TMP/expected.args" <<EOF
$(cd "$BIN" && pwd -P)/fake-podman
run
--rm
--name
gpupool-$OK-$PL
--device
nvidia.com/gpu=$D1
--device
nvidia.com/gpu=$D2
-e
GPUPOOL_JOB_ID=$OK
-e
GPUPOOL_TENANT=red
-e
GPUPOOL_PROJECT=train
-e
GPUPOOL_VENDOR=nvidia
-e
CUDA_VISIBLE_DEVICES=$DEVS
-e
NVIDIA_VISIBLE_DEVICES=$DEVS
--cpus
8
--memory
32g
--workdir
/work
-v
$WORK:/work
$IMG
sh
-c
echo "in \$GPUPOOL_JOB_ID at \$(pwd)"; env | sort
EOF
assert_eq "$(args_of "$OK")" "$(cat "$E2E_TMP/expected.args")" "the runtime's argument list"
A=$RT/gpupool-$OK-$PL
assert_file_lacks "$A.args" "xyz-agent-secret"
assert_file_lacks "$A.args" "$JT"
assert_file_lacks "$A.args" "PATH="
assert_file_lacks "$A.args" "HOME="
# the runtime's own environment: what it needs (PATH, HOME), none of the agent's secrets
assert_file_contains "$A.env" "PATH="
assert_file_lacks "$A.env" "xyz-agent-secret"
assert_file_lacks "$A.env" "GPUPOOL_JOIN_TOKEN"
assert_file_lacks "$A.env" "GPUPOOL_TOKEN"
logs_of "$OK"
L=$E2E_TMP/logs.$OK
assert_file_contains "$L" "in $OK at "
assert_file_contains "$L" "GPUPOOL_TENANT=red"
assert_file_contains "$L" "CUDA_VISIBLE_DEVICES=$DEVS"
assert_file_lacks "$L" "xyz-agent-secret"
assert_file_lacks "$L" "GPUPOOL_JOIN_TOKEN"
assert_file_lacks "$L" "HOME="
jshow "$OK"
assert_eq "$(jout '[.bindings[].end_reason] | unique | join(",")')" "completed" "bindings of the container job"

note "an image without a command (the image's own), on MIG slices, without class limits"
IMG2=docker.io/library/busybox:1.36
sub def --class h100.3g --units 2 --image "$IMG2"
DEF=$JID
wait_end "$DEF"
assert_eq "$(state_of "$DEF")" "succeeded|exited 0" "state|reason of an image-only job"
logs_of "$DEF"
assert_eq "$(cat "$E2E_TMP/logs.$DEF")" "ran $IMG2" "output of the image's own command"
DEVS=$(devices_of "$DEF")
assert_match "$DEVS" '^MIG-[^,]+,MIG-[^,]+$' "the job's two MIG slices"
args_of "$DEF" >"$E2E_TMP/def.args"
assert_file_contains "$E2E_TMP/def.args" "nvidia.com/gpu=${DEVS%,*}"
assert_file_contains "$E2E_TMP/def.args" "nvidia.com/gpu=${DEVS#*,}"
assert_file_lacks "$E2E_TMP/def.args" "--cpus"
assert_file_lacks "$E2E_TMP/def.args" "--memory"
assert_eq "$(tail -n 1 "$E2E_TMP/def.args")" "$IMG2" "the image is the last argument"

note "a failing container fails the job with its exit code"
sub bad7 --class a100.c4 --image alpine:3 -- sh -c 'echo failing; exit 7'
BAD7=$JID
wait_end "$BAD7"
assert_eq "$(state_of "$BAD7")" "failed|exited 7" "state|reason of a container exiting 7"
assert_eq "$(jout .exit_code)" 7 "exit_code"
assert_eq "$(jout '[.bindings[].end_reason] | unique | join(",")')" "failed" "bindings of the failed container"
logs_of "$BAD7"
assert_file_contains "$E2E_TMP/logs.$BAD7" "failing"

note "cancel: TERM reaches the container; one ignoring TERM is killed (R kill NAME, SIGKILL)"
sub long --class a100.c4 --image alpine:3 -- "$BIN/ctrsleep" 301
LONG=$JID
sub stub --class a100.c4 --image alpine:3 -- sh -c "trap '' TERM; exec $BIN/ctrsleep 302"
STUB=$JID
running() { [ -n "$(pgrep -f -- "$BIN/ctrsleep $1\$")" ]; }
gone() { [ -z "$(pgrep -f -- "$BIN/ctrsleep $1\$")" ]; }
poll 8 running 301 || fail "the container of job long did not start"
_pass
poll 8 running 302 || fail "the container of job stub did not start"
_pass
as "$RU" job cancel "$LONG" --tenant red --project train
assert_rc 0
as "$RU" job cancel "$STUB" --tenant red --project train
assert_rc 0
poll 4 gone 301 || fail "the cancelled container still runs"
_pass
assert_eq "$(state_of "$LONG" | cut -d'|' -f1)" cancelled "state of the cancelled job"
SPL=$(placement_of "$STUB")
poll 8 gone 302 || fail "the container ignoring TERM still runs after the grace period"
_pass
has_kill() { grep -qxF "kill gpupool-$STUB-$SPL" "$RT/kill.log" 2>/dev/null; }
poll 4 has_kill || { _show kill.log "$RT/kill.log"; fail "no 'kill gpupool-$STUB-$SPL' through the runtime"; }
_pass
assert_file_lacks "$RT/kill.log" "gpupool-$LONG-"

note "the time limit stops a container"
sub tl --class a100.c4 --time-limit 1 --image alpine:3 -- "$BIN/ctrsleep" 303
TL=$JID
wait_end "$TL" 12
assert_eq "$(state_of "$TL")" "failed|time limit reached; stopped" "state|reason of a timed-out container"

note "an image on a node whose agent has no --runtime fails at once"
WHY="exited 126: this node has no container runtime (gpupool agent --runtime)"
wait_end "$OK255"
assert_eq "$(state_of "$OK255")" "failed|$WHY" "state|reason of the 255-character image on node k"
sub noruntime --class t4.1x --image alpine:3 -- sh -c "touch $E2E_TMP/ran-anyway"
NR=$JID
wait_end "$NR"
assert_eq "$(state_of "$NR")" "failed|$WHY" "state|reason of an image on node k"
assert_eq "$(jout .exit_code)" 126 "exit_code"
assert_eq "$(jout '.bindings[0].node')" k "node of the job"
assert_eq "$([ -e "$E2E_TMP/ran-anyway" ] && echo ran || echo not)" not "its command never ran"
assert_file_contains "$PLAIN_ERR" "no container runtime"

note "a command-only job on the runtime's node runs directly"
sub direct --class a100.c4 -- sh -c 'echo "direct $GPUPOOL_JOB_ID"; echo "HOME=$HOME"'
DIRECT=$JID
assert_json .image null "$OUT_FILE"
wait_end "$DIRECT"
assert_eq "$(state_of "$DIRECT")" "succeeded|exited 0" "state|reason of the command-only job"
logs_of "$DIRECT"
assert_file_contains "$E2E_TMP/logs.$DIRECT" "direct $DIRECT"
assert_file_contains "$E2E_TMP/logs.$DIRECT" "HOME=$E2E_TMP/state-rt/work/$DIRECT"
assert_file_lacks "$RT/calls.log" "$DIRECT"
assert_eq "$(wc -l <"$RT/calls.log")" 6 "runtime invocations (ok, def, bad7, long, stub, tl)"
# and one with neither command nor image just holds its GPUs
sub hold --class a100.c4
HOLD=$JID
sleep 2
assert_eq "$(state_of "$HOLD")" "running|running on m" "state|reason of a job with neither"
as "$RU" job cancel "$HOLD" --tenant red --project train
assert_rc 0

note "the list view shows the image"
as "$RU" -o json job list --tenant red --project train
assert_eq "$(jout "[.items[] | select(.id == \"$DEF\") | .image] | .[0]")" "$IMG2" "image in job list"

stop_agent "$RT_PID" "$RT_ERR"
stop_agent "$PLAIN_PID" "$PLAIN_ERR"
stop_server
done_testing
