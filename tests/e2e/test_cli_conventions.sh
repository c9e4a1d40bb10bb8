#!/usr/bin/env bash
# test_cli_conventions.sh - the CLI's conventions (docs/cli.md "Conventions"):
# global flags anywhere on the line (also `agent --server URL`), `quota set`
# changing only the ceilings it is given (PATCH …/quota, a merge on the
# server; --replace for a whole new set), numbers rounded for people in
# tables but full precision in -o json; -o=json and -o yaml; the context
# (`gpupool context`: default --tenant and --project, like kubectl's); "did
# you mean" for a mistyped command, verb or option (issue 42, item 4).
. "$(dirname "$0")/lib.sh"

DATA=$E2E_TMP/data
start_server

# ---------------------------------------------------------------- global flags
note "global flags anywhere on the line"
run_cli tenant create red --server "$URL" --token "$TOKEN"
assert_rc 0
run_cli tenant list -o json --server="$URL" --token="$TOKEN"
assert_rc 0
assert_json '[.items[].name] | index("red") != null' true "$OUT_FILE"
run_cli --server "$URL" tenant show red --token "$TOKEN" -ojson
assert_rc 0
assert_json .name red "$OUT_FILE"
run_cli --token "$TOKEN" tenant show red --output json --server "$URL"
assert_rc 0
assert_json .name red "$OUT_FILE"
# a later --server wins, like any repeated option
run_cli --server http://127.0.0.1:1 --token "$TOKEN" tenant show red --server "$URL"
assert_rc 0
# still a usage error: a value missing at the end, and a bad -o
run_cli --server "$URL" --token "$TOKEN" tenant show red -o
assert_rc 2
assert_one_line_error
run_cli tenant show red --server "$URL" --token "$TOKEN" -o xml
assert_rc 2
assert_one_line_error "-o must be table, json, yaml or csv"
gp project create train --tenant red
assert_rc 0

note "gpupool agent --server URL (the agent's help says so)"
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600
assert_rc 0
JT=$(jout .token)
E2E_LAST_CMD="agent --server URL --once"
GPUPOOL_JOIN_TOKEN=$JT timeout 30 "$GPUPOOL_BIN" agent --server "$URL" --once --simulate 1 \
    --state-dir "$E2E_TMP/agent" >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
RC=$?
assert_rc 0
assert_file_lacks "$ERR_FILE" "unknown option"
gp node list -o json
assert_rc 0
assert_json '.items | length' 1 "$OUT_FILE"

# ---------------------------------------------------------------- quota set
note "quota set changes only what it is given"
gp -o json quota set --tenant red --gpus 6 --jobs 10 --cpus 64
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.cpus)"' "6 10 64" "$OUT_FILE"
gp -o json quota set --tenant red --gpus 4
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.cpus)"' "4 10 64" "$OUT_FILE"
gp -o json quota show --tenant red
assert_json '"\(.gpus) \(.concurrent_jobs) \(.cpus)"' "4 10 64" "$OUT_FILE"
# gateway ceilings set through the API survive a CLI set too
api PATCH /api/v1/tenants/red/quota '{"tokens_month":5000}'
assert_status 200
assert_json '"\(.gpus) \(.tokens_month)"' "4 5000"
gp -o json quota set --tenant red --jobs 8
assert_json '"\(.gpus) \(.concurrent_jobs) \(.tokens_month)"' "4 8 5000" "$OUT_FILE"
# none lifts one
gp -o json quota set --tenant red --cpus none
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.cpus)"' "4 8 null" "$OUT_FILE"
# classes merge per class; NAME=none lifts one
gp -o json quota set --tenant red --class a100.1x=3 --class h100.3g=2
assert_json '.class_gpus | "\(.["a100.1x"]) \(.["h100.3g"])"' "3 2" "$OUT_FILE"
gp -o json quota set --tenant red --class h100.3g=none
assert_json '.class_gpus | "\(.["a100.1x"]) \(.["h100.3g"]) \(.gpus)"' "3 null null" "$OUT_FILE"
assert_json '.gpus' 4 "$OUT_FILE"
# nothing to change is a usage error, not "lift everything"
gp quota set --tenant red
assert_rc 2
assert_one_line_error "give at least one ceiling"
# --replace: today's whole-set behaviour
gp -o json quota set --tenant red --gpus 5 --replace
assert_rc 0
assert_json '"\(.gpus) \(.concurrent_jobs) \(.tokens_month) \(.class_gpus | length)"' "5 null null 0" "$OUT_FILE"

