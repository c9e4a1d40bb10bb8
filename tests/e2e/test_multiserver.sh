#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_multiserver.sh - the CLI and the node agent with several server
# addresses (`--server URL1,URL2`, GPUPOOL_SERVER, the client config file):
# a request that cannot reach one server goes on with the next.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_multiserver.sh
#
# Checked: invalid lists (an empty element, a URL that is not http:// or
# https://) are one-line usage errors from every source; a dead address before
# (or after) the live one changes nothing for reads and writes; only dead
# addresses: exit 1, one line naming them all; an HTTP answer (401 from
# another server) is final, never retried on the next address; an agent with
# `--server DEAD,URL` registers its node, says once that it switched, and runs
# a job to completion; the server then stops and comes back on the address
# that was dead (same data folder, as a second server on the same store
# would): the agent switches back by itself, and the exit of the job that
# ended meanwhile is not lost.
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/mssleep"

# ---------------------------------------------------------------- helpers

# dead_port: a loopback port nobody listens on (a connection to it is refused).
dead_port() {
    # Below the kernel's ephemeral range: servers of other tests listen on port 0 and
    # every client connection takes a local port from that range, so a port picked
    # there may be taken before this test binds it (CI lost a run to that).
    local p i lo=32768
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 12000 ] || lo=32768
    for ((i = 0; i < 200; i++)); do
        p=$((10000 + RANDOM % (lo - 10000)))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# start_agent LABEL ARGS...: `gpupool --server "$AGENT_SERVERS" agent ARGS` in the background
start_agent() {
    local label=$1
    shift
    AGENT_ERR=$E2E_TMP/agent.$label.err
    "$GPUPOOL_BIN" --server "$AGENT_SERVERS" agent "$@" >"$E2E_TMP/agent.$label.out" \
        2>"$AGENT_ERR" </dev/null &
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

# count_switches: how many times the agent logged a switch of server
count_switches() { grep -c 'switched to another server' "$AGENT_ERR"; }

P1=$(dead_port) || fail "no free port found"
P2=$(dead_port) || fail "no free port found"
while [ "$P2" == "$P1" ]; do P2=$(dead_port) || fail "no free port found"; done
DEAD1=http://127.0.0.1:$P1
DEAD2=http://127.0.0.1:$P2

# ---------------------------------------------------------------- invalid lists
note "invalid server lists: one-line usage errors"
run_cli --server "$DEAD1,,$DEAD2" --token x whoami
assert_rc 2
assert_one_line_error "--server: address 2 of the server list '$DEAD1,,$DEAD2' is empty"
run_cli --server "$DEAD1," --token x tenant list
assert_rc 2
assert_one_line_error "is empty"
run_cli --server "$DEAD1,ftp://127.0.0.1:21" --token x whoami
assert_rc 2
assert_one_line_error "server address 'ftp://127.0.0.1:21' is not an http:// or https:// URL"
run_cli --server "127.0.0.1:$P1" --token x whoami
assert_rc 2
assert_one_line_error "is not an http:// or https:// URL"
GPUPOOL_SERVER=",$DEAD1" run_cli --token x whoami
assert_rc 2
assert_one_line_error "GPUPOOL_SERVER: address 1 of the server list"
run_cli --server "$DEAD1,,$DEAD2" agent --once --simulate 1 --state-dir "$E2E_TMP/nostate"
assert_rc 2
assert_one_line_error "is empty"
XDG=$E2E_TMP/xdg
mkdir -p "$XDG/gpupool"
printf 'server = %s,http//oops\n' "$DEAD1" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli --token x whoami
assert_rc 2
assert_one_line_error "server in the config file: server address 'http//oops'"
# a command that does not talk to the API ignores the client setting
GPUPOOL_SERVER=",," run_cli agent --help
assert_rc 0

note "only dead addresses: exit 1, one line naming them"
run_cli --server "$DEAD1,$DEAD2" --token x whoami
assert_rc 1
assert_one_line_error "cannot reach any server (tried $DEAD1, $DEAD2)"
assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of a failed call"
GPUPOOL_SERVER="$DEAD2, $DEAD1" run_cli --token x tenant create nope
assert_rc 1
assert_one_line_error "cannot reach any server (tried $DEAD2, $DEAD1)"

# ---------------------------------------------------------------- one live server
start_server
note "server at $URL; dead addresses $DEAD1 $DEAD2"
ADMIN=$TOKEN
run_cli --server "$DEAD1,$URL" --token "$ADMIN" whoami
assert_rc 0
assert_file_contains "$OUT_FILE" "admin"
assert_eq "$(wc -c <"$ERR_FILE")" 0 "stderr of a call that failed over"
run_cli --server "$DEAD1,$DEAD2,$URL" --token "$ADMIN" whoami
assert_rc 0
run_cli --server "$URL,$DEAD1" --token "$ADMIN" whoami
assert_rc 0
# a write is sent on when the dead server never got it (connection refused)
run_cli --server "$DEAD1,$URL" --token "$ADMIN" tenant create red
assert_rc 0
run_cli --server "$DEAD1,$URL" --token "$ADMIN" -o json tenant show red
assert_rc 0
assert_json .name red "$OUT_FILE"
GPUPOOL_SERVER="$DEAD1,$URL" GPUPOOL_TOKEN=$ADMIN run_cli -o json tenant list
assert_rc 0
assert_json '[.items[].name] | join(",")' red "$OUT_FILE"
GPUPOOL_SERVER=" $DEAD2 , $URL " GPUPOOL_TOKEN=$ADMIN run_cli project create train --tenant red \
    --class development
assert_rc 0
printf 'server = %s,%s\ntoken = %s\n' "$DEAD1" "$URL" "$ADMIN" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli -o json project show train --tenant red
assert_rc 0
assert_json .name train "$OUT_FILE"
# an API error is an answer: the same one-line error as with one server
run_cli --server "$DEAD1,$URL" --token "$ADMIN" tenant show nosuch
assert_rc 1
assert_one_line_error "HTTP 404)"

note "an answer is final: a 401 from one server is not retried on the next"
URL_A=$URL
TOKEN_A=$TOKEN
PID_A=$SERVER_PID
LOG_A=$SERVER_LOG
launch_server "$E2E_TMP/data-b" --data "$E2E_TMP/data-b" --listen 127.0.0.1:0
URL_B=$URL
assert_ne "$URL_B" "$URL_A" "second server's address"
run_cli --server "$URL_B,$URL_A" --token "$TOKEN_A" whoami
assert_rc 1
assert_one_line_error "HTTP 401)"
run_cli --server "$URL_A,$URL_B" --token "$TOKEN_A" whoami
assert_rc 0
stop_server # B
URL=$URL_A
TOKEN=$TOKEN_A
SERVER_PID=$PID_A
SERVER_LOG=$LOG_A
# B is gone now: its address is as dead as the others
run_cli --server "$URL_B,$URL_A" --token "$TOKEN_A" whoami
assert_rc 0

# ---------------------------------------------------------------- the agent
note "agent with --server DEAD,URL: joins, switches once, runs a job"
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600
assert_rc 0
JT=$(jout .token)
cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"m1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]}]}
EOF
AGENT_SERVERS="$DEAD1,$URL"
start_agent m1 --join-token "$JT" --inventory "$E2E_TMP/node.json" \
    --state-dir "$E2E_TMP/agent-state" --interval 1 --grace 2
node_ready() {
    gp -o json node show m1
    [ "$RC" == 0 ] && [ "$(jout .state)" == ready ]
}
poll 15 node_ready || { _show "agent stderr" "$AGENT_ERR"; fail "node m1 did not register within 15 s"; }
_pass
assert_file_contains "$AGENT_ERR" "switched to another server\" from=$DEAD1 to=$URL"
assert_file_contains "$AGENT_ERR" 'msg="node joined" node=m1'
# it stays with the server that answers: one switch, however many heartbeats
sleep 2.5
assert_eq "$(count_switches)" 1 "switches logged by the agent"

printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"
run_in "$E2E_TMP/pw.ru" --server "$DEAD1,$URL" --token "$ADMIN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project train
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$DEAD1,$URL" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")
assert_match "$RU" '^gpt_' "ru's token"
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0

