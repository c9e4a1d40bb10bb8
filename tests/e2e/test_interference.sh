#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_interference.sh - interference on a shared GPU, end to end, driven by
# per-process figures injected into a simulated node (`agent inject --process`).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_interference.sh
#
# Fleet: one agent, node s with one L40S in shared mode (slices of 12 GiB /
# 25 %).  Tenant red runs "hog", tenant blue runs "meek" on the same card;
# both are real processes ($BIN/wlsleep, a link to sleep).
#
# Checked: a job over its slice's memory raises one `interference` alarm (not
# one per heartbeat) naming the GPU, the offender and the affected binding;
# ops see it all, each tenant only its own part; it is audited; with the
# default policy (alert) the jobs keep running.  Sustained compute contention
# (3 samples) raises a `contention` alarm; a short burst does not; processes
# of no job only add load.  Ops switch the policy to stop (audited; bad values
# refused): the next breach fails the offender (binding ends `interference`,
# its process is stopped) while its neighbour keeps running.  Malformed
# figures from an agent are refused with 400; bad --process values with a
# one-line CLI error.
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/wlsleep"

STATE=$E2E_TMP/state
cat >"$E2E_TMP/inv.json" <<'EOF'
{"nodes":[{"name":"s","cpus":32,"memory_gib":256,
  "gpus":[{"model":"L40S","memory_gib":48,"count":1,"mode":"shared"}]}]}
EOF
for u in ru bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600
assert_rc 0
JT=$(jout .token)
AGENT_ERR=$E2E_TMP/agent.err
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv.json" \
    --state-dir "$STATE" --interval 1 --grace 1 >"$E2E_TMP/agent.out" 2>"$AGENT_ERR" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
node_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 10 node_ready || { _show "agent stderr" "$AGENT_ERR"; fail "node s did not register"; }
_pass
gp -o json gpu list
GPU=$(jout '.items[0].uuid')
assert_match "$GPU" '.+' "the shared GPU's uuid"

gp class create l40s.12g --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create $t
    assert_rc 0
done
gp project create train --tenant red
assert_rc 0
gp project create serve --tenant blue
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

as "$RU" -o json job submit hog --tenant red --project train --class l40s.12g -- "$BIN/wlsleep" 401
assert_rc 0
HOG=$(jout .id)
as "$BU" -o json job submit meek --tenant blue --project serve --class l40s.12g -- "$BIN/wlsleep" 402
assert_rc 0
MEEK=$(jout .id)
procs_of() { [ "$(pgrep -f -- "$BIN/wlsleep $1\$" | wc -l)" == "$2" ]; }
poll 8 procs_of 401 1 || fail "hog's process did not start"
poll 8 procs_of 402 1 || fail "meek's process did not start"
_pass
as "$RU" -o json job show "$HOG" --tenant red --project train
HOG_B=$(jout '.bindings[0].id')
assert_json '.bindings[0].gpu' "$GPU" "$OUT_FILE"
as "$BU" -o json job show "$MEEK" --tenant blue --project serve
MEEK_B=$(jout '.bindings[0].id')
assert_match "$HOG_B/$MEEK_B" '^[^/]+/[^/]+$' "binding ids"

inject() {
    run_cli agent inject --state-dir "$STATE" --node s --gpu 0 "$@"
    assert_rc 0
}
# n_alarms KIND: how many interference alarms of detail.kind KIND ops see
n_alarms() {
    gp -o json alarm list
    jout "[.items[] | select(.kind == \"interference\" and .detail.kind == \"$1\")] | length"
}
alarms_are() { [ "$(n_alarms "$1")" == "$2" ]; }