note "PATCH …/quota: invalid bodies change nothing"
api PATCH /api/v1/tenants/red/quota '{"gpus":"six"}'
assert_status 400
api PATCH /api/v1/tenants/red/quota '{"class_gpus":[1]}'
assert_status 400
api PATCH /api/v1/tenants/red/quota '{"bogus":1}'
assert_status 400
api PATCH /api/v1/tenants/red/quota '[]'
assert_status 400
api GET /api/v1/tenants/red/quota
assert_json '"\(.gpus) \(.concurrent_jobs)"' "5 null"
# a project's patch must stay within the tenant's
api PATCH /api/v1/tenants/red/projects/train/quota '{"jobs":1}'
assert_status 400
api PATCH /api/v1/tenants/red/projects/train/quota '{"gpus":9}'
assert_status 400
api PATCH /api/v1/tenants/red/projects/train/quota '{"gpus":2}'
assert_status 200
assert_json .gpus 2
api PATCH /api/v1/tenants/red/projects/train/quota '{"concurrent_jobs":3}'
assert_status 200
assert_json '"\(.gpus) \(.concurrent_jobs)"' "2 3"

note "concurrent patches to different ceilings all apply (merged on the server)"
pids=()
for dim in cpus memory_gib gpu_memory_gib concurrent_jobs; do
    for i in 1 2 3; do
        curl -sS -o /dev/null --max-time 20 -X PATCH -H "Authorization: Bearer $TOKEN" \
            -H 'Content-Type: application/json' --data-binary "{\"$dim\":$((i * 100))}" \
            "$URL/api/v1/tenants/red/quota" &
        pids+=("$!")
    done
done
for p in "${pids[@]}"; do wait "$p"; done
api GET /api/v1/tenants/red/quota
assert_json '[.cpus, .memory_gib, .gpu_memory_gib, .concurrent_jobs] | map(. != null) | all' true
assert_json .gpus 5

# ---------------------------------------------------------------- numbers
note "tables round numbers for people; -o json keeps them"
gp -o json quota set --tenant red --card-hours 1.3041849999999999
assert_rc 0
assert_json .card_hours_month 1.304 "$OUT_FILE"
gp quota show --tenant red
assert_rc 0
assert_eq "$(field card_hours_month)" 1.30 "card-hours in a table"
assert_eq "$(field gpus)" 5 "a whole number stays one"
gp -o csv quota show --tenant red
assert_file_contains "$OUT_FILE" "card_hours_month,1.304"

# ---------------------------------------------------------------- completion
note "bash completion generated from the command table"
run_cli completion bash
assert_rc 0
cp "$OUT_FILE" "$E2E_TMP/completion.bash"
bash -n "$E2E_TMP/completion.bash"
assert_eq "$?" 0 "the completion script parses"
# complete WORDS...: what bash would offer for the last word
complete_words() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpupool; echo "${COMPREPLY[*]}"' \
        _ "$E2E_TMP/completion.bash" "$GPUPOOL_BIN" "$@"
}
assert_eq "$(complete_words qu)" quota "a command"
assert_eq "$(complete_words job s)" "submit show" "a command's verbs"
assert_eq "$(complete_words --server http://x -o json quota s)" "show set" "past global flags"
assert_eq "$(complete_words quota set --rep)" --replace "a verb's options, from its help"
assert_eq "$(complete_words job logs --fo)" --follow "job logs --follow"
assert_eq "$(complete_words tenant list -o j)" json "-o values"
assert_eq "$(complete_words backup --inc)" "--include-key" "a command without verbs: its options"
run_cli completion zsh
assert_rc 2
# the hidden verb lists and nothing else runs (no server is reachable here)
run_cli --server http://127.0.0.1:1 quota __verbs
assert_rc 0
assert_eq "$(cat "$OUT_FILE")" "show set" "quota's verbs"

