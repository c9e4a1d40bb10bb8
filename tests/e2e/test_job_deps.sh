#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_job_deps.sh - job dependencies end to end (docs/scheduling.md,
# "Dependencies"; issue 37 item 4), on one simulated 4-GPU node:
#
#  1. a pipeline: prep (runs until the test lets it succeed) -> train --after prep (ok) and
#     report --after prep:any; both wait, holding no quota and no card, with
#     `job explain` naming prep, until prep succeeds; then both run;
#  2. a failure: bad (exits 3); fix --after bad:notok runs, next --after bad
#     (ok) is cancelled with a reason naming bad, and then --after next:ok is
#     cancelled too (the cascade), while last --after next:any runs;
#  3. refusals that change nothing: an unknown job (404), another project's
#     or tenant's job (404), a bad kind (400), a job named twice (400), a
#     dependency already impossible (bad has failed: --after bad:ok, 409);
#  4. a waiting job cancelled by hand, and the audit of the scheduler's
#     cancellations in the tenant's trail.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_job_deps.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/dsleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"d4","cpus":32,"memory_gib":256,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF
for u in ru bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t --class development
    assert_rc 0
done
gp project create q --tenant red --class development
assert_rc 0
user() {
    local name=$1 tenant=$2
    run_in "$E2E_TMP/pw.$name" --server "$URL" --token "$ADMIN" user create "$name"
    assert_rc 0
    gp member grant "$name" project-user --tenant "$tenant" --project p
    assert_rc 0
    run_in "$E2E_TMP/pw.$name" --server "$URL" login "$name"
    assert_rc 0
    printf -v "TOK_$name" '%s' "$(head -n 1 "$OUT_FILE")"
}
user ru red
user bu blue
RU=$TOK_ru BU=$TOK_bu
gp member grant ru project-user --tenant red --project q
assert_rc 0

# sub NAME ARGS...: red's project-user submits NAME in red/p; JID its id
sub() {
    local name=$1
    shift
    as "$RU" -o json job submit "$name" --tenant red --project p --class a100.1x "$@"
    assert_rc 0
    JID=$(jout .id)
    assert_match "$JID" '^[0-9a-f]{32}$' "id of job $name"
}
jshow() { as "$RU" -o json job show "$1" --tenant red --project p; }
state_of() {
    jshow "$1"
    jout .state
}
state_is() { [ "$(state_of "$1")" == "$2" ]; }
wait_state() {
    poll "${3:-15}" state_is "$1" "$2" ||
        fail "job $1 did not become $2 (state '$(state_of "$1")', reason '$(jout .reason)')"
    _pass
}

# gated NAME ARGS...: a job that runs until the test touches $E2E_TMP/go.NAME, then exits with
# the code given (0 by default): the test decides when a dependency ends, not the clock
gated() {
    local name=$1 code=${2:-0}
    shift 2
    sub "$name" "$@" -- sh -c "while [ ! -e $E2E_TMP/go.$name ]; do $BIN/dsleep 0.1; done; exit $code"
}

note "1. a pipeline: train waits for prep to succeed, report for it to end"
gated prep 0
PREP=$JID
sub train --after "$PREP" -- "$BIN/dsleep" 600
TRAIN=$JID
assert_json '.after[0] | "\(.job) \(.kind) \(.status)"' "$PREP ok waiting" "$OUT_FILE"
assert_json .reason "waiting for its dependencies (job explain lists them)" "$OUT_FILE"
sub report --after "$PREP:any" -- "$BIN/dsleep" 600
REPORT=$JID
wait_state "$PREP" running
# one round later still: the dependents hold nothing (no binding, still queued)
as "$RU" -o json job explain "$TRAIN" --tenant red --project p
assert_rc 0
assert_json .reason "waiting for its dependencies" "$OUT_FILE"
assert_json .would_start_now false "$OUT_FILE"
assert_contains "$(jout .explanation)" "job $PREP (prep) to succeed"
# (issue 42 item 1) the suggestion names the job it waits for, machine-readable and in words
assert_json '[.suggestions[] | select(.change == "wait_for_jobs") | .jobs[]] | join(",")' "$PREP" "$OUT_FILE"
assert_contains "$(jout '.suggestions[0].text')" "job $PREP (prep) to succeed"
jshow "$TRAIN"
assert_json '"\(.state) \(.bindings | length)"' "queued 0" "$OUT_FILE"
jshow "$REPORT"
assert_json '"\(.state) \(.bindings | length)"' "queued 0" "$OUT_FILE"
touch "$E2E_TMP/go.prep"
wait_state "$PREP" succeeded
wait_state "$TRAIN" running
wait_state "$REPORT" running
jshow "$TRAIN"
assert_json '.after[0] | "\(.state) \(.status)"' "succeeded met" "$OUT_FILE"
for j in $TRAIN $REPORT; do
    as "$RU" job cancel "$j" --tenant red --project p
    assert_rc 0