# ---------------------------------------------------------------- bad input
note "bad figures"
run_cli agent inject --state-dir "$STATE" --node s --gpu 0 --process "$HOG:lots:5"
assert_rc 2
assert_one_line_error
run_cli agent inject --state-dir "$STATE" --node s --gpu 0 --process "$HOG:100:101"
assert_rc 2
assert_one_line_error
run_cli agent inject --state-dir "$STATE" --node s --gpu 0 --process "$HOG:100"
assert_rc 2
assert_one_line_error
# the agent's own credential, with figures that are not figures
AT=$(head -n 1 "$STATE/s.token")
AUTH_HEADER="Authorization: Bearer $AT" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"s\",\"gpus\":[{\"uuid\":\"$GPU\",\"processes\":[{\"pid\":1,\"memory_mib\":\"x\"}]}]}"
assert_status 400
AUTH_HEADER="Authorization: Bearer $AT" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"s\",\"gpus\":[{\"uuid\":\"$GPU\",\"processes\":{\"pid\":1}}]}"
assert_status 400
AUTH_HEADER="Authorization: Bearer $AT" api POST /api/v1/agent/heartbeat \
    "{\"node\":\"s\",\"gpus\":[{\"uuid\":\"$GPU\",\"processes\":[{\"job\":\"$HOG\",\"sm_pct\":101}]}]}"
assert_status 400
assert_eq "$(n_alarms memory)$(n_alarms contention)" "00" "alarms after refused figures"

# ---------------------------------------------------------------- memory
note "memory over the slice: one alarm, alert only"
inject --process "$HOG:14000:20" --process "$MEEK:6000:20"
poll 8 alarms_are memory 1 || fail "no memory interference alarm"
_pass
sleep 2.5 # more heartbeats with the same breach
assert_eq "$(n_alarms memory)" 1 "one alarm while the breach lasts"
gp -o json alarm list
A='[.items[] | select(.kind == "interference")][0]'
assert_eq "$(jout "$A.state")" "open" "open while the breach lasts"
assert_eq "$(jout "$A.gpu")" "$GPU" "the alarm names the GPU"
assert_eq "$(jout "$A.severity")" "warning" "severity"
assert_eq "$(jout "$A.detail.offender.job")" "$HOG" "the offender"
assert_eq "$(jout "$A.detail.offender.bindings[0]")" "$HOG_B" "the offender's binding"
assert_contains "$(jout "$A.detail.offender.detail")" "14000 MiB" "what it did"
assert_eq "$(jout "$A.detail.affected | map(.bindings[0]) | join(\",\")")" "$MEEK_B" \
    "the affected binding"
assert_eq "$(jout "$A.detail.action")" "alerted" "policy alert"
assert_eq "$(jout "$A.tenants | join(\",\")")" "red,blue" "tenants concerned"
# each tenant sees its own part only
as "$BU" -o json alarm list --tenant blue
assert_rc 0
assert_eq "$(jout "$A.detail.offender")" "null" "blue does not see red's job"
assert_eq "$(jout "$A.detail.affected | map(.job) | join(\",\")")" "$MEEK" "blue sees its job"
assert_eq "$(jout "$A.tenants")" "null" "blue does not see which tenants"
assert_file_lacks "$OUT_FILE" "$HOG"
as "$RU" -o json alarm list --tenant red
assert_rc 0
assert_eq "$(jout "$A.detail.offender.job")" "$HOG" "red sees its offending job"
assert_eq "$(jout "$A.detail.affected | length")" 0 "red does not see blue's job"
assert_file_lacks "$OUT_FILE" "$MEEK"
as "$BU" -o json alarm list --tenant red
assert_denied 404
# audited, and alert only: both still run
gp -o json audit list --action gpu.interference
assert_rc 0
assert_eq "$(jout '.items | length')" 1 "audit events for the alarm"
assert_eq "$(jout '.items[0].target.id')" "$GPU" "audited against the GPU"
as "$RU" -o json job show "$HOG" --tenant red --project train
assert_json .state running "$OUT_FILE"
procs_of 401 1 || fail "the alert-only policy stopped the hog"
_pass