# ---------------------------------------------------------------- jobs
note "job submit --wait and job logs --follow"
workload_bin
ln -s "$(command -v sleep)" "$BIN/wlsleep"
gp quota set --tenant red --replace
assert_rc 0
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp member grant admin project-user --tenant red --project train
assert_rc 0
"$GPUPOOL_BIN" agent --server "$URL" --simulate 1 --interval 1 --grace 2 \
    --state-dir "$E2E_TMP/agent" >"$E2E_TMP/agent2.out" 2>"$E2E_TMP/agent2.err" </dev/null &
E2E_PIDS+=("$!")
J=(--tenant red --project train)
gp job submit ok --class a100.1x "${J[@]}" --wait -- sh -c "echo one; $BIN/wlsleep 1; echo two"
assert_rc 0
assert_eq "$(field state)" succeeded "submit --wait waits for the end"
gp -o json job submit bad --class a100.1x "${J[@]}" --wait -- sh -c 'exit 3'
assert_rc 1
assert_json .state failed "$OUT_FILE"
assert_one_line_error "failed"
gp job list "${J[@]}" --wait
assert_rc 2
gp -o json job submit slow --class a100.1x "${J[@]}" -- sh -c "for i in 1 2 3 4; do echo line-\$i; $BIN/wlsleep 1; done"
assert_rc 0
SLOW=$(jout .id)
gp job logs "$SLOW" "${J[@]}" --follow
assert_rc 0
assert_eq "$(tr '\n' ' ' <"$OUT_FILE")" "line-1 line-2 line-3 line-4 " "--follow prints each line once, to the end"
gp -o json job show "$SLOW" "${J[@]}"
assert_json .state succeeded "$OUT_FILE"
gp -o json job logs "$SLOW" "${J[@]}" --follow
assert_rc 2
gp job show "$SLOW" "${J[@]}" --follow
assert_rc 2

# ---------------------------------------------------------------- kubectl habits
note "-o=json and -o yaml"
gp -o=json tenant show red
assert_rc 0
assert_json .name red "$OUT_FILE"
gp tenant show red --output=json
assert_rc 0
assert_json .name red "$OUT_FILE"
# yaml says what json says: an object and a list, read back by a YAML parser
for what in "tenant show red" "job list ${J[*]}" "quota show ${J[*]}"; do
    # shellcheck disable=SC2086
    gp -o json $what
    cp "$OUT_FILE" "$E2E_TMP/as.json"
    # shellcheck disable=SC2086
    gp -o yaml $what
    assert_rc 0
    assert_eq "$(python3 -c 'import json,sys,yaml; print(yaml.safe_load(open(sys.argv[1])) == json.load(open(sys.argv[2])))' \
        "$OUT_FILE" "$E2E_TMP/as.json")" True "-o yaml of $what reads back as its json"
done
gp -o yaml job show "$SLOW" "${J[@]}"
assert_file_contains "$OUT_FILE" "state: succeeded"

note "did you mean"
gp jbo list
assert_rc 2
assert_one_line_error "unknown command 'jbo'; did you mean 'job'?"
gp job lsit "${J[@]}"
assert_rc 2
assert_one_line_error "did you mean 'list'?"
gp job list --tenat red --project train
assert_rc 2
assert_one_line_error "unknown option --tenat; did you mean --tenant?"
gp job list --zzz
assert_rc 2
assert_file_lacks "$ERR_FILE" "did you mean"

note "a job by its name or a unique id prefix"
gp -o json job show "${SLOW:0:8}" "${J[@]}"
assert_rc 0
assert_json .id "$SLOW" "$OUT_FILE"
gp -o json job show slow "${J[@]}"
assert_rc 0
assert_json .id "$SLOW" "$OUT_FILE"
gp -o json job submit twin --class a100.1x "${J[@]}" -- "$BIN/wlsleep" 30
TWIN1=$(jout .id)
gp -o json job cancel twin "${J[@]}"
assert_rc 0
assert_json .id "$TWIN1" "$OUT_FILE"
gp -o json job submit twin --class a100.1x "${J[@]}" -- "$BIN/wlsleep" 30
TWIN2=$(jout .id)
# two named so: the one not ended is meant
gp -o json job show twin "${J[@]}"
assert_json .id "$TWIN2" "$OUT_FILE"
gp job cancel twin "${J[@]}"
assert_rc 0
gp job show twin "${J[@]}"
assert_rc 2
assert_one_line_error "'twin' names 2 jobs"
gp job show nosuchjob "${J[@]}"
assert_denied 404
gp -o json job submit after-slow --class a100.1x --after slow:ok "${J[@]}" -- true
assert_rc 0
assert_json '.after[0].job' "$SLOW" "$OUT_FILE"
api GET "/api/v1/tenants/red/projects/train/jobs?match=NO_SUCH%25"
assert_status 400

