#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_jobs.sh - the scheduler end to end through the command line client
# against a real server and a simulated fleet: jobs placed and bound, quotas
# checked at admission with exact reasons (tenant, project, per class,
# concurrent jobs), capacity and gang waiting, models nobody has, pools
# reserved for a tenant, MIG and shared placement, priority classes and their
# policy, preemption with both recovery policies, fair share between tenants,
# `job explain` and its suggestions, and tenant isolation of jobs and bindings.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_jobs.sh
#
# The fleet (one agent, heartbeat every second):
#   a: 8x A100-80GB whole        b: 2x H100-80GB MIG, 2x 3g.40gb each
#   c: 1x L40S 48 GiB shared     d: 1x L4 whole (moved to a pool only blue may use)
# Tenants red (project train, development) and blue (project serve,
# production), each with a project-user and a tenant-admin.
#
# The server runs a round every second and right after a submit, cancel,
# priority or quota change, so the answer of a submit already carries the
# job's first reason; a round may also run between the commit and the answer,
# so where two outcomes are legitimate the script accepts both and checks the
# job's event history.  It polls (0.1 s) instead of sleeping.
#
# Known defects are asserted last, after the server stopped cleanly:
#  - `job submit --priority-class nosuch` answers 404 instead of 400;
#  - `job explain` on a job held by a per-class ceiling (class_gpus) suggests nothing.
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/trainsleep"

# ---------------------------------------------------------------- helpers

# The tenants' scopes: "red" = --tenant red --project train as red's user, etc.
scope_of() {
    case $1 in
    red) echo "red train" ;;
    blue) echo "blue serve" ;;
    esac
}

# sub WHO NAME ARGS...: `job submit NAME ARGS` as WHO (red|blue, their project-user),
# exit 0 asserted; JID = the new job's id; the answer stays in OUT_FILE.
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

# job WHO VERB ID [ARGS...]: `job VERB ID` as WHO's project-user in WHO's project.
job() {
    local who=$1 verb=$2 tok t p
    shift 2
    read -r t p <<<"$(scope_of "$who")"
    tok=$([ "$who" == red ] && echo "$RU" || echo "$BU")
    as "$tok" -o json job "$verb" --tenant "$t" --project "$p" "$@"
}

# jf WHO ID FILTER: a field of `job show ID` (as WHO); "" if the call failed.
jf() {
    job "$1" show "$2"
    [ "$RC" == 0 ] && jout "$3"
}
state_is() { [ "$(jf "$1" "$2" .state)" == "$3" ]; }

# wait_state WHO ID STATE [SECONDS]: poll until the job is in STATE.
wait_state() {
    poll "${4:-5}" state_is "$1" "$2" "$3" ||
        fail "job $2 did not become $3 within ${4:-5} s (state '$(jf "$1" "$2" .state)', reason '$(jout .reason)')"
    _pass
}

# assert_job WHO ID STATE REASON-PREFIX: state and reason of a job (reason: fixed prefix)
assert_job() {
    job "$1" show "$2"
    assert_rc 0
    assert_json .state "$3" "$OUT_FILE"
    local reason
    reason=$(jout .reason)
    [[ "$reason" == "$4"* ]] || { _show "job" "$OUT_FILE"; fail "job $2: reason '$reason' does not start with '$4'"; }
    _pass
}

# cancel WHO ID: cancel a job, asserting it ends cancelled.
cancel() {
    job "$1" cancel "$2"
    assert_rc 0
    assert_json .state cancelled "$OUT_FILE"
}

# cancel_all WHO: cancel every live job of WHO's project.
cancel_all() {
    local id ids
    job "$1" list
    assert_rc 0
    ids=$(jout '.items[] | select(.state == "queued" or .state == "admitted" or .state == "running") | .id')
    for id in $ids; do cancel "$1" "$id"; done
    job "$1" list
    assert_json '[.items[] | select(.state == "queued" or .state == "admitted" or .state == "running")] | length' 0 "$OUT_FILE"
}

# start_agent LABEL ARGS...: `gpupool --server URL agent ARGS` in the background
start_agent() {
    local label=$1
    shift
    AGENT_ERR=$E2E_TMP/agent.$label.err
    "$GPUPOOL_BIN" --server "$URL" agent "$@" >"$E2E_TMP/agent.$label.out" 2>"$AGENT_ERR" </dev/null &
    AGENT_PID=$!
    E2E_PIDS+=("$AGENT_PID")
}

# stop_agent: SIGTERM the agent; it exits 0 promptly, without a sanitizer report
stop_agent() {
    local pid=$AGENT_PID
    kill -TERM "$pid" 2>/dev/null
    if ! _wait_exit "$pid" 10; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        _forget_pid "$pid"
        fail "agent (pid $pid) did not stop within 10 s of SIGTERM"
    fi
    _forget_pid "$pid"
    AGENT_PID=""
    assert_eq "$_EXIT" 0 "exit code of the agent after SIGTERM"
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$AGENT_ERR"; then
        grep -E -A30 'Sanitizer|runtime error:' "$AGENT_ERR" | head -n 60 | sed 's/^/    | /' >&2
        fail "agent printed a sanitizer report"
    fi
    _pass
}

