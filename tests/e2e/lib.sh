# shellcheck shell=bash
#
# lib.sh - shared helpers for gpupool end-to-end tests (bash + curl + jq).
#
# Usage, at the top of a test script:
#
#   . "$(dirname "$0")/lib.sh"        # needs GPUPOOL_BIN=/path/to/gpupool
#   start_server                      # exports URL and TOKEN
#   api GET /api/v1/tenants; assert_status 200; assert_json '.items|length' 0
#   stop_server                       # SIGTERM; asserts exit code 0
#   done_testing                      # prints "e2e_<name>: N passed, 0 failed"
#
# Every assertion counts towards the closing line.  A failed assertion prints
# "FAIL file:line: message", the closing line (with "1 failed") and exits 1.
# An EXIT trap stops every server the script started (even on failure) and
# removes the temporary folder (set E2E_KEEP=1 to keep it for debugging).
#
# Helpers: fail, note, assert_eq/ne/match/contains, assert_file_contains/
# lacks, assert_status, assert_json, assert_header, assert_rc,
# assert_one_line_error; api/api_raw/header (HTTP); run_cli/gp (the CLI);
# launch_server/start_server/stop_server/_wait_exit (servers); store_url/
# store_flag/db_sql/skip_on_pg (SQLite or PostgreSQL under GP_TEST_PG);
# workload_bin (a folder for workload commands, killed at exit); done_testing.
# Never call an assertion inside $(...): its exit would only end the subshell.
#
# Variables a test may use:
#   E2E_TMP (also TMP)  the temporary folder of this run
#   DATA                data folder start_server uses (default $E2E_TMP/data)
#   URL, TOKEN          of the server started last (TOKEN from DATA/admin.token)
#   SERVER_PID, SERVER_LOG (stderr), SERVER_OUT (stdout) of the current server
#   STATUS, BODY_FILE, HDR_FILE   after api/api_raw: HTTP status ("000" when
#                       the request failed), response body and headers
#   RC, OUT_FILE, ERR_FILE        after run_cli/gp: exit code, stdout, stderr
#
# The tests also run against an AddressSanitizer build: a server that does not
# exit 0 on SIGTERM, or that printed a sanitizer report, fails the test.

set -u
set -o pipefail

E2E_NAME=$(basename "${0%.sh}")
E2E_NAME="e2e_${E2E_NAME#test_}"

if [ -z "${GPUPOOL_BIN:-}" ]; then
    echo "$E2E_NAME: GPUPOOL_BIN is not set; run as GPUPOOL_BIN=/path/to/gpupool bash $0" >&2
    exit 2