note "--watch: a list printed again as it changes"
timeout 7 "$GPUPOOL_BIN" --server "$URL" --token "$TOKEN" -o json job list "${J[@]}" --watch \
    >"$E2E_TMP/watch.json" 2>"$E2E_TMP/watch.err" </dev/null &
WATCH=$!
seen_watch() { [ -s "$E2E_TMP/watch.json" ]; }
poll 5 seen_watch || fail "--watch printed nothing"
gp -o json job submit watched --class a100.1x "${J[@]}" -- true
assert_rc 0
WATCHED=$(jout .id)
wait "$WATCH"
assert_eq "$?" 124 "--watch runs until stopped"
[ "$(jq -s length "$E2E_TMP/watch.json")" -ge 2 ] || fail "--watch printed one document for a change"
_pass
assert_eq "$(jq -s "[.[0].items[].id] | index(\"$WATCHED\")" "$E2E_TMP/watch.json")" null \
    "the first document is from before the submit"
assert_eq "$(jq -s "[.[-1].items[].id] | index(\"$WATCHED\") != null" "$E2E_TMP/watch.json")" true \
    "the last one has the new job"
gp -w job cancel "$WATCHED" "${J[@]}"
assert_rc 2
assert_one_line_error "--watch is for lists and show"

note "the context: default --tenant and --project"
export XDG_CONFIG_HOME=$E2E_TMP/xdg
gp context show
assert_rc 0
assert_file_contains "$OUT_FILE" "no context"
gp context set --project train
assert_rc 2
assert_one_line_error "--project needs a tenant"
gp -o json context set --tenant red --project train
assert_rc 0
assert_json '"\(.tenant) \(.project)"' "red train" "$OUT_FILE"
assert_file_contains "$XDG_CONFIG_HOME/gpupool/config" "tenant = red"
assert_eq "$(stat -c %a "$XDG_CONFIG_HOME/gpupool/config")" 600 "the config file is the user's only"
# the commands that act in a tenant or project take it
gp -o json job submit ctx --class a100.1x -- true
assert_rc 0
CTXJOB=$(jout .id)
gp -o json job show "$CTXJOB"
assert_rc 0
assert_json '"\(.tenant) \(.project)"' "red train" "$OUT_FILE"
gp -o json job list
assert_rc 0
assert_json "[.items[].id] | index(\"$CTXJOB\") != null" true "$OUT_FILE"
gp -o json quota show
assert_rc 0
assert_json 'has("inherited")' true "$OUT_FILE"
# a --tenant on the line leaves the context's project out: the tenant's own quota
gp -o json quota show --tenant red
assert_rc 0
assert_json 'has("inherited")' false "$OUT_FILE"
# --project alone on the line: in the context's tenant
gp -o json job list --project train
assert_rc 0
assert_json "[.items[].id] | index(\"$CTXJOB\") != null" true "$OUT_FILE"
gp -o json whoami
assert_json '"\(.context.tenant) \(.context.project)"' "red train" "$OUT_FILE"
gp whoami
assert_file_contains "$OUT_FILE" "context: --tenant red --project train"
# the environment overrides the file for one shell (its tenant with its project, or none)
GPUPOOL_TENANT=blue GPUPOOL_PROJECT=x gp job list
assert_denied 404
GPUPOOL_TENANT=blue gp job list
assert_rc 2
assert_one_line_error "--tenant and --project are required"
# a new tenant without --project drops the old tenant's project
gp -o json context set --tenant blue
assert_json .project null "$OUT_FILE"
gp context clear
assert_rc 0
gp job list
assert_rc 2
assert_one_line_error "--tenant and --project are required"
unset XDG_CONFIG_HOME

stop_server
done_testing
