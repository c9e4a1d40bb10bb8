#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317  # workload commands expand on the node; poll calls helpers indirectly
#
# test_node.sh - issue 18, findings 2 and 10: a tenant's job must not reach the
# node's credentials or another tenant's data, a node speaks only for the jobs
# placed on it, and join tokens register nodes once.  A real server and a real
# agent (run as root, as CI runs: jobs then get uids of their own).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_node.sh
#
# Checked, as an attacker would try it:
# - a job of tenant red on node a: `id -u` is not 0; HOME is its own absolute
#   folder (mode 0700, owned by its uid); `ls ../..`, `cat ../../*.token`, the
#   agent's state folder, workloads.json, tenant blue's output.log (its job runs
#   on node b of the same agent), /proc/<agent>/environ: all fail; its
#   environment holds nothing of the agent's (join token, a SECRET_MARKER);
#   its output.log swapped for a link to the node's credential is not read
#   back as output;
# - the join token is not in the agent's command line (--join-token is wiped
#   and warned about; --join-token-file works);
# - a heartbeat from node a's account reporting blue's job (placed on b) as
#   exited 137 with forged output: the job runs on, its log is untouched, a
#   denied "job.report" event names tenant blue; node-reported job ends are
#   audited ("job.end" by agent-a, tenant red);
# - join tokens: single-use by default (a reuse is 401 "already used", audited
#   with the token's id), --node NAME binds one to a name, --uses N allows N,
#   the list shows uses/max_uses/node/state "used"; bad input is 400; a
#   restarted agent needs no new token (it keeps its nodes' credentials);
# - files a job leaves in a shared folder are 0600 (umask 077), its TMPDIR is
#   in its own folder; a uid that ran red's job never runs blue's (blue's job
#   is refused rather than handed the uid red's leftover files belong to).
. "$(dirname "$0")/../e2e/lib.sh"

if [ "$(id -u)" != 0 ]; then
    note "not root: the agent cannot give jobs uids of their own; skipped"
    done_testing
fi

