#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq programs in single quotes
#
# test_http.sh - the HTTP server under attack (docs/security.md, "HTTP server";
# docs/server.md, "Connections"): ambiguous requests are refused 400 and their
# connection closed (no request smuggling); 401s without a valid credential are
# counted in /metrics and rate-limited in the log; one client address holds at
# most --max-connections-per-ip connections; 1,000 connections trickling their
# headers neither stop the server answering others nor outlive --header-timeout;
# a trickled body is cut at --body-timeout; a full connection table empties
# itself long before the header deadline, filled with trickled headers or trickled
# bodies alike; a client taking its answer slower than --send-min-rate is cut.  The hostile client is
# tests/security/http_client.py.  Runs in about 30 s.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_http.sh
. "$(dirname "$0")/../e2e/lib.sh"

command -v python3 >/dev/null 2>&1 || fail "this test needs python3"
CLIENT="$(cd "$(dirname "$0")" && pwd)/http_client.py"
port() { echo "${URL##*:}"; }
# hc MODE ARGS...: run the hostile client (60 s at most); its JSON in $HC_FILE
HC_FILE=$E2E_TMP/hc.json
hc() {
    timeout 60 python3 "$CLIENT" "$@" >"$HC_FILE" 2>"$E2E_TMP/hc.err" ||
        { _show "client stderr" "$E2E_TMP/hc.err"; fail "http_client.py $1 failed"; }
}
# hc_json JQ EXPECTED MESSAGE
hc_json() {
    local got
    got=$(jq -c "$1" "$HC_FILE")
    assert_eq "$got" "$2" "$3 (client said: $(head -c 600 "$HC_FILE"))"
}
# metric NAME_AND_LABELS: its value in /metrics (0 when absent)
metric() {
    local v
    v=$(curl -s --max-time 10 "$URL/metrics" | awk -v k="$1" '$1 == k && !n++ {print $2}')
    [[ "$v" =~ ^[0-9]+$ ]] && echo "$v" || echo 0
}
# raw_case NAME REQUEST: the server answers 400 once and closes the connection
raw_case() {
    hc raw "$(port)" "$2"
    hc_json '.statuses' '[400]' "$1: one 400 answer"
    hc_json '.closed' true "$1: connection closed after the 400"
    hc_json '.body | fromjson? | .error.code' '"bad_request"' "$1: the API's JSON error"
}

start_server --header-timeout 4 --body-timeout 2 --max-connections 1500 \
    --max-connections-per-ip 16

# ---------------------------------------------------------------- parsing
note "ambiguous requests: 400, and nothing after them runs"
hc raw "$(port)" 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
hc_json '.statuses' '[200]' "a plain request is answered"
hc raw "$(port)" 'GET /health%7a HTTP/1.1\r\nHost: x\r\n\r\n'
hc_json '.statuses' '[200]' "an encoded unreserved character is still decoded"
# two different Content-Length: the first used to win and the rest ran as a second request
raw_case "two Content-Length" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 37\r\n\r\n{}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
# a header folded onto a second line (obs-fold): MHD glued " 0" to the name
# ("Content-Length0"), read no body and ran "{}GET /healthz ..." as a second request,
# where a proxy in front reads a 2- or 20-byte body
raw_case "a folded Content-Length" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n 0\r\n\r\n{}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "a folded Authorization" 'GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n\tx\r\n\r\n'
raw_case "two equal Content-Length" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}'
raw_case "Content-Length and Transfer-Encoding" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "Transfer-Encoding other than chunked" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'
raw_case "a NUL byte in the path" 'GET /healthz\x00/x HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "%00 in the path" 'GET /healthz%00/x HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "%00 in the query" 'GET /healthz?a=%00 HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "%2f in a path segment" 'GET /api/v1/tenants%2fx HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "%2F in a path segment" 'GET /api/v1/tenants/a%2Fb/projects HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "%5c in a path segment" 'GET /api/v1/tenants/a%5cb HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "a dot-dot segment" 'GET /api/v1/tenants/../healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "a space in the path" 'GET /health z HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "two Host headers" 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'
raw_case "HTTP/1.1 without Host" 'GET /healthz HTTP/1.1\r\n\r\n'
raw_case "two Authorization headers" "GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nAuthorization: Bearer $TOKEN\r\n\r\n"
raw_case "a space before the colon" 'POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length : 37\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
raw_case "a control character in a value" 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n'
hc raw "$(port)" 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'
hc_json '.body | fromjson | .error.code' '"bad_request"' "the 400 is the API's JSON error"
assert_ge() { [ "$1" -ge "$2" ] || fail "$3 (got $1, want at least $2)"; _pass; }
assert_le() { [ "$1" -le "$2" ] || fail "$3 (got $1, want at most $2)"; _pass; }
assert_ge "$(metric gpupool_http_malformed_total)" 18 "malformed requests counted in /metrics"
api GET /api/v1/tenants/nothing%2Fhere
assert_status 400