AGENT_PID=""
AGENT_ERR=""
STATE=$E2E_TMP/agent-state

cat >"$E2E_TMP/fleet.json" <<'EOF'
{"nodes":[
 {"name":"a","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]},
 {"name":"b","cpus":64,"memory_gib":512,
  "gpus":[{"model":"H100-80GB","memory_gib":80,"count":2,"mode":"mig","mig":["3g.40gb","3g.40gb"]}]},
 {"name":"c","cpus":32,"memory_gib":256,
  "gpus":[{"model":"L40S","memory_gib":48,"count":1,"mode":"shared"}]},
 {"name":"d","cpus":16,"memory_gib":64,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF
for u in ru ra bu ba; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

# ---------------------------------------------------------------- without a server
note "help and usage errors"
run_cli job --help
assert_rc 0
assert_file_contains "$OUT_FILE" "usage: gpupool job"
assert_file_contains "$OUT_FILE" "explain JOB"
for nv in "job submit" "job explain" "quota set" "priority create" "binding list"; do
    # shellcheck disable=SC2086  # split "noun verb" on purpose
    run_cli $nv --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool"
done
run_cli --server http://127.0.0.1:1 --token x job submit j1 --tenant red --project train
assert_rc 2
assert_one_line_error "--class is required"
run_cli --server http://127.0.0.1:1 --token x job submit j1 --class a100.1x --tenant red
assert_rc 2
assert_one_line_error "--tenant and --project are required"
run_cli --server http://127.0.0.1:1 --token x job submit j1 --class a100.1x --units two \
    --tenant red --project train
assert_rc 2
assert_one_line_error "--units must be a number"
run_cli --server http://127.0.0.1:1 --token x quota set --tenant red --class a100.1x
assert_rc 2
assert_one_line_error "NAME=UNITS"
run_cli --server http://127.0.0.1:1 --token x priority create p1 --value 1 --preemptible maybe
assert_rc 2
assert_one_line_error "yes or no"

# ---------------------------------------------------------------- setup
start_server
note "server at $URL"
ADMIN=$TOKEN
# the bootstrap admin may make itself an ops-engineer while it is the only
# security-admin; sensitive operations are waived (and audited as such) meanwhile
gp member grant admin ops-engineer
assert_rc 0
assert_file_lacks "$OUT_FILE" "pending"
gp -o json jointoken create --ttl 3600 --uses 4 # nodes a, b, c and d
assert_rc 0
JT=$(jout .token)
start_agent fleet --join-token "$JT" --inventory "$E2E_TMP/fleet.json" --state-dir "$STATE" --interval 1
fleet_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 4 ]
}
poll 10 fleet_ready || { _show "agent stderr" "$AGENT_ERR"; fail "the fleet did not register within 10 s"; }
_pass
declare -a A100
gp -o json gpu list --node a
assert_rc 0
mapfile -t A100 < <(jout '.items | sort_by(.index) | .[].uuid')
assert_eq "${#A100[@]}" 8 "A100s on node a"

note "classes, tenants, projects, users"
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create a100.4x --form whole --gpus 4 --models A100-80GB --cpus 4 --memory 4
assert_rc 0
gp class create h100.3g --form mig:3g.40gb --models H100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create l40s.12g --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0
# a model that is known but that nobody has
gp class create t4.1x --form whole --models T4 --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp tenant create blue
assert_rc 0
gp project create train --tenant red --class development
assert_rc 0
gp project create serve --tenant blue --class production
assert_rc 0
for u in ru ra bu ba; do
    run_in "$E2E_TMP/pw.$u" --server "$URL" --token "$ADMIN" user create "$u"
    assert_rc 0
done
gp member grant ru project-user --tenant red --project train
assert_rc 0
gp member grant ra tenant-admin --tenant red
assert_rc 0
gp member grant bu project-user --tenant blue --project serve
assert_rc 0
gp member grant ba tenant-admin --tenant blue
assert_rc 0
login() {
    run_in "$E2E_TMP/pw.$1" --server "$URL" login "$1"
    assert_rc 0
    head -n 1 "$OUT_FILE"
}
RU=$(login ru)
RA=$(login ra)
BU=$(login bu)
BA=$(login ba)
assert_match "$RU/$RA/$BU/$BA" '^gpt_[^/]+/gpt_[^/]+/gpt_[^/]+/gpt_[^/]+$' "login tokens"

# ---------------------------------------------------------------- placement and bindings
note "submit: placed, bound and running"
BEFORE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 1.1
# The agent runs it: a command that lasts the whole test (a link to sleep, so
# the EXIT trap finds and kills it; workloads outlive their agent).
sub red r1 --class a100.1x -- "$BIN/trainsleep" 900
R1=$JID
assert_json .state running "$OUT_FILE"
assert_json .reason "running on a" "$OUT_FILE"
assert_json .submitter ru "$OUT_FILE"
assert_json .priority_class normal "$OUT_FILE"
assert_json .recovery requeue "$OUT_FILE"
assert_json '.command | join(" ")' "$BIN/trainsleep 900" "$OUT_FILE"
job red show "$R1"
assert_rc 0
assert_json '.bindings | length' 1 "$OUT_FILE"
assert_json '.bindings[0] | "\(.node) \(.model) \(.form) \(.unit) \(.share) \(.tenant)/\(.project) \(.end)"' \
    "a A100-80GB whole 0 1 red/train null" "$OUT_FILE"
R1_GPU=$(jout '.bindings[0].gpu')
assert_contains " ${A100[*]} " " $R1_GPU " "GPU bound to r1"
assert_match "$(jout .started_at)" '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T' "started_at of r1"
assert_json '[.events[].kind] | join(",")' "submitted,placed" "$OUT_FILE"
gp -o json binding list --job "$R1"
assert_rc 0
assert_json '.items | length' 1 "$OUT_FILE"
assert_json ".items[0] | \"\(.job) \(.job_name) \(.gpu)\"" "$R1 r1 $R1_GPU" "$OUT_FILE"
gp -o json binding list --gpu "$R1_GPU"
assert_rc 0
assert_json "[.items[] | select(.end == null) | .job] | join(\",\")" "$R1" "$OUT_FILE"
gp -o json binding list --gpu "$R1_GPU" --at "$BEFORE"
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
gp -o json binding list --gpu "$R1_GPU" --at "$(date -u -d '+1 second' +%Y-%m-%dT%H:%M:%SZ)"
assert_rc 0
assert_json '[.items[].job] | join(",")' "$R1" "$OUT_FILE"
# the node's incident view lists the same fields: its node and share too (issue 42, item 7)
gp -o json binding list --node a
assert_rc 0
assert_json "[.items[] | select(.job == \"$R1\")][0] | \"\(.node) \(.share) \(.gpu) \(.model)\"" \
    "a 1 $R1_GPU A100-80GB" "$OUT_FILE"
gp binding list --node a
assert_rc 0
assert_eq "$(awk -v j=r1 '$1 == j {print $4, $6}' "$OUT_FILE")" "a 1" "NODE and SHARE in the table"
gp binding list --at yesterday
assert_denied 400
gp binding list --job "$R1"
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "JOB_NAME UNIT GPU NODE FORM SHARE TENANT PROJECT START END END_REASON BORROWED" "binding list header"
job red list --state running
assert_rc 0
assert_json '[.items[].id] | join(",")' "$R1" "$OUT_FILE"
job red list --state queued
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
as "$RU" job list --tenant red --project train
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "ID NAME STATE CLASS UNITS NODES PRIORITY_CLASS SUBMITTER REASON" "job list header"
assert_match "$(grep -F "$R1" "$OUT_FILE")" "^$R1 +r1 +running +a100\\.1x +1 +- +normal +ru +running on a" "job list row"
# the tenant-admin reads its tenant's bindings
as "$RA" -o json binding list --tenant red
assert_rc 0
assert_json '[.items[].job] | join(",")' "$R1" "$OUT_FILE"
job red explain "$R1"
assert_rc 0
assert_json .explanation "it is running" "$OUT_FILE"
# validation
as "$RU" job submit bad --class nosuch --tenant red --project train
assert_denied 400
assert_file_contains "$ERR_FILE" "resource class 'nosuch' does not exist"
as "$RU" job submit bad --class a100.1x --units 0 --tenant red --project train
assert_denied 400
as "$RU" job submit bad --class a100.1x --recovery maybe --tenant red --project train
assert_denied 400
as "$RU" job submit Bad_Name --class a100.1x --tenant red --project train
assert_denied 400
as "$RU" job submit bad --class a100.1x --units 65 --tenant red --project train
assert_denied 400
job red list --state bogus
assert_denied 400
# (asserted at the end) an unknown priority class is the request's fault
as "$RU" job submit bad --class a100.1x --priority-class nosuch --tenant red --project train
assert_rc 1
cp "$ERR_FILE" "$E2E_TMP/nosuch-pc.err"

# ---------------------------------------------------------------- quotas
note "quotas: the tenant's ceiling"
gp -o json quota set --tenant red --gpus 4
assert_rc 0
assert_json .gpus 4 "$OUT_FILE"
as "$RA" -o json quota show --tenant red
assert_rc 0
assert_json .gpus 4 "$OUT_FILE"
# a tenant-admin may not raise its own tenant's ceiling
as "$RA" quota set --tenant red --gpus 8
assert_denied 403
sub red r2 --class a100.1x --units 3
R2=$JID
assert_json .state running "$OUT_FILE"
sub red r3 --class a100.1x
R3=$JID
assert_json .state queued "$OUT_FILE"
assert_json .reason "quota_exceeded: tenant red gpus 4/4 in use (needs 1 more)" "$OUT_FILE"
assert_json '.bindings | length' 0 "$OUT_FILE"
job red explain "$R3"
assert_rc 0
assert_json .would_start_now false "$OUT_FILE"
assert_json .reason "quota_exceeded: tenant red gpus 4/4 in use (needs 1 more)" "$OUT_FILE"
assert_json '[.suggestions[] | select(.change == "raise_quota") | "\(.level) \(.name) \(.dimension) \(.by)"] | join(",")' \
    "tenant red gpus 1" "$OUT_FILE"
as "$RU" job explain "$R3" --tenant red --project train
assert_rc 0
assert_file_contains "$OUT_FILE" "blocked by: quota_exceeded: tenant red gpus 4/4 in use (needs 1 more)"
assert_file_contains "$OUT_FILE" "would start with: raise tenant red's gpus ceiling by 1"
# cancelling a running job frees its quota: the queued one starts at once
cancel red "$R1"
job red show "$R1"
assert_json '.bindings[0].end_reason' cancelled "$OUT_FILE"
assert_match "$(jout '.bindings[0].end')" '^20' "end of r1's binding"
assert_match "$(jout .ended_at)" '^20' "ended_at of r1"
wait_state red "$R3" running
gp -o json binding list --gpu "$R1_GPU"
assert_json "[.items[] | select(.job == \"$R1\") | .end_reason] | join(\",\")" cancelled "$OUT_FILE"
job red cancel "$R1"
assert_denied 409
job red priority "$R1" normal
assert_denied 409
job red explain "$R1"
assert_denied 409
# lowering a ceiling never stops running work; it holds back the next admissions
gp quota set --tenant red --gpus 2
assert_rc 0
sleep 1.2 # a round of the server loop
assert_job red "$R2" running "running on a"
assert_job red "$R3" running "running on a"
sub red r4 --class h100.3g
assert_json .reason "quota_exceeded: tenant red gpus 4/2 in use (needs 0.428 more)" "$OUT_FILE"
gp quota set --tenant red --gpus 4
assert_rc 0
cancel_all red

note "quotas: the project's, within the tenant's"
as "$RA" quota set --tenant red --project train --gpus 8
assert_denied 400
assert_file_contains "$ERR_FILE" "exceeds the tenant's"
# one dimension changes alone: the ceilings the tenant sets and the project leaves open are
# inherited, not an error (issue 42, item 2)
as "$RA" -o json quota set --tenant red --project train --jobs 2
assert_rc 0
assert_json '"\(.concurrent_jobs) \(.gpus) \(.inherited.gpus)"' "2 null 4" "$OUT_FILE"
as "$RA" -o json quota set --tenant red --project train --jobs none
assert_rc 0
as "$RU" quota set --tenant red --project train --gpus 2
assert_denied 403
as "$BA" quota set --tenant red --project train --gpus 2
assert_denied 404
as "$RA" -o json quota set --tenant red --project train --gpus 4 --jobs 2 --class a100.1x=2
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.class_gpus["a100.1x"])"' "4 2 2" "$OUT_FILE"
as "$RU" -o json quota show --tenant red --project train
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.class_gpus["a100.1x"]) \(.cpus)"' "4 2 2 null" "$OUT_FILE"
sub red p1 --class a100.1x
P1=$JID
assert_json .state running "$OUT_FILE"
sub red p2 --class a100.1x --units 2
P2=$JID
assert_json .state queued "$OUT_FILE"
assert_json .reason "quota_exceeded: project train gpus(class a100.1x) 1/2 in use (needs 2 more)" "$OUT_FILE"
assert_job red "$P1" running "running on a"
job red explain "$P2"
assert_rc 0
assert_json .reason "quota_exceeded: project train gpus(class a100.1x) 1/2 in use (needs 2 more)" "$OUT_FILE"
P2_EXPLAIN=$(jout '[.suggestions[] | select(.change == "raise_quota") | "\(.level) \(.name) \(.dimension) by \(.by)"] | join(",")')
cancel red "$P2"
sub red p3 --class h100.3g
P3=$JID
assert_json .state running "$OUT_FILE"
sub red p4 --class l40s.12g
P4=$JID
assert_json .state queued "$OUT_FILE"
assert_json .reason "quota_exceeded: project train concurrent_jobs 2/2 in use (needs 1 more)" "$OUT_FILE"
job red explain "$P4"
assert_json '[.suggestions[] | select(.change == "raise_quota") | "\(.level) \(.name) \(.dimension) \(.by) to \(.to)"] | join(",")' \
    "project train concurrent_jobs 1 to 3" "$OUT_FILE"