BIN=$E2E_TMP/bin
mkdir -p "$BIN"
ln -s "$(command -v sleep)" "$BIN/nodesleep"
# jobs run as other uids: they must be able to cross the test's folder to their own
chmod 0711 "$E2E_TMP"
_node_exit() {
    local rc=$? pid
    for pid in $(pgrep -f -- "$BIN/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    (exit "$rc")
    _e2e_cleanup
}
trap _node_exit EXIT

STATE=$E2E_TMP/state
cat >"$E2E_TMP/fleet.json" <<'EOF'
{"nodes":[
 {"name":"a","cpus":16,"memory_gib":64,"gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]},
 {"name":"b","cpus":16,"memory_gib":64,"gpus":[{"model":"T4","memory_gib":16,"count":1,"mode":"whole"}]}]}
EOF
for u in ru bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server --node-timeout 30
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0

# ---------------------------------------------------------------- join tokens
note "join tokens: single-use by default, bound to a node, a number of uses"
# register NAME TOKEN: the agent's register call for a node without GPUs
register() {
    AUTH_HEADER='' api POST /api/v1/agent/register \
        "{\"join_token\":\"$2\",\"node\":{\"name\":\"$1\",\"cpus\":1,\"memory_gib\":1,\"gpus\":[]}}"
}
gp -o json jointoken create --ttl 600
assert_rc 0
J1=$(jout .token)
J1_ID=$(jout .id)
assert_json .max_uses 1 "$OUT_FILE"
register x1 "$J1"
assert_status 201
register x2 "$J1"
assert_status 401
assert_contains "$(jq -r .error.message "$BODY_FILE")" "already used" "error of a reused join token"
gp node show x2
assert_denied 404
gp -o json audit list --action node.register --result denied
assert_rc 0
assert_json "[.items[] | select(.target.id == \"x2\")] | length" 1 "$OUT_FILE"
assert_contains "$(jout '.items[] | select(.target.id == "x2") | .summary | tostring')" "$J1_ID" "the refused registration names the token"
gp -o json audit list --action node.register --result ok
assert_contains "$(jout '.items[] | select(.target.id == "x1") | .summary | tostring')" "$J1_ID" "the registration names the token"
gp -o json jointoken list
assert_json ".items[] | select(.id == \"$J1_ID\") | \"\(.state) \(.uses)/\(.max_uses) \(.used_by | join(\",\"))\"" "used 1/1 x1" "$OUT_FILE"

gp -o json jointoken create --node x3
assert_rc 0
J3=$(jout .token)
assert_json .node x3 "$OUT_FILE"
register x4 "$J3"
assert_status 401
assert_contains "$(jq -r .error.message "$BODY_FILE")" "bound to another node" "error of a token bound to another node"
register x3 "$J3"
assert_status 201

gp -o json jointoken create --uses 2
assert_rc 0
J5=$(jout .token)
register x5 "$J5"
assert_status 201
register x6 "$J5"
assert_status 201
register x7 "$J5"
assert_status 401
assert_contains "$(jq -r .error.message "$BODY_FILE")" "used up" "error of a token whose uses are spent"

# bad input: nothing made
gp jointoken create --node x8 --uses 2
assert_rc 2
api POST /api/v1/join-tokens '{"max_uses":0}'
assert_status 400
api POST /api/v1/join-tokens '{"max_uses":10001}'
assert_status 400
api POST /api/v1/join-tokens '{"node":"Not A Name"}'
assert_status 400
api POST /api/v1/join-tokens '{"node":"x9","max_uses":3}'
assert_status 400
gp -o json jointoken list
assert_json '.items | length' 3 "$OUT_FILE"

# ---------------------------------------------------------------- the fleet
note "an agent with two nodes (a token for two), tenants red and blue"
gp -o json jointoken create --ttl 600 --uses 2
assert_rc 0
JT=$(jout .token)
printf '%s\n' "$JT" >"$E2E_TMP/join.token"
AGENT_ERR=$E2E_TMP/agent.err
GPUPOOL_TOKEN=$ADMIN SECRET_MARKER=xyz-agent-secret \
    "$GPUPOOL_BIN" --server "$URL" agent --join-token-file "$E2E_TMP/join.token" \
    --inventory "$E2E_TMP/fleet.json" --state-dir "$STATE" --interval 1 --grace 1 \
    >"$E2E_TMP/agent.out" 2>"$AGENT_ERR" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
fleet_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select((.name == "a" or .name == "b") and .state == "ready")] | length')" == 2 ]
}
poll 10 fleet_ready || { _show "agent stderr" "$AGENT_ERR"; fail "nodes a and b did not join"; }
_pass
assert_file_contains "$AGENT_ERR" "jobs run as identities of their own"
assert_file_lacks "/proc/$AGENT_PID/cmdline" "$JT"
assert_eq "$(stat -c %a "$STATE")" 700 "mode of the agent's state folder"
assert_eq "$(stat -c %a "$STATE/a.token")" 600 "mode of node a's credential"
A_TOKEN=$(cat "$STATE/a.token")
B_TOKEN=$(cat "$STATE/b.token")
assert_match "$A_TOKEN" '^gpt_' "node a's credential"

gp class create l4.1x --form whole --models L4 --cpus 1 --memory 1
assert_rc 0
gp class create t4.1x --form whole --models T4 --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create "$t"
    assert_rc 0
done
gp project create train --tenant red --class development
assert_rc 0
gp project create serve --tenant blue --class development
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

# blue's job on node b: its output is blue's alone
# a folder every uid may write, as /tmp, /var/tmp and /dev/shm are on a node
PUB=$E2E_TMP/pub
mkdir -p "$PUB"
chmod 1777 "$PUB"
as "$BU" -o json job submit bluejob --tenant blue --project serve --class t4.1x -- \
    sh -c "echo blue-secret-output-42; echo blue-scratch-secret-43 >$PUB/blue-scratch; echo blue-tmp-secret-44 >\$TMPDIR/t; exec $BIN/nodesleep 300"
assert_rc 0
BJ=$(jout .id)
blue_state() { as "$BU" -o json job show "$BJ" --tenant blue --project serve; jout .state; }
blue_logged() {
    as "$BU" job logs "$BJ" --tenant blue --project serve
    grep -qF blue-secret-output-42 "$OUT_FILE"
}
poll 10 blue_logged || fail "blue's job did not run on node b"
_pass
assert_file_contains "$STATE/work/$BJ/output.log" blue-secret-output-42
BLUE_PL=$(gp -o json binding list --job "$BJ" && jout '.items[0].id')