# ---------------------------------------------------------------- refusals
note "anonymous refusals: counted by reason, 10 log lines a second at most"
before_invalid=$(metric 'gpupool_auth_refusals_total{reason="invalid"}')
before_missing=$(metric 'gpupool_auth_refusals_total{reason="missing"}')
before_malformed=$(metric 'gpupool_auth_refusals_total{reason="malformed"}')
urls=()
for ((i = 0; i < 60; i++)); do urls+=(-o /dev/null "$URL/api/v1/tenants"); done
codes=$(curl -s --max-time 20 -w '%{http_code}\n' -H 'Authorization: Bearer gpt_forged' \
    "${urls[@]}" | sort | uniq -c | awk '{print $2 "x" $1}')
assert_eq "$codes" "401x60" "60 forged tokens refused 401"
codes=$(curl -s --max-time 20 -w '%{http_code}\n' "${urls[@]:0:15}" | sort -u)
assert_eq "$codes" 401 "no token: 401"
codes=$(curl -s --max-time 20 -w '%{http_code}\n' -H 'Authorization: Basic eDp5' \
    "${urls[@]:0:9}" | sort -u)
assert_eq "$codes" 401 "not a bearer token: 401"
AUTH_HEADER="Authorization: Bearer sk-forged" api POST /v1/chat/completions \
    '{"model":"m","messages":[{"role":"user","content":"hi"}]}'
assert_status 401
assert_eq "$(metric 'gpupool_auth_refusals_total{reason="invalid"}')" $((before_invalid + 61)) \
    "invalid tokens and API keys counted"
assert_eq "$(metric 'gpupool_auth_refusals_total{reason="missing"}')" $((before_missing + 5)) \
    "missing tokens counted"
assert_eq "$(metric 'gpupool_auth_refusals_total{reason="malformed"}')" $((before_malformed + 3)) \
    "malformed Authorization counted"
sleep 1.5 # the watcher reports what was suppressed once the second is over
logged=$(grep -c 'msg=access .*status=401 .*actor=-' "$SERVER_LOG")
assert_le "$logged" 40 "anonymous 401s logged at most 10 a second (69 sent)"
assert_file_contains "$SERVER_LOG" 'kind="anonymous refusal" suppressed='
api GET /api/v1/whoami
assert_status 200
# ... and audited at most 60 a minute: a flood of guesses cannot fill the audit trail
api GET '/api/v1/audit?result=denied&limit=1000'
assert_status 200
n401=$(jq '[.items[] | select(.status == 401 and .actor == "anonymous")] | length' "$BODY_FILE")
assert_le "$n401" 60 "anonymous refusals audited at most 60 a minute (70 sent)"
assert_le 1 "$n401" "the first anonymous refusals are audited"

# ---------------------------------------------------------------- per address
note "one client address: --max-connections-per-ip (16) at most"
hc perip "$(port)" 127.0.0.200 24
hc_json '.connected' 24 "24 TCP connections from one address"
hc_json '.refused' 8 "the 8 over the per-address cap closed at once"
hc_json '.kept_answers' 200 "the connections kept are served"

# ---------------------------------------------------------------- slow headers
note "1,000 connections trickling their headers from 100 addresses"
hc slow "$(port)" "$TOKEN" --conns 1000 --addrs 100 --interval 0.5 --wait 12
hc_json '.opened' 1000 "1,000 slow connections open"
hc_json '.probe_ok' true "/healthz and an authenticated /api/v1/whoami answered 200 meanwhile"
hc_json '.probes | map(.open_slow) | min >= 900' true "probed while the slow connections were open"
# bounds are the deadlines, not speeds: sanitizer builds on 2 busy cores are slow
hc_json '.probe_max_seconds < 4' true "answered before the 4 s header deadline cut anyone"
hc_json '.answered' 0 "no slow connection got an answer"
hc_json '.still_open' 0 "every slow connection was cut"
hc_json '.closed' 1000 "1,000 cut"
hc_json '.close_min >= 3.5 and .close_max <= 11' true "cut at the 4 s header deadline, trickle or not"
assert_ge "$(metric 'gpupool_http_connections_dropped_total{reason="headers"}')" 1000 \
    "cut connections counted in /metrics"
