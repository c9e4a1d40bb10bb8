#!/usr/bin/env bash
# shellcheck disable=SC2046  # $(store_flag ...) is meant to split into two words
#
# test_ha.sh - several servers on one PostgreSQL store (issue 11).
#
# Two servers share a database; the first to start leads (it runs the
# scheduler and the loops), the other stands by and serves the API.  An
# agent and two submitters are given both addresses.  Under that submit
# load the leader is killed with SIGKILL: the second server must take the
# lead within seconds, the agent and the CLI must go on with it, and at the
# end every acknowledged job is there and ran, no GPU was ever bound to two
# jobs at once, the audit chain verifies and `gpupool check` passes.  The
# killed server comes back as a standby; a SIGTERM of the leader hands over;
# a frozen (SIGSTOP) leader gives way after --lead-timeout.  The servers connect as a database
# role that owns nothing (after `gpupool migrate --grant`), and failed logins
# count at both.  Prints the failover times.
#
# Needs PostgreSQL: GP_TEST_PG (scripts/test.sh runs the suite a second time
# against a throw-away cluster, scripts/pg-cluster.sh); skipped on SQLite.
#
#   GP_TEST_PG=postgresql://gpupool@127.0.0.1:PORT GPUPOOL_BIN=build/gpupool bash tests/e2e/test_ha.sh
. "$(dirname "$0")/lib.sh"

if [ -z "${GP_TEST_PG:-}" ]; then
    echo "$E2E_NAME: skipped on SQLite: several servers need the PostgreSQL store (GP_TEST_PG)"
    E2E_DONE=1
    E2E_SKIP=1
    exit 77
fi

workload_bin
ln -s "$(type -P true)" "$BIN/hatrue"

OWNER_STORE=$(store_url "$E2E_TMP/shared")
# the servers connect as a role that owns nothing (so cannot switch row-level
# security off); the schema's owner migrates and grants (docs/postgres.md)
STORE=${OWNER_STORE/gpupool@/gpupool_app@}
assert_ne "$STORE" "$OWNER_STORE" "the servers' store URI"

note "the owner migrates and grants; the servers' role may not change the schema"
run_cli migrate --store "$STORE"
assert_rc 1
assert_one_line_error 'gpupool migrate --store URL --grant gpupool_app'
run_cli migrate --store "$OWNER_STORE" --grant gpupool_app
assert_rc 0
assert_contains "$(cat "$OUT_FILE")" "role gpupool_app may now read and write every table"
run_cli -o json migrate --store "$OWNER_STORE"
assert_rc 0
VERSION=$(jout .schema_version)
assert_match "$VERSION" '^[1-9][0-9]*$' "schema version after migrate"
run_cli -o json migrate --store "$STORE" # up to date: nothing to change, so the role may
assert_rc 0
assert_eq "$(jout .schema_version)" "$VERSION" "schema version the servers' role sees"
run_cli migrate --store "$OWNER_STORE" --grant postgres
assert_rc 1
assert_one_line_error 'bypasses row-level security'

# leader_of URL: "true" / "false" from its /readyz ("" when it does not answer)
leader_of() { curl -s --max-time 2 "$1/readyz" | jq -r 'if has("leader") then .leader else empty end' 2>/dev/null; }
leads() { [ "$(leader_of "$1")" == true ]; }

# ---------------------------------------------------------------- two servers, one store
note "two servers on one PostgreSQL database"
launch_server "$E2E_TMP/a" --data "$E2E_TMP/a" --store "$STORE" --listen 127.0.0.1:0 \
    --node-timeout 15
URL_A=$URL
PID_A=$SERVER_PID
LOG_A=$SERVER_LOG
ADMIN=$TOKEN
assert_match "$ADMIN" '^[A-Za-z0-9_-]{20,}$' "admin token from the first server"
assert_file_lacks "$LOG_A" "could turn row-level security off"
poll 10 leads "$URL_A" || fail "the first server does not lead"
_pass
# (the one that takes over checks its copy of the cluster against the store every second)
launch_server "$E2E_TMP/b" --data "$E2E_TMP/b" --store "$STORE" --listen 127.0.0.1:0 \
    --node-timeout 15 --cluster-check 1