# ---------------------------------------------------------------- the attack
note "red's job on node a tries to read what is not its own"
cat >"$E2E_TMP/attack.sh" <<EOF
echo "uid=\$(id -u) gid=\$(id -g) groups=\$(id -G)"
echo "home=\$HOME pwd=\$(pwd)"
echo "mode=\$(stat -c '%a %u' "\$HOME")"
try() { if out=\$(eval "\$1" 2>/dev/null) && [ -n "\$out" ]; then echo "LEAK[\$1]: \$out"; else echo "refused[\$1]"; fi; }
try 'ls ../..'
try 'cat ../../*.token'
try 'ls $STATE'
try 'cat $STATE/a.token'
try 'cat $STATE/b.token'
try 'cat $STATE/workloads.json'
try 'ls $STATE/work'
try 'cat $STATE/work/$BJ/output.log'
try 'cat /proc/$AGENT_PID/environ'
try 'cat $PUB/blue-scratch'
try 'cat $STATE/work/$BJ/tmp/t'
echo "tmpdir=\$TMPDIR"
try 'grep -a gpj_ /proc/$AGENT_PID/cmdline'
env | sort
# swap the output file for links to the node's credential: never read back as output
rm -f "\$HOME/output.log"; ln -s "$STATE/a.token" "\$HOME/output.log" 2>/dev/null
echo "after-the-swap"
EOF
chmod 0644 "$E2E_TMP/attack.sh"
as "$RU" -o json job submit attack --tenant red --project train --class l4.1x -- sh "$E2E_TMP/attack.sh"
assert_rc 0
RJ=$(jout .id)
red_done() {
    as "$RU" -o json job show "$RJ" --tenant red --project train
    [[ "$(jout .state)" =~ ^(succeeded|failed)$ ]]
}
poll 10 red_done || fail "red's job did not end"
_pass
as "$RU" job logs "$RJ" --tenant red --project train
assert_rc 0
cp "$OUT_FILE" "$E2E_TMP/red.log"
note "red's job says: $(head -n 3 "$E2E_TMP/red.log" | tr '\n' ' ')"
JUID=$(sed -n 's/^uid=\([0-9]*\) .*/\1/p' "$E2E_TMP/red.log")
assert_match "$JUID" '^[0-9]+$' "uid of red's job"
assert_ne "$JUID" 0 "uid of red's job"
assert_file_contains "$E2E_TMP/red.log" "gid=$JUID groups=$JUID"
assert_file_contains "$E2E_TMP/red.log" "home=$STATE/work/$RJ pwd=$STATE/work/$RJ"
assert_file_contains "$E2E_TMP/red.log" "mode=700 $JUID"
# files a job makes outside its folder are its own (umask 077); its TMPDIR is in its folder
assert_file_contains "$E2E_TMP/red.log" "tmpdir=$STATE/work/$RJ/tmp"
assert_eq "$(stat -c %a "$PUB/blue-scratch")" 600 "mode of blue's scratch file in a shared folder"
assert_file_contains "$STATE/work/$BJ/tmp/t" blue-tmp-secret-44
assert_file_lacks "$E2E_TMP/red.log" "LEAK["
for probe in 'ls ../..' 'cat ../../*.token' "ls $STATE" "cat $STATE/a.token" "cat $STATE/workloads.json" \
    "cat $STATE/work/$BJ/output.log" "ls $STATE/work" "cat /proc/$AGENT_PID/environ" \
    "cat $PUB/blue-scratch" "cat $STATE/work/$BJ/tmp/t"; do
    assert_file_contains "$E2E_TMP/red.log" "refused[$probe]"
done
for leak in "$A_TOKEN" "$B_TOKEN" "$JT" "$ADMIN" blue-secret-output-42 blue-scratch-secret-43 \
    blue-tmp-secret-44 xyz-agent-secret SECRET_MARKER \
    GPUPOOL_TOKEN GPUPOOL_JOIN_TOKEN; do
    assert_file_lacks "$E2E_TMP/red.log" "$leak"
done
assert_file_contains "$E2E_TMP/red.log" "after-the-swap"
assert_file_contains "$E2E_TMP/red.log" "GPUPOOL_TENANT=red"

# node-reported job ends are audited, in the job's tenant
gp -o json audit list --action job.end --target "$RJ"
assert_rc 0
assert_json '.items | length' 1 "$OUT_FILE"
assert_json '.items[0] | "\(.actor) \(.tenant) \(.project) \(.result)"' "agent-a red train ok" "$OUT_FILE"