done

note "2. a failure: notok runs, ok is cancelled, and what waited on it in turn"
gated bad 3
BAD=$JID
sub fix --after "$BAD:notok" -- "$BIN/dsleep" 600
FIX=$JID
sub next --after "$BAD" -- "$BIN/dsleep" 600
NEXT=$JID
sub after-next --after "$NEXT:ok" -- "$BIN/dsleep" 600
AFTERNEXT=$JID
sub last --after "$NEXT:any" -- "$BIN/dsleep" 1
LAST=$JID
wait_state "$BAD" running
jshow "$NEXT"
assert_json .state queued "$OUT_FILE"
touch "$E2E_TMP/go.bad"
wait_state "$BAD" failed
wait_state "$FIX" running
wait_state "$NEXT" cancelled
assert_contains "$(jout .reason)" "dependency never met: job $BAD failed"
assert_json '[.events[] | select(.kind == "cancelled")] | length' 1 "$OUT_FILE"
wait_state "$AFTERNEXT" cancelled
assert_contains "$(jout .reason)" "dependency never met: job $NEXT cancelled"
wait_state "$LAST" succeeded
as "$RU" job cancel "$FIX" --tenant red --project p
assert_rc 0

note "3. refusals change nothing"
count_jobs() {
    as "$RU" -o json job list --tenant red --project p
    jout '.items | length'
}
before=$(count_jobs)
as "$RU" job submit x --tenant red --project p --class a100.1x --after 0123456789abcdef0123456789abcdef
assert_denied 404
assert_file_contains "$ERR_FILE" "no job 0123456789abcdef0123456789abcdef in this project"
as "$RU" -o json job submit other --tenant red --project q --class a100.1x -- "$BIN/dsleep" 600
assert_rc 0
OTHER=$(jout .id)
as "$RU" job submit x --tenant red --project p --class a100.1x --after "$OTHER"
assert_denied 404
as "$BU" -o json job submit blue1 --tenant blue --project p --class a100.1x -- "$BIN/dsleep" 600
assert_rc 0
BLUE1=$(jout .id)
as "$RU" job submit x --tenant red --project p --class a100.1x --after "$BLUE1"
assert_denied 404
as "$BU" job submit x --tenant blue --project p --class a100.1x --after "$PREP"
assert_denied 404
as "$RU" job submit x --tenant red --project p --class a100.1x --after "$PREP:maybe"
assert_denied 400
assert_file_contains "$ERR_FILE" "field 'after[0]' ('$PREP:maybe') is not valid: A job's id, alone or with"
as "$RU" job submit x --tenant red --project p --class a100.1x --after "$PREP" --after "$PREP:any"
assert_denied 400
as "$RU" job submit x --tenant red --project p --class a100.1x --after "$BAD:ok"
assert_denied 409
assert_file_contains "$ERR_FILE" "has already failed"
AUTH_HEADER="Authorization: Bearer $RU" api POST /api/v1/tenants/red/projects/p/jobs \
    '{"name":"x","class":"a100.1x","after":"'"$PREP"'"}'
assert_status 400
assert_eq "$(count_jobs)" "$before" "jobs after the refused submits"
for j in $OTHER; do
    as "$RU" job cancel "$j" --tenant red --project q
    assert_rc 0
done
as "$BU" job cancel "$BLUE1" --tenant blue --project p
assert_rc 0

note "4. a waiting job cancelled by hand; the scheduler's cancellations audited"
sub gate -- "$BIN/dsleep" 600
GATE=$JID
sub waits --after "$GATE" -- "$BIN/dsleep" 600
WAITS=$JID
as "$RU" job cancel "$WAITS" --tenant red --project p
assert_rc 0
wait_state "$WAITS" cancelled
as "$RU" job cancel "$GATE" --tenant red --project p
assert_rc 0
gp -o json audit list --tenant red --action job.cancel
assert_rc 0
assert_json "[.items[] | select(.actor == \"scheduler\" and .target.id == \"$NEXT\")] | length" 1 "$OUT_FILE"
assert_json "[.items[] | select(.actor == \"scheduler\" and .target.id == \"$AFTERNEXT\")] | length" 1 "$OUT_FILE"

stop_server
done_testing