# ---------------------------------------------------------------- contention
note "compute: a burst is fine, sustained contention is not"
inject --clear
inject --process "$HOG:5000:85" --process "$MEEK:5000:10"
sleep 0.3
inject --process "$HOG:5000:30" --process "$MEEK:5000:10" # back under the share, at once
sleep 2.5
assert_eq "$(n_alarms contention)" 0 "a short burst"
# the hog keeps within its memory now: that alarm resolved itself, kept and audited
M='[.items[] | select(.kind == "interference" and .detail.kind == "memory")][0]'
memory_resolved() { gp -o json alarm list; [ "$(jout "$M.state")" == resolved ]; }
poll 8 memory_resolved || fail "the memory alarm stayed open after the breach ended"
_pass
assert_eq "$(jout "$M.resolution")" "the job keeps within its slice again" "why it resolved"
assert_match "$(jout "$M.resolved_at")" '^20[0-9-]+T' "when it resolved"
gp -o json alarm list --state open
assert_eq "$(jout '[.items[] | select(.detail.kind == "memory")] | length')" 0 "not listed as open"
gp -o json alarm list --state resolved
assert_eq "$(jout '[.items[] | select(.detail.kind == "memory")] | length')" 1 "listed as resolved"
gp alarm list --state closed
assert_denied 400
gp -o json audit list --action alarm.resolve
assert_eq "$(jout '.items | length')" 1 "the resolution audited"
assert_eq "$(jout '.items[0].actor')" "system" "by the system"
as "$BU" -o json alarm list --tenant blue --state resolved
assert_eq "$(jout '.items | length')" 1 "a tenant sees it resolved too"
inject --process "$HOG:5000:85" --process "$MEEK:5000:10"
poll 10 alarms_are contention 1 || fail "no contention alarm"
_pass
gp -o json alarm list
C='[.items[] | select(.kind == "interference" and .detail.kind == "contention")][0]'
assert_eq "$(jout "$C.detail.offender.job")" "$HOG" "the hog takes more than its share"
assert_eq "$(jout "$C.detail.affected[0].job")" "$MEEK" "the starved job"
assert_contains "$(jout "$C.detail.offender.detail")" "85%" "its figure"
# processes of no job only add load: with the hog quiet, no one offends
inject --clear
inject --process "$HOG:5000:20" --process "$MEEK:5000:10" --process "$$:1000:70"
sleep 3
assert_eq "$(n_alarms contention)" 1 "a process of no job is not a job's offence"
contention_resolved() {
    gp -o json alarm list
    [ "$(jout "$C.state")" == resolved ]
}
poll 8 contention_resolved || fail "the contention alarm stayed open with the hog quiet"
_pass

# ---------------------------------------------------------------- stop
note "policy stop: the offender is stopped, its neighbour runs on"
gp -o json alarm policy
assert_json .interference_action alert "$OUT_FILE"
jout '.interference_action = "kill"' >"$E2E_TMP/bad-policy.json"
gp alarm policy "$E2E_TMP/bad-policy.json"
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "interference_action"
gp -o json alarm policy
jout '.interference_action = "stop"' >"$E2E_TMP/policy.json"
as "$RU" alarm policy "$E2E_TMP/policy.json"
assert_denied 403
gp alarm policy "$E2E_TMP/policy.json"
assert_rc 0
gp -o json alarm policy
assert_json .interference_action stop "$OUT_FILE"
gp -o json audit list --action healthpolicy.change
assert_eq "$(jout '[.items[] | .result] | sort | join(",")')" "denied,error,ok" \
    "the policy change, the refused value and the denied attempt are audited"
inject --clear
inject --process "$HOG:20000:20" --process "$MEEK:5000:10"
hog_failed() {
    as "$RU" -o json job show "$HOG" --tenant red --project train
    [ "$(jout .state)" == failed ]
}
poll 8 hog_failed || fail "the hog was not stopped (state $(jout .state))"
_pass
assert_contains "$(jout .reason)" "interference" "the hog's reason"
assert_eq "$(jout '.bindings[0].end_reason')" interference "the hog's binding ended"
poll 8 procs_of 401 0 || fail "the hog's process still runs"
_pass
assert_eq "$(n_alarms memory)" 2 "a new breach, a new alarm"
gp -o json alarm list
assert_eq "$(jout '[.items[] | select(.detail.action == "stopped")][0].detail.offender.job')" "$HOG" \
    "the alarm says the offender was stopped"
as "$BU" -o json job show "$MEEK" --tenant blue --project serve
assert_json .state running "$OUT_FILE"
procs_of 402 1 || fail "the neighbour was stopped too"
_pass
gp -o json audit list --action gpu.interference
assert_eq "$(jout '.items | length')" 3 "each alarm audited"

kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop"
_forget_pid "$AGENT_PID"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$AGENT_ERR"; then
    _show "agent stderr" "$AGENT_ERR"
    fail "the agent printed a sanitizer report"
fi
_pass
stop_server
done_testing