URL_B=$URL
PID_B=$SERVER_PID
LOG_B=$SERVER_LOG
[ -e "$E2E_TMP/b/admin.token" ] && fail "the second server made another admin"
_pass
sleep 1.5
assert_eq "$(leader_of "$URL_B")" false "the second server stands by"
assert_eq "$(leader_of "$URL_A")" true "the first server still leads"

note "failed logins count at every server"
# five wrong passwords for one name, spread over both servers: the sixth is
# refused at either (the limit is per store, not per process)
for i in 1 2 3 4 5; do
    u=$URL_A
    [ $((i % 2)) = 0 ] && u=$URL_B
    st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$u/api/v1/login" \
        -H 'Content-Type: application/json' --data-binary '{"name":"mallory","password":"wrong-one"}')
    assert_eq "$st" 401 "wrong password $i"
done
for u in "$URL_A" "$URL_B"; do
    st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$u/api/v1/login" \
        -H 'Content-Type: application/json' --data-binary '{"name":"mallory","password":"wrong-one"}')
    assert_eq "$st" 429 "the sixth try at $u"
done
TOKEN=$ADMIN
SERVERS="$URL_A,$URL_B"
URL=$SERVERS # gp and as go through both

# both serve the same data
gp tenant create red
assert_rc 0
run_cli --server "$URL_B" --token "$ADMIN" -o json tenant show red
assert_rc 0
assert_json .name red "$OUT_FILE"
gp project create train --tenant red --class development
assert_rc 0
gp member grant admin ops-engineer
assert_rc 0
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp -o json jointoken create --ttl 3600
assert_rc 0
JT=$(jout .token)
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"
run_in "$E2E_TMP/pw.ru" --server "$SERVERS" --token "$ADMIN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project train
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$SERVERS" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")

# ---------------------------------------------------------------- the agent
cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"ha1","cpus":64,"memory_gib":256,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":16,"mode":"whole"}]}]}
EOF
# start_agent SERVERS NAME: the agent of node ha1 (one state folder for all its
# runs) against SERVERS; sets AGENT_PID and AGENT_ERR (its log, NAME.err)
start_agent() {
    AGENT_ERR=$E2E_TMP/$2.err
    "$GPUPOOL_BIN" --server "$1" agent --join-token "$JT" --inventory "$E2E_TMP/node.json" \
        --state-dir "$E2E_TMP/agent-state" --interval 1 --grace 2 \
        >"$E2E_TMP/$2.out" 2>"$AGENT_ERR" </dev/null &
    AGENT_PID=$!
    E2E_PIDS+=("$AGENT_PID")
}
start_agent "$SERVERS" agent
node_ready() {
    gp -o json node show ha1
    [ "$RC" == 0 ] && [ "$(jout .state)" == ready ]
}
poll 15 node_ready || { _show "agent stderr" "$AGENT_ERR"; fail "node ha1 did not register"; }
_pass

# job_state ID
job_state() {
    run_cli --server "$SERVERS" --token "$RU" -o json job show "$1" --tenant red --project train
    [ "$RC" == 0 ] && jout .state
}
state_is() { [ "$(job_state "$1")" == "$2" ]; }
placed() { case "$(job_state "$1")" in running | succeeded) return 0 ;; esac; return 1; }

as "$RU" -o json job submit warm --class a100.1x --tenant red --project train -- "$BIN/hatrue"
assert_rc 0
WARM=$(jout .id)
poll 20 state_is "$WARM" succeeded || fail "the first job did not succeed (state '$(job_state "$WARM")')"
_pass