# (issue 42 item 1) the other thing that would start it: one of its project's two running jobs
# ending, named (its own tenant's), with the words the CLI prints
assert_json '[.suggestions[] | select(.change == "wait_for_jobs") | (.jobs | length), .running, .other_tenants_jobs] | join(",")' \
    "1,1,0" "$OUT_FILE"
W_JOB=$(jout '[.suggestions[] | select(.change == "wait_for_jobs") | .jobs[0]] | .[0]')
[ "$W_JOB" == "$P1" ] || [ "$W_JOB" == "$P3" ] || fail "explain waits for $W_JOB, not one of $P1 $P3"
_pass
gp job explain "$P4" --tenant red --project train
assert_rc 0
assert_file_contains "$OUT_FILE" "would start with: raise project train's concurrent_jobs ceiling by 1"
assert_file_contains "$OUT_FILE" "would start with: wait for 1 job to end or start ($W_JOB): then it starts"
cancel red "$P3"
wait_state red "$P4" running
cancel_all red
note "quotas: card-hours this month"
gp quota set --tenant blue --card-hours 0
assert_rc 0
sub blue ch --class a100.1x
CH=$JID
assert_json .state queued "$OUT_FILE"
assert_json .reason "card_hours_exhausted: tenant blue 0/0 for $(date -u +%Y-%m)" "$OUT_FILE"
job blue explain "$CH"
assert_json '[.suggestions[] | "\(.level) \(.name) \(.dimension)"] | join(",")' \
    "tenant blue card_hours_month" "$OUT_FILE"
