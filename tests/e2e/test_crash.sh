#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317  # bodies expand later; helpers run in background clients
#
# test_crash.sh - crash consistency: kill -9 the server repeatedly during a
# mixed load, restart it on the same data folder, and check the invariants.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_crash.sh   [CRASH_CYCLES=8]
#
# Fleet: one agent (`--inventory`) with node a (16x A100 whole), b (1x H100,
# 2x 3g.40gb MIG) and c (1x L40S shared); tenant red (project train, with a
# project quota) and a model served by tests/gateway/upstream.mjs with a key
# that has a monthly token quota (so every gateway call reserves and settles
# a hold).
#
# Each cycle starts five background clients - job submits (whole, MIG and
# shared classes), cancels of acknowledged jobs, project quota changes,
# tenant/project creates, gateway calls - and SIGKILLs the server at a random
# moment (0.3-1.5 s in).  Every client writes what the server acknowledged
# (a 2xx: the job id, the name, the quota value) to its own file.  Then:
# `gpupool check` on the crashed store (read-only, before the restart); the
# server restarts on the same folder and port; every acknowledged change is
# there (jobs exist, acknowledged cancels are cancelled, created tenants and
# projects exist, the quota is the last acknowledged value or the one in
# flight at the kill); /readyz answers.  Last, a clean stop and a final check.
# Gateway calls are load only: usage records are written in batches after the
# answer (docs/gateway.md), so an acknowledged call is not a durable change.
#
# Workloads run $BIN/wlsleep (a link to sleep); the EXIT trap kills them.
. "$(dirname "$0")/lib.sh"

CYCLES=${CRASH_CYCLES:-8}
GW=$(cd "$(dirname "$0")/../gateway" && pwd)
BIN=$E2E_TMP/bin
mkdir -p "$BIN"
ln -s "$(command -v sleep)" "$BIN/wlsleep"
CLIENT_PIDS=()

_crash_exit() {
    local rc=$? pid
    for pid in "${CLIENT_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
    for pid in $(pgrep -f -- "$BIN/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    (exit "$rc")
    _e2e_cleanup
}
trap _crash_exit EXIT

# ---------------------------------------------------------------- setup
start_server --node-timeout 60 --endpoint-allow 127.0.0.0/8  # the fake upstream is on loopback
PORT=${URL##*:}
ADMIN=$TOKEN
note "server at $URL"
cat >"$E2E_TMP/fleet.json" <<'EOF'
{"nodes":[
 {"name":"a","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":16,"mode":"whole"}]},
 {"name":"b","cpus":64,"memory_gib":512,
  "gpus":[{"model":"H100-80GB","memory_gib":80,"count":1,"mode":"mig","mig":["3g.40gb","3g.40gb"]}]},
 {"name":"c","cpus":32,"memory_gib":256,
  "gpus":[{"model":"L40S","memory_gib":48,"count":1,"mode":"shared"}]}]}
EOF
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600 --uses 3 # nodes a, b and c
assert_rc 0
JT=$(jout .token)
GPUPOOL_JOIN_TOKEN=$JT GPUPOOL_TOKEN=$ADMIN "$GPUPOOL_BIN" --server "$URL" agent \
    --inventory "$E2E_TMP/fleet.json" --state-dir "$E2E_TMP/agent" --interval 1 --grace 1 \
    >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
E2E_PIDS+=($!)
fleet_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 3 ]
}
poll 15 fleet_ready || { _show "agent stderr" "$E2E_TMP/agent.err"; fail "the fleet did not register"; }
_pass
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create h100.3g --form mig:3g.40gb --models H100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create l40s.12g --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0
gp tenant create red
assert_rc 0
gp member grant admin tenant-admin --tenant red
assert_rc 0
gp project create train --tenant red --class development
assert_rc 0
api PUT /api/v1/tenants/red/projects/train/quota '{"gpus":4,"concurrent_jobs":12,"tokens_month":100000000}'
assert_status 200

node "$GW/upstream.mjs" --port 0 --name up1 >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=($!)
poll 10 grep -q '^listening' "$E2E_TMP/up.out" || fail "the upstream did not start"
UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out")
gp model create llama --tenant red
assert_rc 0
gp endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP/v1" --accelerator H100-80GB
assert_rc 0
api POST /api/v1/tenants/red/projects/train/keys '{"name":"bot","models":["llama"],"tokens_month":50000000}'
assert_status 201
KEY=$(jq -r .key "$BODY_FILE")

# ---------------------------------------------------------------- clients

