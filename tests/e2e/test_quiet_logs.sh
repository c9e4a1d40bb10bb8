#!/usr/bin/env bash
# test_quiet_logs.sh - the server's access log at its default level leaves out
# the requests that come all the time (agents' heartbeats and long polls,
# /metrics, /healthz, /readyz) when they succeed, and keeps everything else:
# other requests, failures, a node joining.  --log-level debug brings them
# back; --log-level works on server, gateway and agent (docs/server.md "Logs").
. "$(dirname "$0")/lib.sh"

DATA=$E2E_TMP/data
start_server
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600 --uses 2
JT=$(jout .token)
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" agent --server "$URL" --simulate 2 --interval 1 \
    --state-dir "$E2E_TMP/agent" >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
AGENT=$!
E2E_PIDS+=("$AGENT")
poll 15 grep -q 'route=/api/v1/agent/register' "$SERVER_LOG" || fail "no node joined"
for i in 1 2 3; do
    api_raw GET /metrics
    api_raw GET /healthz
    api_raw GET /readyz
done
gp tenant list
assert_rc 0
api_raw GET /api/v1/tenants  # a refusal: logged
sleep 3                      # heartbeats every second, two nodes
kill -TERM "$AGENT"
wait "$AGENT" 2>/dev/null
# a heartbeat that fails is logged
api POST /api/v1/agent/heartbeat '{}'

note "info: the quiet routes are left out when they succeed"
assert_eq "$(grep -c 'msg=access .*route=/api/v1/agent/register .*status=20' "$SERVER_LOG")" 2 "joins logged"
assert_eq "$(grep -c 'msg=access .*route=/api/v1/agent/heartbeat .*status=2' "$SERVER_LOG")" 0 "heartbeats"
assert_eq "$(grep -c 'msg=access .*route=/api/v1/agent/wait .*status=2' "$SERVER_LOG")" 0 "long polls"
assert_eq "$(grep -c 'msg=access .*route=/metrics' "$SERVER_LOG")" 0 "scrapes"
assert_eq "$(grep -c 'msg=access .*route=/healthz' "$SERVER_LOG")" 0 "health probes"
assert_eq "$(grep -c 'msg=access .*route=/readyz' "$SERVER_LOG")" 0 "readiness probes"
assert_file_contains "$SERVER_LOG" "route=/api/v1/tenants status=200"
assert_file_contains "$SERVER_LOG" "route=/api/v1/tenants status=401"
assert_match "$(grep -c 'msg=access .*route=/api/v1/agent/heartbeat .*status=4' "$SERVER_LOG")" '^[1-9]' "a failed heartbeat"
assert_file_contains "$SERVER_LOG" "msg=\"server started\""
assert_file_lacks "$SERVER_LOG" "level=debug"
stop_server

note "--log-level debug: every request"
start_server --log-level debug
GPUPOOL_JOIN_TOKEN= "$GPUPOOL_BIN" agent --server "$URL" --simulate 2 --interval 1 \
    --state-dir "$E2E_TMP/agent" >"$E2E_TMP/agent2.out" 2>"$E2E_TMP/agent2.err" </dev/null &
AGENT=$!
E2E_PIDS+=("$AGENT")
api_raw GET /metrics
poll 15 grep -q 'level=debug msg=access .*route=/api/v1/agent/heartbeat .*status=2' "$SERVER_LOG" ||
    fail "no heartbeat at debug level"
assert_file_contains "$SERVER_LOG" "route=/metrics status=200"
kill -TERM "$AGENT"
wait "$AGENT" 2>/dev/null
stop_server

note "--log-level on the agent and the gateway; bad levels are usage errors"
start_server --log-level warn
assert_file_lacks "$SERVER_LOG" "msg=\"server started\""
GPUPOOL_JOIN_TOKEN= timeout 30 "$GPUPOOL_BIN" agent --server "$URL" --once --simulate 2 \
    --log-level error --state-dir "$E2E_TMP/agent" >"$E2E_TMP/agent3.out" 2>"$E2E_TMP/agent3.err" </dev/null
assert_eq "$?" 0 "agent --once --log-level error"
assert_eq "$(grep -c 'level=info\|level=warn' "$E2E_TMP/agent3.err")" 0 "the agent's info lines"
run_cli agent --server "$URL" --once --log-level loud
assert_rc 2
assert_one_line_error "--log-level"
run_cli server --data "$E2E_TMP/x" --log-level loud
assert_rc 2
run_cli gateway --data "$DATA" --log-level loud
assert_rc 2
stop_server
done_testing