gp quota set --tenant blue --card-hours 100
assert_rc 0
wait_state blue "$CH" running
cancel blue "$CH"
gp quota set --tenant blue --replace
assert_rc 0
# lift the ceilings, the project's first: it inherits the tenant's, which still hold
as "$RA" -o json quota set --tenant red --project train --replace
assert_rc 0
assert_json '"\(.gpus) \(.inherited.gpus)"' "null 4" "$OUT_FILE"
# a project's own ceiling still may not exceed its tenant's
as "$RA" quota set --tenant red --project train --gpus 5
assert_denied 400
assert_file_contains "$ERR_FILE" "project gpus ceiling 5 exceeds the tenant's 4"
gp quota set --tenant red --replace
assert_rc 0
as "$RA" -o json quota show --tenant red --project train
assert_json '"\(.gpus) \(.inherited | length)"' "null 0" "$OUT_FILE"

# ---------------------------------------------------------------- capacity
note "capacity, gang, models and pools"
sub red c1 --class a100.1x --units 9
C1=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class a100.1x needs 9 units, 8 free now" "$OUT_FILE"
job red explain "$C1"
assert_rc 0
assert_json '[.suggestions[] | select(.change == "free_capacity") | "\(.class) \(.units) \(.gpus)"] | join(",")' \
    "a100.1x 1 1" "$OUT_FILE"
