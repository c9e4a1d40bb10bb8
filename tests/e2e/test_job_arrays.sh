#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_job_arrays.sh - job arrays end to end (docs/scheduling.md, "Arrays";
# issue 37 item 3), on one simulated 8-GPU node:
#
#  1. an array of 200 one-card tasks, at most 5 at once (--array 0-199%5), in
#     one request: all succeed; each task's bindings in the store never overlap
#     more than 5 (the cap, read from the timeline, not sampled); each task ran
#     with GPUPOOL_ARRAY_INDEX = its index and GPUPOOL_ARRAY_ID = the array;
#     `job array show` counts 200 succeeded and the card-seconds they held;
#     `job list --array` lists the tasks;
#  2. cancel: an array of 20 long tasks, 3 at a time: 3 run, 17 wait; `job
#     array cancel` ends all 20; a task is a job (show, explain);
#  3. refusals that change nothing: a bad range, too many tasks, a cap of 0,
#     --wait with --array (usage), another tenant's array (404), a reader
#     cancelling someone's array (403).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_job_arrays.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/asleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"a8","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]}]}
EOF
for u in ru rv bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

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
user() {
    local name=$1 role=$2 tenant=$3
    run_in "$E2E_TMP/pw.$name" --server "$URL" --token "$ADMIN" user create "$name"
    assert_rc 0
    gp member grant "$name" "$role" --tenant "$tenant" --project p
    assert_rc 0
    run_in "$E2E_TMP/pw.$name" --server "$URL" login "$name"
    assert_rc 0
    printf -v "TOK_$name" '%s' "$(head -n 1 "$OUT_FILE")"
}
user ru project-user red
user rv viewer red
user bu project-user blue
RU=$TOK_ru RV=$TOK_rv BU=$TOK_bu
R=(--tenant red --project p)

counts() { # STATE: how many tasks of array $1 are in STATE (job array show)
    as "$RU" -o json job array show "$1" "${R[@]}"
    jout ".tasks.$2"
}
all_in() { [ "$(counts "$1" "$2")" == "$3" ]; }

note "1. 200 tasks, at most 5 at once, in one request"
as "$RU" -o json job submit sweep "${R[@]}" --class a100.1x --array 0-199%5 -- \
    sh -c 'echo "idx=$GPUPOOL_ARRAY_INDEX array=$GPUPOOL_ARRAY_ID"'
assert_rc 0
A=$(jout .id)
assert_match "$A" '^[0-9a-f]{32}$' "the array's id"
assert_json '"\(.size) \(.first_index) \(.last_index) \(.max_running) \(.tasks.queued)"' \
    "200 0 199 5 200" "$OUT_FILE"
poll 120 all_in "$A" succeeded 200 ||
    fail "the array did not finish: $(cat "$OUT_FILE")"
_pass
assert_json .tasks.failed 0 "$OUT_FILE"
assert_contains "$(jout '.card_seconds > 0')" true
# the cap, from the timeline: at no binding's start were more than 5 of the array's open
most=$(db_sql "$DATA" "SELECT MAX(c) FROM (SELECT (SELECT COUNT(*) FROM bindings b2
  JOIN jobs j2 ON j2.id = b2.job_id WHERE j2.array_id = '$A' AND b2.start_us <= b1.start_us
  AND (b2.end_us IS NULL OR b2.end_us > b1.start_us)) AS c FROM bindings b1
  JOIN jobs j1 ON j1.id = b1.job_id WHERE j1.array_id = '$A') AS x" | tr -d ' \n')
assert_match "$most" '^[1-5]$' "the most tasks of the array holding cards at once"
tasks=$(db_sql "$DATA" "SELECT COUNT(*) FROM bindings b JOIN jobs j ON j.id = b.job_id
  WHERE j.array_id = '$A'" | tr -d ' \n')
assert_eq "$tasks" 200 "bindings of the array's tasks"
as "$RU" -o json job list "${R[@]}" --array "$A"
assert_rc 0
assert_json '.items | length' 200 "$OUT_FILE"
assert_json '[.items[] | .array.index] | sort | .[0], .[199]' "$(printf '0\n199')" "$OUT_FILE"
for k in 0 7 199; do
    T=$(jq -r ".items[] | select(.array.index == $k) | .id" "$OUT_FILE")
    as "$RU" -o json job logs "$T" "${R[@]}"
    assert_rc 0
    assert_contains "$(jout .log)" "idx=$k array=$A"
    as "$RU" -o json job list "${R[@]}" --array "$A"
done

note "2. cancel an array: 3 run, 17 wait, all end"
as "$RU" -o json job submit long "${R[@]}" --class a100.1x --array 20%3 -- "$BIN/asleep" 600
assert_rc 0
L=$(jout .id)
assert_json '"\(.first_index) \(.last_index) \(.max_running)"' "0 19 3" "$OUT_FILE"
poll 20 all_in "$L" running 3 || fail "3 tasks of the array did not start: $(cat "$OUT_FILE")"
_pass
assert_json .tasks.queued 17 "$OUT_FILE"
# a task is a job: shown with its array, explained as any queued job
as "$RU" -o json job list "${R[@]}" --array "$L" --state queued
T=$(jout '.items[0].id')
as "$RU" -o json job show "$T" "${R[@]}"
assert_json .array.id "$L" "$OUT_FILE"
as "$RU" -o json job explain "$T" "${R[@]}"
assert_rc 0
as "$RV" job array cancel "$L" "${R[@]}"
assert_denied 403
as "$RU" -o json job array cancel "$L" "${R[@]}"
assert_rc 0
assert_json '"\(.tasks.cancelled) \(.tasks.running) \(.tasks.queued)"' "20 0 0" "$OUT_FILE"
gp -o json audit list --tenant red --action job.array.cancel
assert_json '[.items[] | select(.result == "ok") | .summary.tasks_cancelled] | join(",")' '20' "$OUT_FILE"

note "3. refusals change nothing"
count_jobs() {
    as "$RU" -o json job list "${R[@]}"
    jout '.items | length'
}
before=$(count_jobs)
for bad in 5-3 0-10000 abc 0-3%0 -1-3 "1 - 3" 0-3%x; do
    as "$RU" job submit x "${R[@]}" --class a100.1x --array "$bad"
    assert_denied 400
done
as "$RU" job submit x "${R[@]}" --class a100.1x --array 0-3 --wait
assert_rc 2
as "$BU" job array show "$A" --tenant blue --project p
assert_denied 404
as "$BU" job array cancel "$L" --tenant blue --project p
assert_denied 404
as "$BU" job list --tenant blue --project p --array "$A" -o json
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
assert_eq "$(count_jobs)" "$before" "jobs after the refused submits"

stop_server
done_testing