assert_le "$(grep -c 'msg="connection dropped' "$SERVER_LOG")" 60 "cut connections: log rate-limited"

# ---------------------------------------------------------------- slow body
note "a body trickled byte by byte is cut at --body-timeout (2 s + 1 s per 64 KiB)"
hc slowbody "$(port)" "$TOKEN" 100000
hc_json '.closed_after != null and .closed_after >= 2.5 and .closed_after <= 10' true \
    "a 100,000-byte body not in after 3 s: cut"
hc_json '.statuses' '[]' "and not dispatched"
assert_ge "$(metric 'gpupool_http_connections_dropped_total{reason="body"}')" 1 "counted"
api GET /healthz
assert_status 200
# a keep-alive connection serves several requests (the deadline restarts after each answer)
codes=$(curl -s --max-time 20 -w '%{http_code}' -o /dev/null "$URL/healthz" -o /dev/null "$URL/readyz")
assert_eq "$codes" 200200 "two requests on one kept-alive connection"

# ---------------------------------------------------------------- slow reader
note "a client taking its answer at 200 bytes a second is cut (--send-min-rate 1024, 10 s)"
hc slowread "$(port)" /api/v1/openapi.json 200
hc_json '.complete' false "ten pipelined 600 KB answers were not all taken"
hc_json '.closed_after != null and .closed_after >= 9 and .closed_after <= 45' true \
    "cut after the 10 s window"
assert_ge "$(metric 'gpupool_http_connections_dropped_total{reason="slow_reader"}')" 1 "counted"
assert_file_contains "$SERVER_LOG" "the client takes its answer too slowly"
hc slowread "$(port)" /api/v1/openapi.json 0
hc_json '.complete' true "a client that keeps up gets all ten"
api GET /healthz
assert_status 200
stop_server

# ---------------------------------------------------------------- full table
note "a full connection table empties itself (--max-connections 600, --header-timeout 30)"
start_server --header-timeout 30 --max-connections 600 --max-connections-per-ip 16
hc slow "$(port)" "$TOKEN" --conns 1000 --addrs 100 --interval 0.5 --wait 8 --until-ok 6
hc_json '.probe_ok' true "/healthz and /api/v1/whoami answered with the table full"
hc_json '.probe_max_seconds < 15' true "long before the 30 s header deadline"
hc_json '.answered' 0 "no slow connection got an answer"
assert_ge "$(metric 'gpupool_http_connections_dropped_total{reason="pressure"}')" 1 \
    "shed under pressure, counted"
api GET /api/v1/whoami
assert_status 200
stop_server

note "a table full of trickled bodies empties itself too (--max-connections 600)"
# complete headers, then a 1,000,000-byte body a byte every half second: its deadline is
# 30 s + 15 s away, so only the rate rule under pressure frees the table for others
start_server --header-timeout 30 --max-connections 600 --max-connections-per-ip 16
hc slow "$(port)" "$TOKEN" --conns 1000 --addrs 100 --interval 0.5 --wait 8 --until-ok 6 --body 1000000
hc_json '.probe_ok' true "/healthz and /api/v1/whoami answered with the table full of slow bodies"
hc_json '.probe_max_seconds < 20' true "long before the 45 s body deadline"
hc_json '.answered' 0 "no slow body was dispatched"
assert_ge "$(metric 'gpupool_http_connections_dropped_total{reason="pressure"}')" 1 \
    "slow bodies shed under pressure, counted"
api GET /api/v1/whoami
assert_status 200
stop_server

note "the flags are checked"
run_cli server --data "$E2E_TMP/x" --header-timeout 0
assert_rc 2
assert_one_line_error "header-timeout"
run_cli gateway --data "$E2E_TMP/x" --max-connections-per-ip -1
assert_rc 2
run_cli server --data "$E2E_TMP/x" --send-min-rate -5
assert_rc 2
assert_one_line_error "send-min-rate"

done_testing