as "$RU" job explain "$C1" --tenant red --project train
assert_file_contains "$OUT_FILE" "would start with: 1 more free unit(s) of class a100.1x (1 GPUs)"
cancel red "$C1"
# a gang job: three 4-GPU units, two fit - it waits whole, holding nothing
sub red c2 --class a100.4x --units 3
C2=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class a100.4x needs 3 units, 2 free now" "$OUT_FILE"
assert_json '.bindings | length' 0 "$OUT_FILE"
job red explain "$C2"
assert_json '[.suggestions[] | select(.change == "free_capacity") | "\(.class) \(.units) \(.gpus)"] | join(",")' \
    "a100.4x 1 4" "$OUT_FILE"
as "$RU" job explain "$C2" --tenant red --project train
assert_file_contains "$OUT_FILE" "would start with: 1 more free unit(s) of class a100.4x (4 GPUs)"
sleep 1.2 # a round of the server loop: still nothing bound
gp -o json binding list --job "$C2"
assert_json '.items | length' 0 "$OUT_FILE"
# a smaller job of the same priority is not held back by the waiting gang
sub red c3 --class a100.4x
C3=$JID
assert_json .state running "$OUT_FILE"
job red show "$C3"
assert_json '[.bindings[].gpu] | unique | length' 4 "$OUT_FILE"
assert_json '[.bindings[].unit] | unique | join(",")' 0 "$OUT_FILE"
cancel red "$C2"
cancel red "$C3"
sub red c4 --class t4.1x
C4=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_matching_gpu: no allocatable (healthy) GPU satisfies class t4.1x" "$OUT_FILE"
gp class delete t4.1x
assert_denied 409
cancel red "$C4"
gp pool create blue-only --tenants blue --description "reserved for blue"
assert_rc 0
gp node pool d blue-only
assert_rc 0
gp class create l4.blue --form whole --models L4 --cpus 1 --memory 1 --pool blue-only
assert_rc 0
sub red c5 --class l4.blue
C5=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_allowed_pool: GPUs of class l4.blue exist only in pools tenant red may not use" "$OUT_FILE"
# (issue 42 item 1) explain names the pool that has the cards and whom it must admit
job red explain "$C5"
assert_rc 0
assert_json '[.suggestions[] | select(.change == "open_pool") | "\(.pool) \(.opens_to) \(.tenant)"] | join(",")' \
    "blue-only tenant red" "$OUT_FILE"
# a unit asking more CPUs than the node with the free card has: the most it may ask
gp class create l4.fat --form whole --models L4 --cpus 24 --memory 1 --pool blue-only
assert_rc 0
sub blue b0 --class l4.fat
B0=$JID
assert_match "$(jout .reason)" "^no_capacity: class l4.fat needs 1 unit, 0 free now with their CPUs and memory" "l4.fat's reason"
job blue explain "$B0"
assert_rc 0
assert_json '[.suggestions[] | select(.change == "unit_cpus") | "\(.class) \(.cpus) \(.class_cpus)"] | join(",")' \
    "l4.fat 16 24" "$OUT_FILE"
cancel blue "$B0"
sub blue b1 --class l4.blue
B1=$JID
assert_json .state running "$OUT_FILE"
assert_json .reason "running on d" "$OUT_FILE"
cancel red "$C5"
cancel blue "$B1"