# ---------------------------------------------------------------- submit load
# submitter N: submit jobs until $E2E_TMP/stop appears; acknowledged ids to ack.N,
# refusals (a request cut by the kill) to err.N
submitter() {
    local n=$1 i=0 out
    while [ ! -e "$E2E_TMP/stop" ]; do
        i=$((i + 1))
        if out=$(timeout 20 "$GPUPOOL_BIN" --server "$SERVERS" --token "$RU" -o json job submit \
            "s$n-$i" --class a100.1x --tenant red --project train -- "$BIN/hatrue" 2>>"$E2E_TMP/err.$n"); then
            jq -r .id <<<"$out" >>"$E2E_TMP/ack.$n"
        fi
        sleep 0.2
    done
}
note "submit load from two clients, then SIGKILL the leader"
: >"$E2E_TMP/ack.1"
: >"$E2E_TMP/ack.2"
submitter 1 &
SUB1=$!
submitter 2 &
SUB2=$!
sleep 2.5
kill -KILL "$PID_A"
T_KILL=$(_now_ms)
wait "$PID_A" 2>/dev/null
_forget_pid "$PID_A"
ACK_BEFORE=$(cat "$E2E_TMP"/ack.* | wc -l)

poll 20 leads "$URL_B" || { _show "server B" "$LOG_B"; fail "the second server did not take the lead within 20 s"; }
T_LEAD=$(_now_ms)
_pass
# a job submitted after the kill is placed by the new leader
run_cli --server "$SERVERS" --token "$RU" -o json job submit marker --class a100.1x --tenant red \
    --project train -- "$BIN/hatrue"
assert_rc 0
MARKER=$(jout .id)
poll 30 placed "$MARKER" || fail "no placement after the failover (marker job '$(job_state "$MARKER")')"
T_PLACED=$(_now_ms)
_pass
sleep 1
touch "$E2E_TMP/stop"
wait "$SUB1" "$SUB2"
ACK_ALL=$(cat "$E2E_TMP"/ack.* | wc -l)
note "acknowledged: $ACK_BEFORE before the kill, $ACK_ALL in all"
[ "$ACK_ALL" -gt "$ACK_BEFORE" ] || fail "no submission was acknowledged after the kill"
_pass
assert_file_contains "$LOG_B" "leading: this server runs the scheduler"