fi
case "$GPUPOOL_BIN" in
/*) ;;
*) GPUPOOL_BIN="$PWD/$GPUPOOL_BIN" ;;
esac
if [ ! -x "$GPUPOOL_BIN" ] || [ -d "$GPUPOOL_BIN" ]; then
    echo "$E2E_NAME: GPUPOOL_BIN=$GPUPOOL_BIN is not an executable file" >&2
    exit 2
fi
for _cmd in curl jq mktemp timeout; do
    if ! command -v "$_cmd" >/dev/null 2>&1; then
        echo "$E2E_NAME: the tests need '$_cmd' on PATH" >&2
        exit 2
    fi
done
unset _cmd

# Keep the client side of the tests independent of the caller's settings.
unset GPUPOOL_SERVER GPUPOOL_TOKEN GPUPOOL_TOKEN_FILE
export XDG_CONFIG_HOME=/nonexistent-gpupool-e2e
# Sanitizer builds: report leaks, and make a report fail the process.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Never let curl go through a proxy: everything here is loopback.
export NO_PROXY='*' no_proxy='*'
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy

E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-e2e.XXXXXX") || {
    echo "$E2E_NAME: mktemp -d failed" >&2
    exit 2
}
# shellcheck disable=SC2034  # for the test scripts
TMP=$E2E_TMP
# jobs of an agent run as root get uids of their own: they cross this folder to reach
# their own folder and the tests' commands (and cannot list it)
chmod 0711 "$E2E_TMP"
DATA=$E2E_TMP/data
BODY_FILE=$E2E_TMP/resp.body
HDR_FILE=$E2E_TMP/resp.headers
OUT_FILE=$E2E_TMP/cli.out
ERR_FILE=$E2E_TMP/cli.err
STATUS=000
RC=0
URL=""
TOKEN=""
SERVER_PID=""
SERVER_LOG=""
SERVER_OUT=""
E2E_PASSED=0
E2E_FAILED=0
E2E_DONE=0
E2E_PIDS=()
E2E_NSERVERS=0
API_METHOD=""
API_PATH=""

# ---------------------------------------------------------------- reporting

# The first caller outside this file, as "file:line".
_where() {
    local i
    for ((i = 1; i < ${#BASH_SOURCE[@]}; i++)); do
        if [ "${BASH_SOURCE[$i]}" != "${BASH_SOURCE[0]}" ]; then
            echo "$(basename "${BASH_SOURCE[$i]}"):${BASH_LINENO[$((i - 1))]}"
            return
        fi
    done
    echo "?:?"
}

_pass() { E2E_PASSED=$((E2E_PASSED + 1)); }

# Print up to 40 lines / 2000 bytes of a file, indented.
_show() {
    local label=$1 file=$2
    [ -s "$file" ] || { echo "    ($label: empty)" >&2; return; }
    echo "    --- $label:" >&2
    head -c 2000 "$file" | head -n 40 | sed 's/^/    | /' >&2
}

# fail MESSAGE...: record a failure at the caller's line and exit 1.
fail() {
    E2E_FAILED=$((E2E_FAILED + 1))
    echo "FAIL $(_where): $*" >&2
    exit 1
}

# Print a progress note (to stderr, so it never mixes with captured output).
note() { echo "# $*" >&2; }

# ---------------------------------------------------------------- assertions

# assert_eq ACTUAL EXPECTED [WHAT]
assert_eq() {
    if [ "$1" == "$2" ]; then _pass; return 0; fi
    fail "${3:-value}: expected '$2', got '$1'"
}

# assert_ne ACTUAL UNEXPECTED [WHAT]
assert_ne() {
    if [ "$1" != "$2" ]; then _pass; return 0; fi
    fail "${3:-value}: expected anything but '$2'"
}

# assert_match ACTUAL ERE [WHAT]   (bash regular expression, anchored as written)
assert_match() {
    if [[ "$1" =~ $2 ]]; then _pass; return 0; fi
    fail "${3:-value}: '$1' does not match /$2/"
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains() {
    if [[ "$1" == *"$2"* ]]; then _pass; return 0; fi
    fail "${3:-text}: '$(printf %s "$1" | head -c 600)' does not contain '$2'"
}

# assert_file_contains FILE FIXED-STRING [WHAT]
assert_file_contains() {
    if grep -qF -- "$2" "$1" 2>/dev/null; then _pass; return 0; fi
    _show "$(basename "$1")" "$1"
    fail "${3:-$(basename "$1")}: does not contain '$2'"
}

# assert_file_lacks FILE FIXED-STRING [WHAT]
assert_file_lacks() {
    if [ -e "$1" ] && ! grep -qF -- "$2" "$1"; then _pass; return 0; fi
    _show "$(basename "$1")" "$1"
    fail "${3:-$(basename "$1")}: contains '$2' (or is missing)"
}

# assert_status EXPECTED   (status of the last api/api_raw call)
assert_status() {
    if [ "$STATUS" == "$1" ]; then _pass; return 0; fi
    _show "response body" "$BODY_FILE"
    fail "$API_METHOD $API_PATH: expected HTTP $1, got $STATUS"
}

# assert_json JQ-EXPR EXPECTED [FILE]   (jq -r output; FILE defaults to the last response)
assert_json() {
    local file=${3:-$BODY_FILE} got
    if ! got=$(jq -r "$1" <"$file" 2>"$E2E_TMP/jq.err"); then
        _show "input" "$file"
        _show "jq" "$E2E_TMP/jq.err"
        fail "jq '$1' failed (input is not JSON?) [after $API_METHOD $API_PATH]"
    fi
    if [ "$got" == "$2" ]; then _pass; return 0; fi
    _show "input" "$file"
    fail "jq '$1': expected '$2', got '$got' [after $API_METHOD $API_PATH]"
}

# assert_header NAME ERE   (a header of the last response; name case-insensitive)
assert_header() {
    local v
    v=$(header "$1")
    if [[ "$v" =~ $2 ]]; then _pass; return 0; fi
    _show "response headers" "$HDR_FILE"
    fail "$API_METHOD $API_PATH: header $1 is '$v', expected /$2/"
}

# assert_rc EXPECTED   (exit code of the last run_cli/gp)
assert_rc() {
    if [ "$RC" == "$1" ]; then _pass; return 0; fi
    _show "stdout" "$OUT_FILE"
    _show "stderr" "$ERR_FILE"
    fail "gpupool $E2E_LAST_CMD: expected exit code $1, got $RC"
}

# assert_one_line_error [FIXED-STRING]: stderr of the last command is exactly
# one line starting "gpupool: " (and containing the string, if given).
assert_one_line_error() {
    local n first
    n=$(wc -l <"$ERR_FILE")
    first=$(head -n 1 "$ERR_FILE")
    if [ "$n" -eq 1 ] && [[ "$first" == "gpupool: "* ]] && [[ "$first" == *"${1:-}"* ]]; then
        _pass
        return 0
    fi
    _show "stderr" "$ERR_FILE"
    fail "gpupool $E2E_LAST_CMD: expected one stderr line 'gpupool: ...${1:+$1...}', got $n line(s)"
}

# ---------------------------------------------------------------- HTTP

# header NAME: value of a header of the last response (first match, no CR).
header() {
    grep -i "^$1:" "$HDR_FILE" 2>/dev/null | head -n 1 | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r'
}

# api_raw METHOD PATH [curl args...]: request on $URL with no credentials.
api_raw() {
    local method=$1 path=$2
    shift 2
    API_METHOD=$method
    API_PATH=$path
    : >"$BODY_FILE"
    : >"$HDR_FILE"
    STATUS=$(curl -sS -g --max-time 20 -X "$method" -o "$BODY_FILE" -D "$HDR_FILE" \
        -w '%{http_code}' "$@" "$URL$path" 2>"$E2E_TMP/curl.err") || true
    [ -n "$STATUS" ] || STATUS=000
}

# api METHOD PATH [BODY]: request with the admin token (override the header
# with AUTH_HEADER="Authorization: ..." api ...; AUTH_HEADER= sends none).
# BODY is sent as-is with Content-Type: application/json; "@FILE" sends a file.
api() {
    local method=$1 path=$2 args=()
    local auth=${AUTH_HEADER-"Authorization: Bearer $TOKEN"}
    [ -n "$auth" ] && args+=(-H "$auth")
    if [ $# -ge 3 ]; then
        args+=(-H "Content-Type: application/json" --data-binary "$3")
    fi
    api_raw "$method" "$path" "${args[@]}"
}

# ---------------------------------------------------------------- CLI

# run_cli ARGS...: run gpupool (30 s limit) -> RC, OUT_FILE, ERR_FILE.
run_cli() {
    E2E_LAST_CMD="$*"
    [ -z "$TOKEN" ] || E2E_LAST_CMD=${E2E_LAST_CMD//"$TOKEN"/<token>}
    timeout 30 "$GPUPOOL_BIN" "$@" >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
    RC=$?
}

# gp ARGS...: run_cli against the current server with the admin token.
gp() { run_cli --server "$URL" --token "$TOKEN" "$@"; }

# ---------------------------------------------------------------- stores

# With GP_TEST_PG set (a cluster's URI without a database name, from
# scripts/pg-cluster.sh), every data folder a test gives a server gets a
# PostgreSQL database of its own instead of DIR/gpupool.db.

# store_url DIR: the PostgreSQL URI of DIR's database (made on first use),
# or nothing when the tests run on SQLite.
store_url() {
    [ -n "${GP_TEST_PG:-}" ] || return 0
    local key name
    key=$(printf '%s|%s' "$E2E_TMP" "$1" | md5sum | cut -c1-24)
    name="e2e_$key"
    if [ ! -e "$E2E_TMP/.pgdb.$key" ]; then
        _psql "$GP_TEST_PG/postgres" -c "CREATE DATABASE \"$name\"" >/dev/null ||
            fail "cannot create PostgreSQL database $name on $GP_TEST_PG"
        : >"$E2E_TMP/.pgdb.$key"
    fi
    echo "$GP_TEST_PG/$name"
}

# store_flag DIR: "--store URI" under PostgreSQL, nothing on SQLite (for
# `gpupool check`, `gpupool gateway` and other commands given a data folder).
store_flag() {
    [ -n "${GP_TEST_PG:-}" ] || return 0
    echo "--store $(store_url "$1")"
}

_psql() {
    local p
    p=$(command -v psql || ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n 1)
    "$p" -X -q -A -t -v ON_ERROR_STOP=1 -d "$@"
}

# db_sql DIR SQL: run SQL on DIR's store (sqlite3, or psql under PostgreSQL)
# and print the rows, columns separated by '|'.
db_sql() {
    if [ -n "${GP_TEST_PG:-}" ]; then
        _psql "$(store_url "$1")" -c "$2"
    else
        sqlite3 -cmd ".timeout 5000" "$1/gpupool.db" "$2"
    fi
}

# skip_on_pg REASON: end a test that only applies to the SQLite store (ctest
# counts exit code 77 as skipped).
skip_on_pg() {
    [ -n "${GP_TEST_PG:-}" ] || return 0
    echo "$E2E_NAME: skipped on PostgreSQL: $*"
    E2E_DONE=1
    E2E_SKIP=1
    exit 77
}

# ---------------------------------------------------------------- servers

# launch_server DIR ARGS...: start `gpupool server ARGS` in the background (no
# flags added, but `--store` under GP_TEST_PG: store_url DIR), wait (15 s at most) for DIR/server.url and a 200 from its
# /healthz, then set URL and TOKEN (from DIR/admin.token).
launch_server() {
    local dir=$1 i url=""
    shift
    E2E_NSERVERS=$((E2E_NSERVERS + 1))
    SERVER_LOG=$E2E_TMP/server.$E2E_NSERVERS.err
    SERVER_OUT=$E2E_TMP/server.$E2E_NSERVERS.out
    rm -f "$dir/server.url"
    if [ -n "${GP_TEST_PG:-}" ] && [[ " $* " != *" --store "* ]]; then
        set -- "$@" --store "$(store_url "$dir")"
    fi
    "$GPUPOOL_BIN" server "$@" >"$SERVER_OUT" 2>"$SERVER_LOG" </dev/null &
    SERVER_PID=$!
    E2E_PIDS+=("$SERVER_PID")
    for ((i = 0; i < 150; i++)); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            local rc=$?
            _forget_pid "$SERVER_PID"
            SERVER_PID=""
            _show "server stdout" "$SERVER_OUT"
            _show "server stderr" "$SERVER_LOG"
            fail "server exited with code $rc during start (args: $*)"
        fi
        if [ -z "$url" ] && [ -s "$dir/server.url" ]; then
            url=$(head -n 1 "$dir/server.url")
            [[ "$url" =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || url=""
        fi
        if [ -n "$url" ] &&
            [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/healthz")" == 200 ]; then
            break
        fi
        sleep 0.1
    done
    if [ "$i" -ge 150 ]; then
        _show "server stderr" "$SERVER_LOG"
        fail "server did not become healthy within 15 s (server.url: '$url')"
    fi
    URL=$url
    TOKEN=""
    [ -r "$dir/admin.token" ] && TOKEN=$(head -n 1 "$dir/admin.token")
    export URL TOKEN
}

# start_server [extra flags]: launch_server with --data $DATA --listen
# 127.0.0.1:0 and the extra flags; exports URL and TOKEN.
start_server() {
    launch_server "$DATA" --data "$DATA" --listen 127.0.0.1:0 "$@"
}

# _wait_exit PID SECONDS: wait for PID to exit; sets _EXIT to its code, or
# returns 1 if it is still running after SECONDS.
_wait_exit() {
    local pid=$1 i
    for ((i = 0; i < $2 * 20; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid"
            _EXIT=$?
            return 0
        fi
        sleep 0.05
    done
    return 1
}

_forget_pid() {
    local p keep=()
    for p in "${E2E_PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
    E2E_PIDS=("${keep[@]}")
}

# stop_server: SIGTERM the current server and assert it exits 0 within 20 s
# without a sanitizer report.
stop_server() {
    [ -n "$SERVER_PID" ] || fail "stop_server: no server is running"
    local pid=$SERVER_PID
    kill -TERM "$pid" 2>/dev/null
    if ! _wait_exit "$pid" 20; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        _forget_pid "$pid"
        SERVER_PID=""
        _show "server stderr" "$SERVER_LOG"
        fail "server (pid $pid) did not stop within 20 s of SIGTERM"
    fi
    _forget_pid "$pid"
    SERVER_PID=""
    if [ "$_EXIT" != 0 ]; then
        # the cause is rarely in the access log: what else it said first, then its last lines
        echo "    --- server stderr, other than the access log (last 40 lines):" >&2
        grep -v 'msg=access' "$SERVER_LOG" | tail -n 40 | sed 's/^/    | /' >&2
        echo "    --- server stderr (last 20 lines):" >&2
        tail -n 20 "$SERVER_LOG" | sed 's/^/    | /' >&2
        fail "server exited with code $_EXIT after SIGTERM (expected 0; a crash or a sanitizer report?)"
    fi
    _pass
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$SERVER_LOG"; then
        grep -E -A30 'Sanitizer|runtime error:' "$SERVER_LOG" | head -n 60 | sed 's/^/    | /' >&2
        fail "server printed a sanitizer report"
    fi
    _pass
}

# ---------------------------------------------------------------- end

# done_testing: mark the script complete; the EXIT trap prints the closing line.
done_testing() {
    E2E_DONE=1
    exit 0
}

# The processes working in this test's folder (a workload's folder is <state>/work/<job>), but
# for this shell's own process group: "PID PGID" lines.
_e2e_workloads() {
    local d cwd pid pgid mine
    mine=$(ps -o pgid= -p $$ | tr -d ' ')
    for d in /proc/[0-9]*; do
        cwd=$(readlink "$d/cwd" 2>/dev/null) || continue
        case $cwd in "$E2E_TMP" | "$E2E_TMP"/*) ;; *) continue ;; esac
        pid=${d#/proc/}
        pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')
        [ -n "$pgid" ] && [ "$pgid" != "$mine" ] && echo "$pid $pgid"
    done
}

# Agents leave their workloads running when they stop (re-adoption) unless run with
# --stop-workloads-on-exit: end the process group of every workload still working in this
# test's folder, and say so (a test should have ended them itself).
_e2e_end_workloads() {
    local left pid pgid
    left=$(_e2e_workloads)
    [ -n "$left" ] || return 0
    echo "# ending $(wc -l <<<"$left") workload process(es) the test left running" >&2
    while read -r pid pgid; do
        kill -KILL -- "-$pgid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    done <<<"$left"
    sleep 0.2
    left=$(_e2e_workloads)
    [ -z "$left" ] || echo "# still running after SIGKILL: $(ps -o pid=,user=,args= -p "$(cut -d' ' -f1 <<<"$left" | paste -sd,)" 2>/dev/null)" >&2
}

_e2e_cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${E2E_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${E2E_PIDS[@]}"; do
        if ! _wait_exit "$pid" 10; then
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
    _e2e_end_workloads
    if [ "$E2E_DONE" != 1 ] && [ "$E2E_FAILED" == 0 ]; then
        echo "FAIL $E2E_NAME: the script stopped early (exit code $rc) before done_testing" >&2
        E2E_FAILED=1
    fi
    if [ "${E2E_KEEP:-0}" == 1 ]; then
        echo "# kept $E2E_TMP" >&2
    else
        rm -rf "$E2E_TMP"
    fi
    [ "${E2E_SKIP:-0}" == 1 ] && exit 77
    echo "$E2E_NAME: $E2E_PASSED passed, $E2E_FAILED failed"
    [ "$E2E_FAILED" == 0 ] || exit 1
    exit 0
}
trap _e2e_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Ignored here and so in every process a test starts: tests freeze agents with SIGSTOP, and when
# the test's process group is orphaned (ctest may start it so) the kernel sends SIGHUP and
# SIGCONT to a group with a stopped member whenever one of its processes exits - a frozen agent
# would die of it mid-test instead of staying frozen.
trap '' HUP

# workload_bin: make BIN=$E2E_TMP/bin for the test's workload commands (link
# real commands there under names of the test's own, so they can be told
# apart) and kill whatever still runs from it when the script ends, before
# the usual cleanup.
workload_bin() {
    BIN=$E2E_TMP/bin
    mkdir -p "$BIN"
    trap _workload_exit EXIT
}

_workload_exit() {
    local rc=$? pid
    for pid in $(pgrep -f -- "$BIN/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    (exit "$rc")
    _e2e_cleanup
}

# start_agent: after start_server, join one agent (heartbeat every second) simulating the nodes
# of $E2E_TMP/node.json (one join token good for as many nodes), the admin made ops-engineer
# to create its join token, and wait until
# every node is ready; AGENT_ERR is its stderr.
start_agent() {
    local jt n
    gp member grant admin ops-engineer
    assert_rc 0
    n=$(jq '.nodes | length' "$E2E_TMP/node.json")
    gp -o json jointoken create --ttl 3600 --uses "$n" # one use per node the agent joins
    assert_rc 0
    jt=$(jout .token)
    AGENT_ERR=$E2E_TMP/agent.err
    "$GPUPOOL_BIN" --server "$URL" agent --join-token "$jt" --inventory "$E2E_TMP/node.json" \
        --state-dir "$E2E_TMP/agent-state" --interval 1 >"$E2E_TMP/agent.out" 2>"$AGENT_ERR" </dev/null &
    E2E_PIDS+=("$!")
    poll 15 _nodes_ready "$n" || { _show "agent stderr" "$AGENT_ERR"; fail "the nodes did not register"; }
    _pass
}
_nodes_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == "$1" ]
}

# ---- helpers shared by the CLI-driven scripts

# run_in FILE ARGS...: run_cli, with standard input from FILE.
run_in() {
    local f=$1
    shift
    E2E_LAST_CMD="$* < $(basename "$f")"
    [ -z "$TOKEN" ] || E2E_LAST_CMD=${E2E_LAST_CMD//"$TOKEN"/<token>}
    timeout 30 "$GPUPOOL_BIN" "$@" >"$OUT_FILE" 2>"$ERR_FILE" <"$f"
    RC=$?
}

# as TOKEN ARGS...: the CLI against the server with another caller's token.
as() {
    local tok=$1
    shift
    run_cli --server "$URL" --token "$tok" "$@"
}

# user NAME ROLE [TENANT [PROJECT]]: as the admin token $ADMIN, create user NAME (its password
# in $E2E_TMP/pw.NAME, written when missing), grant it ROLE (globally, over TENANT, or over
# TENANT's PROJECT) and log it in; sets TOK_NAME to its token.  A test may define its own.
user() {
    local name=$1 role=$2 tenant=${3:-} project=${4:-}
    [ -f "$E2E_TMP/pw.$name" ] || printf '%s-Secret-9\n' "$name" >"$E2E_TMP/pw.$name"
    run_in "$E2E_TMP/pw.$name" --server "$URL" --token "$ADMIN" user create "$name"
    assert_rc 0
    gp member grant "$name" "$role" ${tenant:+--tenant "$tenant"} ${project:+--project "$project"}
    assert_rc 0
    run_in "$E2E_TMP/pw.$name" --server "$URL" login "$name"
    assert_rc 0
    printf -v "TOK_$name" '%s' "$(head -n 1 "$OUT_FILE")"
}

# jout FILTER: jq -r FILTER on the last command's stdout ("" when not JSON).
jout() { jq -r "$1" "$OUT_FILE" 2>/dev/null; }

# the value of KEY in `KEY  value` object output of the last command
field() { sed -n "s/^$1 \+//p" "$OUT_FILE" | head -n 1; }

# assert_denied CODE...: exit 1, one error line naming one of the HTTP codes, no stdout
assert_denied() {
    assert_rc 1
    assert_one_line_error
    local code ok=0
    for code in "$@"; do grep -qF "HTTP $code)" "$ERR_FILE" && ok=1; done
    [ "$ok" == 1 ] || { _show stderr "$ERR_FILE"; fail "gpupool $E2E_LAST_CMD: expected HTTP $*"; }
    _pass
    assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of a refused 'gpupool $E2E_LAST_CMD'"
}

_now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# poll SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 on timeout.
poll() {
    local limit=$1 deadline
    shift
    deadline=$(($(_now_ms) + limit * 1000))
    while :; do
        "$@" && return 0
        [ "$(_now_ms)" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}