# ---------------------------------------------------------------- MIG and shared
note "MIG slices and shared GPUs"
declare -a MIG_GPU MIG_SLICE
for i in 1 2 3 4; do
    sub red "m$i" --class h100.3g
    assert_json .state running "$OUT_FILE"
    job red show "$JID"
    assert_json '.bindings | length' 1 "$OUT_FILE"
    assert_json '.bindings[0] | "\(.node) \(.model) \(.form) \(.share)"' "b H100-80GB mig:3g.40gb 0.428" "$OUT_FILE"
    MIG_GPU[i]=$(jout '.bindings[0].gpu')
    MIG_SLICE[i]=$(jout '.bindings[0].slice')
    assert_match "${MIG_SLICE[i]}" '^MIG-' "slice bound to m$i"
done
assert_eq "$(printf '%s\n' "${MIG_SLICE[@]}" | sort -u | wc -l)" 4 "distinct slices of m1..m4"
# best fit: the second slice of a card is used before a fresh card
assert_eq "${MIG_GPU[2]}" "${MIG_GPU[1]}" "m2 on m1's card"
assert_eq "${MIG_GPU[4]}" "${MIG_GPU[3]}" "m4 on m3's card"
assert_ne "${MIG_GPU[3]}" "${MIG_GPU[1]}" "m3 on the other card"
gp -o json binding list --gpu "${MIG_SLICE[1]}"
assert_rc 0
assert_json '[.items[] | select(.end == null) | .job_name] | join(",")' m1 "$OUT_FILE"
sub red m5 --class h100.3g
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class h100.3g needs 1 unit, 0 free now" "$OUT_FILE"
declare -a SH_GPU
for i in 1 2 3 4; do
    sub red "s$i" --class l40s.12g
    assert_json .state running "$OUT_FILE"
    job red show "$JID"
    assert_json '.bindings[0] | "\(.node) \(.model) \(.form) \(.share)"' "c L40S shared:12/25 0.25" "$OUT_FILE"
    SH_GPU[i]=$(jout '.bindings[0].gpu')
done
assert_eq "$(printf '%s\n' "${SH_GPU[@]}" | sort -u | wc -l)" 1 "one L40S holds four shares"
sub red s5 --class l40s.12g
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class l40s.12g needs 1 unit, 0 free now" "$OUT_FILE"
gp -o json binding list --gpu "${SH_GPU[1]}"
assert_json '[.items[] | select(.end == null) | .job_name] | sort | join(",")' "s1,s2,s3,s4" "$OUT_FILE"
cancel_all red

# ---------------------------------------------------------------- priority classes
note "priority classes and their policy"
gp -o json priority create high --value 1000 --may-preempt yes --preemptible no --description "urgent"
assert_rc 0
assert_json '"\(.value) \(.may_preempt) \(.preemptible)"' "1000 true false" "$OUT_FILE"
gp priority create low --value 10
assert_rc 0
gp priority create prod --value 500 --project-classes production
assert_rc 0
gp priority create high --value 5
assert_denied 409
gp -o json priority set low --value 20 --description "batch"
assert_rc 0
assert_json '"\(.name) \(.value) \(.description)"' "low 20 batch" "$OUT_FILE"
gp -o json priority set low --value 10
assert_rc 0
assert_json .value 10 "$OUT_FILE"
as "$RU" priority create mine --value 1
assert_denied 403
as "$RU" -o json priority list
assert_rc 0
assert_json '[.items[].name] | join(",")' "high,prod,normal,low" "$OUT_FILE"
as "$RU" job submit pr --class a100.1x --priority-class prod --tenant red --project train
assert_denied 403
assert_file_contains "$ERR_FILE" "priority class prod is not allowed for development projects"
sub blue bp --class a100.1x --priority-class prod
assert_json .state running "$OUT_FILE"
assert_json .priority 500 "$OUT_FILE"
cancel blue "$JID"

note "preemption"
# blue fills the A100s with low, preemptible jobs; the newest are stopped first
declare -a BL
for i in 1 2 3 4 5 6 7 8; do
    if [ "$i" == 8 ]; then
        sub blue "bl$i" --class a100.1x --priority-class low --recovery fail
    else
        sub blue "bl$i" --class a100.1x --priority-class low
    fi
    assert_json .state running "$OUT_FILE"
    assert_json .preemptible true "$OUT_FILE"
    BL[i]=$JID
done
sub red rh --class a100.4x --priority-class high
RH=$JID
assert_json .preemptible false "$OUT_FILE"
assert_json .may_preempt true "$OUT_FILE"
# the round after the submit stops the victims; the next one places it
assert_match "$(jout '"\(.state): \(.reason)"')" \
    '^(admitted: waiting_for_preemption: 4 lower-priority jobs being stopped|running: running on a)$' \
    "state and reason of rh right after submit"
wait_state red "$RH" running 3
job red show "$RH"
assert_json '[.events[] | "\(.kind): \(.message)"] | join("|")' \
    "submitted: queued|admitted: waiting_for_preemption: 4 lower-priority jobs being stopped|placed: running on a" "$OUT_FILE"