# job_state ID: the state of a job of red/train ("" when the call failed)
job_state() {
    run_cli --server "$DEAD1,$URL" --token "$RU" -o json job show "$1" --tenant red --project train
    [ "$RC" == 0 ] && jout .state
}
state_is() { [ "$(job_state "$1")" == "$2" ]; }

run_cli --server "$DEAD1,$URL" --token "$RU" -o json job submit quick --class a100.1x \
    --tenant red --project train -- sh -c 'echo quick done'
assert_rc 0
J1=$(jout .id)
assert_match "$J1" '^[0-9a-f]{16,}$' "id of job quick"
poll 15 state_is "$J1" succeeded || fail "job quick did not succeed within 15 s (state '$(job_state "$J1")')"
_pass
run_cli --server "$DEAD1,$URL" --token "$RU" -o json job show "$J1" --tenant red --project train
assert_json '"\(.state) \(.exit_code)"' "succeeded 0" "$OUT_FILE"

note "the server moves to the dead address: the agent follows, no exit is lost"
run_cli --server "$DEAD1,$URL" --token "$RU" -o json job submit later --class a100.1x \
    --tenant red --project train -- "$BIN/mssleep" 3
assert_rc 0
J2=$(jout .id)
poll 10 state_is "$J2" running || fail "job later did not run within 10 s"
_pass
OLD_URL=$URL
stop_server
# the job ends while no server listens; its exit waits in the agent
sleep 3.5
assert_file_contains "$AGENT_ERR" "cannot reach any server (tried $OLD_URL, $DEAD1)"
launch_server "$DATA" --data "$DATA" --listen "127.0.0.1:$P1"
assert_eq "$URL" "$DEAD1" "address of the restarted server"
note "server back at $URL"
poll 15 state_is "$J2" succeeded || {
    _show "agent stderr" "$AGENT_ERR"
    fail "job later did not succeed within 15 s of the restart (state '$(job_state "$J2")')"
}
_pass
assert_file_contains "$AGENT_ERR" "switched to another server\" from=$OLD_URL to=$DEAD1"
assert_eq "$(count_switches)" 2 "switches logged by the agent"
run_cli --server "$OLD_URL,$URL" --token "$ADMIN" -o json node show m1
assert_rc 0
assert_json .state ready "$OUT_FILE"
stop_agent
stop_server
done_testing