# ---------------------------------------------------------------- forged reports
note "node a's account speaks for blue's job on node b: ignored, audited"
AUTH_HEADER="Authorization: Bearer $A_TOKEN" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"a\",\"gpus\":[],\"workloads\":[{\"job\":\"$BJ\",\"placement\":\"$BLUE_PL\",\"state\":\"exited\",\"exit_code\":137,\"reason\":\"forged\",\"log\":\"FORGED-LINE\"}]}"
assert_status 200
AUTH_HEADER="Authorization: Bearer $A_TOKEN" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"a\",\"gpus\":[],\"workloads\":[{\"job\":\"$BJ\",\"state\":\"exited\",\"exit_code\":137,\"log\":\"FORGED-LINE\"}]}"
assert_status 200
# as node b with a's credential: not its node
AUTH_HEADER="Authorization: Bearer $A_TOKEN" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"b\",\"gpus\":[],\"workloads\":[{\"job\":\"$BJ\",\"placement\":\"$BLUE_PL\",\"state\":\"exited\",\"exit_code\":137,\"log\":\"FORGED-LINE\"}]}"
assert_status 404
sleep 1.5
assert_eq "$(blue_state)" running "blue's job after the forged reports"
as "$BU" job logs "$BJ" --tenant blue --project serve
assert_file_lacks "$OUT_FILE" FORGED-LINE
gp -o json audit list --action job.report --result denied --target "$BJ"
assert_rc 0
assert_json '.items | length' 2 "$OUT_FILE"
assert_json '[.items[] | "\(.actor) \(.tenant)"] | unique | join(",")' "agent-a blue" "$OUT_FILE"

# ---------------------------------------------------------------- restart, and --join-token
note "the agent restarts without a join token; --join-token is wiped from ps"
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop"
_forget_pid "$AGENT_PID"
GPUPOOL_JOIN_TOKEN='' "$GPUPOOL_BIN" --server "$URL" agent --join-token gpj_never-used-secret-token \
    --inventory "$E2E_TMP/fleet.json" --state-dir "$STATE" --interval 1 --grace 1 \
    >"$E2E_TMP/agent2.out" 2>"$E2E_TMP/agent2.err" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
sleep 2
poll 10 fleet_ready || { _show "agent stderr" "$E2E_TMP/agent2.err"; fail "nodes a and b not ready after the restart"; }
_pass
assert_file_lacks "$E2E_TMP/agent2.err" "node joined"
assert_file_contains "$E2E_TMP/agent2.err" "visible to every local user"
assert_file_lacks "/proc/$AGENT_PID/cmdline" "never-used-secret"
assert_eq "$(blue_state)" running "blue's job after the agent's restart"
as "$BU" job cancel "$BJ" --tenant blue --project serve
assert_rc 0
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop"
_forget_pid "$AGENT_PID"

# ---------------------------------------------------------------- uids are not passed on
note "a uid that ran red's job never runs blue's (it may own files red left in /tmp)"
U0=300100
"$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/fleet.json" --state-dir "$STATE" \
    --interval 1 --grace 1 --job-uids "$U0-$((U0 + 1))" \
    >"$E2E_TMP/agent3.out" 2>"$E2E_TMP/agent3.err" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
poll 10 fleet_ready || { _show "agent stderr" "$E2E_TMP/agent3.err"; fail "nodes not ready (--job-uids)"; }
_pass
as "$RU" -o json job submit left --tenant red --project train --class l4.1x -- \
    sh -c "echo red-left-secret-45 >$PUB/red-left; chmod 600 $PUB/red-left; echo uid=\$(id -u)"
assert_rc 0
RJ=$(jout .id)
poll 10 red_done || fail "red's job (--job-uids) did not end"
_pass
as "$RU" job logs "$RJ" --tenant red --project train
X=$(sed -n 's/^uid=\([0-9]*\)$/\1/p' "$OUT_FILE")
assert_match "$X" "^($U0|$((U0 + 1)))\$" "uid of red's job in the range"
# the range's other uid is busy (a process of the host has it): only red's is free
setpriv --reuid=$((U0 + U0 + 1 - X)) --regid=$((U0 + U0 + 1 - X)) --clear-groups "$BIN/nodesleep" 120 &
E2E_PIDS+=("$!")
sleep 0.5
blue_ended() {
    as "$BU" -o json job show "$BJ2" --tenant blue --project serve
    [[ "$(jout .state)" =~ ^(succeeded|failed)$ ]]
}
as "$BU" -o json job submit reads --tenant blue --project serve --class t4.1x -- \
    sh -c "echo uid=\$(id -u); cat $PUB/red-left"
assert_rc 0
BJ2=$(jout .id)
poll 20 blue_ended || fail "blue's job (--job-uids) did not end"
_pass
as "$BU" -o json job show "$BJ2" --tenant blue --project serve
assert_contains "$(jout .reason)" "no free uid" "blue's job is refused red's uid"
as "$BU" job logs "$BJ2" --tenant blue --project serve
assert_file_lacks "$OUT_FILE" red-left-secret-45
assert_file_lacks "$OUT_FILE" "uid=$X"
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop"
_forget_pid "$AGENT_PID"
stop_server
done_testing