assert_json '.bindings | length' 4 "$OUT_FILE"
RH_GPUS=$(jout '[.bindings[].gpu] | sort | join(",")')
# the victims are blue's, the preemptor red's: the reason does not name it
PRE_REASON="preempted by a job of another tenant (priority 1000 > 10)"
for i in 5 6 7; do
    job blue show "${BL[i]}"
    assert_rc 0
    assert_match "$(jout .state)" '^(queued|admitted)$' "state of requeued bl$i"
    assert_json .preemptions 1 "$OUT_FILE"
    assert_json '[.events[] | select(.kind == "preempted") | .message] | join("|")' "requeued: $PRE_REASON" "$OUT_FILE"
    assert_json '[.bindings[] | .end_reason] | join(",")' preempted "$OUT_FILE"
done
assert_job blue "${BL[8]}" preempted "ended: $PRE_REASON"
job blue show "${BL[8]}"
assert_json .preemptions 1 "$OUT_FILE"
assert_match "$(jout .ended_at)" '^20' "ended_at of the preempted bl8"
assert_json '[.bindings[] | .end_reason] | join(",")' preempted "$OUT_FILE"
VICTIM_GPUS=$(for i in 5 6 7 8; do
    gp -o json binding list --job "${BL[i]}"
    jout '.items[0].gpu'
done | sort | paste -sd,)
assert_eq "$VICTIM_GPUS" "$RH_GPUS" "the preemptor holds the victims' GPUs"
for i in 1 2 3 4; do
    assert_job blue "${BL[i]}" running "running on a"
done
gp -o json audit list --action job.preempt
assert_rc 0
assert_json '[.items[] | .target.id] | sort | join(",")' \
    "$(printf '%s\n' "${BL[5]}" "${BL[6]}" "${BL[7]}" "${BL[8]}" | sort | paste -sd,)" "$OUT_FILE"
assert_json '[.items[] | "\(.actor) \(.tenant) \(.summary.why) \(.summary.victim_priority) \(.summary.preemptor_priority)"] | unique | join(",")' \
    "scheduler blue $PRE_REASON 10 1000" "$OUT_FILE"
assert_json '[.items[] | .summary.requeued | tostring] | sort | join(",")' "false,true,true,true" "$OUT_FILE"
# the preemptor's side, in its own tenant's trail
gp -o json audit list --action job.preempt_for
assert_rc 0
assert_json '[.items[] | "\(.target.id) \(.tenant)"] | unique | join(",")' "$RH red" "$OUT_FILE"
assert_json '.items | length' 4 "$OUT_FILE"
# blue's tenant-admin reads its trail: nothing there names red's job
as "$BA" -o json audit list --tenant blue --action job.preempt
assert_rc 0
assert_json '.items | length' 4 "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "$RH"
as "$BA" -o json audit list --tenant blue --action job.preempt_for
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"

note "explain suggests a priority class; the submitter changes it"
sub red rn --class a100.4x
RN=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class a100.4x needs 1 unit, 0 free now" "$OUT_FILE"
job red explain "$RN"
assert_rc 0
assert_json .queue_position 1 "$OUT_FILE"
assert_json '[.suggestions[] | select(.change == "priority_class") | "\(.name) \(.value)"] | join(",")' \
    "high 1000" "$OUT_FILE"
assert_json '[.suggestions[] | select(.change == "free_capacity") | "\(.class) \(.units) \(.gpus)"] | join(",")' \
    "a100.4x 1 4" "$OUT_FILE"
as "$RU" job explain "$RN" --tenant red --project train
assert_file_contains "$OUT_FILE" "job $RN is number 1 in the queue"
assert_file_contains "$OUT_FILE" "blocked by: no_capacity: class a100.4x needs 1 unit, 0 free now"
assert_file_contains "$OUT_FILE" "would start with: priority class high (value 1000), which you may use"
# another tenant's user cannot touch it; its own user may not pick a class its project may not use
as "$BU" job priority "$RN" high --tenant red --project train
assert_denied 404
job red priority "$RN" prod
assert_denied 403
job red priority "$RN" nosuch
assert_denied 400
job red priority "$RN" high
assert_rc 0
assert_json .priority_class high "$OUT_FILE"
assert_json .priority 1000 "$OUT_FILE"
assert_json .preemptible false "$OUT_FILE"
wait_state red "$RN" running 3
job red show "$RN"
assert_json '[.events[] | select(.kind == "priority") | .message] | join("|")' \
    "priority class set to high (1000), not preemptible, by ru" "$OUT_FILE"
for i in 1 2 3 4; do
    job blue show "${BL[i]}"
    assert_match "$(jout .state)" '^(queued|admitted)$' "state of requeued bl$i"
    assert_json '[.events[] | select(.kind == "preempted") | .message] | join("|")' \
        "requeued: $PRE_REASON" "$OUT_FILE"
done
# the high jobs are not preemptible: a second high job waits
sub blue bh --class a100.1x --priority-class high
BH=$JID
assert_json .state admitted "$OUT_FILE"
assert_match "$(jout .reason)" '^no_capacity: class a100\.1x needs 1 unit, 0 free now$' "reason of bh"
# lower-priority jobs of its class do not jump it
for i in 1 5; do
    assert_job blue "${BL[i]}" "$(jf blue "${BL[i]}" .state)" \
        "waiting_behind_higher_priority: job $BH (priority 1000) waits for the same class a100.1x"