# ---------------------------------------------------------------- nothing lost
note "every acknowledged job is there and runs to the end"
cat "$E2E_TMP"/ack.* >"$E2E_TMP/acked"
echo "$MARKER" >>"$E2E_TMP/acked"
all_done() {
    local n
    run_cli --server "$URL_B" --token "$RU" -o json job list --tenant red --project train
    [ "$RC" == 0 ] || return 1
    jq -r '.items[] | "\(.id) \(.state)"' "$OUT_FILE" >"$E2E_TMP/states"
    # acknowledged ids listed, and how many of them are not done yet
    n=$(awk 'NR == FNR { want[$1] = 1; next } ($1 in want) { seen++; if ($2 != "succeeded") open++ }
             END { print seen + 0, open + 0 }' "$E2E_TMP/acked" "$E2E_TMP/states")
    [ "$n" == "$(wc -l <"$E2E_TMP/acked") 0" ]
}
poll 120 all_done || {
    awk '{print $2}' "$E2E_TMP/states" | sort | uniq -c >&2
    fail "acknowledged jobs missing or not succeeded after 120 s (listed, open: $n)"
}
_pass
while read -r id; do
    state_is "$id" succeeded || fail "acknowledged job $id: state '$(job_state "$id")'"
    _pass
done <"$E2E_TMP/acked"

note "no GPU bound twice, the audit chain verifies, gpupool check passes"
assert_eq "$(db_sql "$E2E_TMP/shared" "SELECT COUNT(*) FROM bindings x JOIN bindings y
    ON x.gpu_uuid = y.gpu_uuid AND x.id < y.id
    AND x.start_us < COALESCE(y.end_us, 9000000000000000000)
    AND y.start_us < COALESCE(x.end_us, 9000000000000000000)")" 0 "overlapping bindings of one GPU"
assert_eq "$(db_sql "$E2E_TMP/shared" "SELECT COUNT(*) FROM bindings WHERE end_us IS NULL")" 0 \
    "bindings still open"
run_cli --server "$URL_B" --token "$ADMIN" audit verify
assert_rc 0
run_cli -o json check --store "$STORE" # the servers' role reads everything it needs
assert_rc 0
assert_eq "$(jout '[.checks[] | select(.ok | not) | .name] | join(",")')" "" "failed checks"

note "the new leader's cluster in memory equals the store (docs/scheduling.md)"
# (rounds at least once a second after the burst: give it time for a check)
sleep 2
cluster_metric() {
    curl -s --max-time 10 "$URL_B/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
CHECKS=$(cluster_metric 'gpupool_sched_cluster_reads_total{source="check"}')
[ "${CHECKS:-0}" -ge 1 ] || fail "the new leader checked its copy of the cluster ${CHECKS:-0} times"
_pass
assert_eq "$(cluster_metric 'gpupool_sched_cluster_reads_total{source="memory"}' | awk '{print ($1 > 0)}')" 1 \
    "rounds of the new leader that took the cluster from memory"
assert_eq "$(cluster_metric gpupool_sched_cluster_mismatches_total)" 0 \
    "consistency checks that found the copy differing from the store"

# ---------------------------------------------------------------- the killed server returns
note "the killed server comes back as a standby"
launch_server "$E2E_TMP/a" --data "$E2E_TMP/a" --store "$STORE" --listen 127.0.0.1:0 \
    --node-timeout 15 --lead-timeout 3
URL_A2=$URL
PID_A2=$SERVER_PID
LOG_A2=$SERVER_LOG
sleep 1.5
assert_eq "$(leader_of "$URL_A2")" false "the restarted server stands by"
assert_eq "$(leader_of "$URL_B")" true "the second server keeps the lead"
# a clean stop of the leader hands over too
kill -TERM "$PID_B"
T_STOP=$(_now_ms)
_wait_exit "$PID_B" 20 || fail "the leader did not stop on SIGTERM"
_forget_pid "$PID_B"
assert_eq "$_EXIT" 0 "exit code of the stopped leader"
poll 20 leads "$URL_A2" || fail "the restarted server did not take the lead after a clean stop"
T_LEAD2=$(_now_ms)
_pass
assert_eq "$(grep -c 'leading: this server' "$LOG_A")" 1 "times the first server led before the kill"

# ---------------------------------------------------------------- a frozen leader
# a leader that stops (SIGSTOP: a hung process; a host cut off looks the same to
# the database) keeps its connection open: the database ends its session after
# --lead-timeout, and another server takes over; woken, it stands by.  The
# agent, talking to the frozen server, gets no answer: after 10 s it goes on
# with the other, well before its node could be taken for lost (the new
# leader's --node-timeout, default 30 s), so the job running there finishes.
note "a frozen leader gives way after --lead-timeout; the agent goes on with the other server"
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10
_forget_pid "$AGENT_PID"
launch_server "$E2E_TMP/b" --data "$E2E_TMP/b" --store "$STORE" --listen 127.0.0.1:0 \
    --lead-timeout 3
URL_B2=$URL
LOG_B2=$SERVER_LOG
start_agent "$URL_A2,$URL_B2" agent2
URL=$URL_B2 # gp, and node_ready through it, ask the server that stays awake
TOKEN=$ADMIN
poll 15 node_ready || { _show "agent stderr" "$AGENT_ERR"; fail "node ha1 did not report again"; }
_pass
assert_eq "$(leader_of "$URL_B2")" false "the new server stands by"
assert_eq "$(leader_of "$URL_A2")" true "the restarted server leads"
ln -s "$(type -P sleep)" "$BIN/hasleep"
run_cli --server "$URL_B2" --token "$RU" -o json job submit span --class a100.1x --tenant red \
    --project train -- "$BIN/hasleep" 14
assert_rc 0
SPAN=$(jout .id)
running() { [ "$(run_cli --server "$URL_B2" --token "$RU" -o json job show "$SPAN" --tenant red \
    --project train && jout .state)" == running ]; }
poll 20 running || fail "the spanning job did not start"
_pass

kill -STOP "$PID_A2"
T_FREEZE=$(_now_ms)
poll 20 leads "$URL_B2" || { kill -CONT "$PID_A2"; fail "no server took the lead from a frozen one within 20 s"; }
T_LEAD3=$(_now_ms)
_pass
# writes go on while the old leader is frozen (if it froze inside a write
# transaction, the database ends that after 30 s idle: hence not run_cli's 30 s)
timeout 60 "$GPUPOOL_BIN" --server "$URL_B2" --token "$RU" -o json job submit after-freeze \
    --class a100.1x --tenant red --project train -- "$BIN/hatrue" >"$OUT_FILE" 2>"$ERR_FILE"
RC=$?
assert_rc 0
AFTER=$(jout .id)
done_b() {
    run_cli --server "$URL_B2" --token "$RU" -o json job show "$1" --tenant red --project train
    [ "$RC" == 0 ] && [ "$(jout .state)" == succeeded ]
}
poll 40 done_b "$AFTER" || { kill -CONT "$PID_A2"; _show "agent stderr" "$AGENT_ERR";
    fail "the job submitted while the leader was frozen did not run"; }
T_RUN3=$(_now_ms)
_pass
assert_file_contains "$AGENT_ERR" "switched to another server"
poll 30 done_b "$SPAN" || { kill -CONT "$PID_A2"; fail "the job running through the freeze did not finish"; }
assert_eq "$(db_sql "$E2E_TMP/shared" "SELECT COUNT(*) || ' ' || MIN(end_reason) FROM bindings
    WHERE job_id = '$SPAN'")" "1 completed" "the spanning job's binding: one, ended by its exit"
gp -o json node show ha1
assert_eq "$(jout .state)" ready "node ha1 after the freeze"
kill -CONT "$PID_A2"
stands_by() { [ "$(leader_of "$URL_A2")" == false ]; }
poll 10 stands_by || fail "the woken server did not stand by"
assert_eq "$(leader_of "$URL_B2")" true "the new leader keeps the lead"
assert_file_contains "$LOG_A2" "standing by: another server leads"
assert_file_lacks "$LOG_A2" "cannot tell whether this server leads"
assert_file_contains "$LOG_B2" "leading: this server runs the scheduler"
run_cli --server "$URL_B2" --token "$ADMIN" audit verify
assert_rc 0
assert_eq "$(db_sql "$E2E_TMP/shared" "SELECT COUNT(*) FROM bindings x JOIN bindings y
    ON x.gpu_uuid = y.gpu_uuid AND x.id < y.id
    AND x.start_us < COALESCE(y.end_us, 9000000000000000000)
    AND y.start_us < COALESCE(x.end_us, 9000000000000000000)")" 0 "overlapping bindings of one GPU"
kill -TERM "$AGENT_PID"
_wait_exit "$AGENT_PID" 10
_forget_pid "$AGENT_PID"

echo "failover after SIGKILL: new leader in $((T_LEAD - T_KILL)) ms, first placement in" \
    "$((T_PLACED - T_KILL)) ms; after SIGTERM: new leader in $((T_LEAD2 - T_STOP)) ms;" \
    "frozen leader (--lead-timeout 3): new leader in $((T_LEAD3 - T_FREEZE)) ms, a job" \
    "submitted then ran in $((T_RUN3 - T_FREEZE)) ms;" \
    "jobs acknowledged $ACK_ALL, all succeeded"
done_testing