# req FILE METHOD PATH [BODY]: one API call with the admin token; prints the
# status ("000": no answer), the body goes to FILE.
req() {
    local f=$1 m=$2 p=$3 a=(-H "Authorization: Bearer $ADMIN")
    [ $# -ge 4 ] && a+=(-H 'Content-Type: application/json' --data-binary "$4")
    curl -s -g --max-time 5 -X "$m" -o "$f" -w '%{http_code}' "${a[@]}" "$URL$p" 2>/dev/null || true
}
running() { [ ! -e "$STOP" ]; }
is2xx() { [[ "$1" == 2?? ]]; }

client_submit() {
    local out=$1 i=0 code cls b=$E2E_TMP/b.submit
    local classes=(a100.1x a100.1x a100.1x h100.3g l40s.12g)
    while running; do
        i=$((i + 1))
        cls=${classes[$((RANDOM % 5))]}
        code=$(req "$b" POST /api/v1/tenants/red/projects/train/jobs \
            "{\"name\":\"c$CYCLE-$i\",\"class\":\"$cls\",\"units\":1,\"command\":[\"$BIN/wlsleep\",\"300\"]}")
        [ "$code" == 000 ] && break
        is2xx "$code" && echo "job $(jq -r .id "$b")" >>"$out"
    done
}
client_cancel() {
    local out=$1 id code b=$E2E_TMP/b.cancel
    while running; do
        id=$(cat "$E2E_TMP"/ack.submit.* 2>/dev/null | awk '{print $2}' | shuf -n 1)
        if [ -z "$id" ]; then sleep 0.05; continue; fi
        code=$(req "$b" POST "/api/v1/tenants/red/projects/train/jobs/$id/cancel")
        [ "$code" == 000 ] && break
        is2xx "$code" && echo "cancel $id" >>"$out"
    done
}
client_quota() {
    local out=$1 g code b=$E2E_TMP/b.quota
    while running; do
        g=$((2 + RANDOM % 5))
        echo "sent $g" >>"$out"
        code=$(req "$b" PUT /api/v1/tenants/red/projects/train/quota \
            "{\"gpus\":$g,\"concurrent_jobs\":12,\"tokens_month\":100000000}")
        [ "$code" == 000 ] && break
        is2xx "$code" && echo "ack $g" >>"$out"
        sleep 0.05
    done
}
client_create() {
    local out=$1 i=0 code b=$E2E_TMP/b.create
    while running; do
        i=$((i + 1))
        code=$(req "$b" POST /api/v1/tenants "{\"name\":\"t$CYCLE-$i\"}")
        [ "$code" == 000 ] && break
        is2xx "$code" && echo "tenant t$CYCLE-$i" >>"$out"
        code=$(req "$b" POST /api/v1/tenants/red/projects "{\"name\":\"p$CYCLE-$i\",\"class\":\"research\"}")
        [ "$code" == 000 ] && break
        is2xx "$code" && echo "project p$CYCLE-$i" >>"$out"
    done
}
client_gateway() {
    local out=$1 code b=$E2E_TMP/b.gw
    while running; do
        code=$(curl -s --max-time 5 -o "$b" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
            -H 'Content-Type: application/json' "$URL/v1/chat/completions" \
            --data-binary '{"model":"llama","max_tokens":8,"messages":[{"role":"user","content":"hi there"}]}' \
            2>/dev/null || true)
        [ "$code" == 000 ] && break
        [ "$code" == 200 ] && echo "call" >>"$out"
    done
}

# relaunch: start the server again on the same folder and port (a port still
# held by the old sockets is retried), and wait for /healthz.
relaunch() {
    local try i
    for ((try = 0; try < 40; try++)); do
        rm -f "$DATA/server.url"
        "$GPUPOOL_BIN" server --data "$DATA" $(store_flag "$DATA") --listen "127.0.0.1:$PORT" --node-timeout 60 --endpoint-allow 127.0.0.0/8 \
            >>"$E2E_TMP/server.crash.out" 2>>"$SERVER_LOG" </dev/null &
        SERVER_PID=$!
        E2E_PIDS+=("$SERVER_PID")
        for ((i = 0; i < 200; i++)); do
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                wait "$SERVER_PID"
                _forget_pid "$SERVER_PID"
                SERVER_PID=""
                break
            fi
            [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$URL/healthz")" == 200 ] && return 0
            sleep 0.05
        done
        sleep 0.25
    done
    _show "server stderr" "$SERVER_LOG"
    fail "the server did not come back on port $PORT"
}

# ---------------------------------------------------------------- cycles
STOP=$E2E_TMP/stop
NACK=0
NCALLS=0
for ((CYCLE = 1; CYCLE <= CYCLES; CYCLE++)); do
    rm -f "$STOP"
    CLIENT_PIDS=()
    for c in submit cancel quota create gateway; do
        : >"$E2E_TMP/ack.$c.$CYCLE"
        client_$c "$E2E_TMP/ack.$c.$CYCLE" &
        CLIENT_PIDS+=($!)
    done
    sleep "$(awk -v r=$RANDOM 'BEGIN{printf "%.2f", 0.3 + 1.2 * r / 32767}')"
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null
    _forget_pid "$SERVER_PID"
    touch "$STOP"
    for pid in "${CLIENT_PIDS[@]}"; do wait "$pid"; done
    CLIENT_PIDS=()

    # the crashed store, before anything repairs it
    run_cli check --data "$DATA" $(store_flag "$DATA")
    assert_rc 0
    relaunch

    # every acknowledged change is there
    while read -r kind id; do
        api GET "/api/v1/tenants/red/projects/train/jobs/$id"
        assert_status 200
        NACK=$((NACK + 1))
    done <"$E2E_TMP/ack.submit.$CYCLE"
    while read -r kind id; do
        api GET "/api/v1/tenants/red/projects/train/jobs/$id"
        assert_json .state cancelled
        NACK=$((NACK + 1))
    done <"$E2E_TMP/ack.cancel.$CYCLE"
    while read -r kind name; do
        if [ "$kind" == tenant ]; then api GET "/api/v1/tenants/$name"
        else api GET "/api/v1/tenants/red/projects/$name"; fi
        assert_status 200
        NACK=$((NACK + 1))
    done <"$E2E_TMP/ack.create.$CYCLE"
    last=$(awk '$1 == "ack" {v = $2} END {print v}' "$E2E_TMP/ack.quota.$CYCLE")
    if [ -n "$last" ]; then
        # the value acknowledged last, or the one sent after it (in flight at the kill)
        inflight=$(awk -v l="$last" '$1 == "ack" {a = NR} $1 == "sent" {s[NR] = $2}
                   END {for (n in s) if (n + 0 > a) print s[n]}' "$E2E_TMP/ack.quota.$CYCLE")
        api GET /api/v1/tenants/red/projects/train/quota
        assert_status 200
        got=$(jq -r '.gpus // .quota.gpus' "$BODY_FILE")
        if [ "$got" != "$last" ] && [ "$got" != "$inflight" ]; then
            fail "cycle $CYCLE: project quota gpus is $got, acknowledged $last (in flight: '${inflight:-none}')"
        fi
        _pass
        NACK=$((NACK + 1))
    fi
    NCALLS=$((NCALLS + $(wc -l <"$E2E_TMP/ack.gateway.$CYCLE")))
    api_raw GET /readyz
    assert_status 200
    note "cycle $CYCLE: $(cat "$E2E_TMP"/ack.{submit,cancel,create,quota}.$CYCLE | grep -vc '^sent') acknowledged"
done

# ---------------------------------------------------------------- the end
run_cli -o json check --data "$DATA" $(store_flag "$DATA")
assert_rc 0
assert_eq "$(jout '[.checks[] | select(.ok)] | length')" "$(jout '.checks | length')" "checks holding"
stop_server
run_cli check --data "$DATA" $(store_flag "$DATA")
assert_rc 0
assert_file_contains "$OUT_FILE" "all checks hold"
# and the checks would see a broken store: break the audit chain (on a copy for SQLite)
if [ -n "${GP_TEST_PG:-}" ]; then
    db_sql "$DATA" "UPDATE audit SET actor = 'mallory' WHERE seq = 2"
    run_cli check $(store_flag "$DATA")
    assert_rc 1
    assert_file_contains "$OUT_FILE" "audit_chain    FAILED"
elif command -v sqlite3 >/dev/null 2>&1; then
    cp "$DATA/gpupool.db" "$E2E_TMP/copy.db"
    sqlite3 "$E2E_TMP/copy.db" "UPDATE audit SET actor = 'mallory' WHERE seq = 2"
    run_cli check --store "sqlite:$E2E_TMP/copy.db"
    assert_rc 1
    assert_file_contains "$OUT_FILE" "audit_chain    FAILED"
fi
echo "crash cycles: $CYCLES, acknowledged changes verified: $NACK, gateway calls answered: $NCALLS"
done_testing