done
# nor do another tenant's, and they are not told which job holds them back
sub red rl --class a100.1x
assert_json .state admitted "$OUT_FILE"
assert_json .reason "waiting_behind_higher_priority: a job of another tenant (priority 1000) waits for the same class a100.1x" "$OUT_FILE"
cancel red "$JID"
# when the preemptor ends, the requeued victims run again
cancel red "$RH"
wait_state blue "$BH" running 3
running_lows() {
    job blue list --state running
    [ "$(jout '[.items[] | select(.priority_class == "low")] | length')" == 3 ]
}
poll 3 running_lows || fail "three requeued low jobs did not run again"
_pass
# the oldest go first (same priority, same tenant); each holds a new binding
assert_eq "$(jout '[.items[] | select(.priority_class == "low") | .name] | sort | join(",")')" \
    "bl1,bl2,bl3" "low jobs running again"
job blue show "${BL[1]}"
assert_json '[.bindings[] | .end_reason // "open"] | join(",")' "open,preempted" "$OUT_FILE"
assert_json .preemptions 1 "$OUT_FILE"
# within one tenant the reason names the preemptor
sub blue bh2 --class a100.1x --priority-class high
BH2=$JID
wait_state blue "$BH2" running 3
job blue list
assert_json "[.items[] | select(.priority_class == \"low\" and (.state == \"queued\" or .state == \"admitted\")) | .name] | length" 5 "$OUT_FILE"
SAME_VICTIMS=0
for id in $(jout '.items[] | select(.priority_class == "low" and .preemptions == 2) | .id'); do
    job blue show "$id"
    if [ "$(jout '[.events[] | select(.kind == "preempted")] | last | .message')" == "requeued: preempted by job $BH2 (priority 1000 > 10)" ]; then
        SAME_VICTIMS=$((SAME_VICTIMS + 1))
    fi
done
assert_eq "$SAME_VICTIMS" 1 "low jobs preempted by blue's own bh2 (reason naming it)"
cancel_all red
cancel_all blue

# ---------------------------------------------------------------- fair share
note "fair share: the tenant further below its quota goes first"
gp quota set --tenant red --gpus 4
assert_rc 0
gp quota set --tenant blue --gpus 4
assert_rc 0
# four of the eight A100s are cordoned: four usable
for i in 4 5 6 7; do
    gp gpu cordon "${A100[i]}"
    assert_rc 0
done
sub red f1 --class a100.1x --units 3
assert_json .state running "$OUT_FILE"
sub blue f0 --class a100.1x
F0=$JID
assert_json .state running "$OUT_FILE"
sub red fr --class a100.1x
FR=$JID
assert_json .state admitted "$OUT_FILE"
assert_json .reason "no_capacity: class a100.1x needs 1 unit, 0 free now" "$OUT_FILE"
sub blue fb --class a100.1x
FB=$JID
assert_json .state admitted "$OUT_FILE"
job red explain "$FR"
assert_json .queue_position 1 "$OUT_FILE"
cancel blue "$F0"
wait_state blue "$FB" running 3
assert_job red "$FR" admitted "no_capacity: class a100.1x needs 1 unit, 0 free now"
cancel_all red
cancel_all blue
for i in 4 5 6 7; do
    gp gpu uncordon "${A100[i]}"
    assert_rc 0
done

# ---------------------------------------------------------------- isolation
note "isolation between tenants"
sub red iso --class a100.1x
ISO=$JID
assert_json .state running "$OUT_FILE"
as "$BU" job show "$ISO" --tenant red --project train
assert_denied 404
as "$BU" job cancel "$ISO" --tenant red --project train
assert_denied 404
as "$BU" job explain "$ISO" --tenant red --project train
assert_denied 404
# through its own project: still not found
as "$BU" job show "$ISO" --tenant blue --project serve
assert_denied 404
as "$BU" job cancel "$ISO" --tenant blue --project serve
assert_denied 404
as "$RU" job list --tenant blue --project serve
assert_denied 403 404
as "$RU" job submit x --class a100.1x --tenant blue --project serve
assert_denied 403 404
as "$RU" binding list
assert_denied 403
as "$RU" binding list --tenant blue
assert_denied 404
as "$RU" binding list --gpu "$R1_GPU"
assert_denied 403
as "$BA" -o json binding list --tenant blue
assert_rc 0
assert_json "[.items[] | select(.tenant != \"blue\")] | length" 0 "$OUT_FILE"
as "$BA" job list --tenant red --project train
assert_denied 403 404
assert_job red "$ISO" running "running on a"
cancel red "$ISO"

# ---------------------------------------------------------------- the end
note "stop"
stop_agent
stop_server

note "regressions of two defects found while writing this test"
# 1. `job submit --priority-class nosuch` is the request's fault: 400, not 404
#    (jobs_submit sets err.code to GP_EINVALID when prio_get finds nothing).
assert_file_contains "$E2E_TMP/nosuch-pc.err" "HTTP 400)" "error for 'job submit --priority-class nosuch'"
# 2. `job explain` on a job held by a per-class ceiling suggests raising that
#    ceiling (sched_explain's raise_quota covers class_gpus too).
assert_match "$P2_EXPLAIN" '^project train .*a100\.1x.* by 1$' "explain's raise_quota suggestion for a job over its class ceiling"
done_testing
