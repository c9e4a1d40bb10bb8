#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119  # jq programs in single quotes; start_server takes optional flags
#
# test_job_endpoint_ports.sh - issue 33, item 2: a job endpoint is checked at connect time,
# not when its route was cached.  Tenants red and blue share one node.  Red's job serves a
# model on port P behind an endpoint red keeps unhealthy (its health path answers 404), so
# routing for it is in panic mode; red warms the route (answered by its own server), then
# closes its server while its job keeps running; blue's job - which serves no endpoint, so
# nothing else moves the gateway's epoch - starts serving on P.  Before the fix the cached
# route (panic mode: unhealthy endpoints tried anyway) carried red's key to blue's server.
# Checked:
#   - panic mode still serves a job endpoint whose port is open (the positive control);
#   - once the node reports red's port closed, red's calls are refused 503
#     no_healthy_endpoint and blue's server never sees a request;
#   - a server on P outside any job (started by this test once blue's job ends) is not
#     red's job's either: still refused.
# A real server, a real agent with two L4 cards, the fake Node upstream as the jobs' servers.
. "$(dirname "$0")/../e2e/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || { echo "$E2E_NAME: skipped: node is not installed"; exit 77; }
NODE=$(command -v node)
BASH_BIN=$(command -v bash)

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
chat() { # chat KEY MODEL: POST /v1/chat/completions
    AUTH_HEADER="Authorization: Bearer $1" api POST /v1/chat/completions \
        "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}

start_server --health-interval 1
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp member grant admin tenant-admin --tenant $t
    assert_rc 0
    gp project create p --tenant $t
    assert_rc 0
done
gp member grant admin ops-engineer
gp -o json jointoken create --ttl 600
JT=$(jout .token)
cat >"$E2E_TMP/inv.json" <<'EOF'
{"nodes":[{"name":"shared","address":"127.0.0.1","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":2,"mode":"whole"}]}]}
EOF
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/agent" --interval 1 --grace 1 >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
E2E_PIDS+=("$!")
node_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 15 node_ready || fail "the node did not register"
gp class create l4.1x --form whole --models L4 --cpus 1 --memory 1
assert_rc 0

# a job whose model server runs in the background (its pid in server.pid, in the job's own
# folder) while the job itself goes on: the server can close its port, the job keeps running
SERVE='"$0" "$1" --port "$2" --name "$3" --model "$4" & echo $! >server.pid; exec sleep 3600'
submit() { # submit VAR TENANT NAME PORT SERVER-NAME MODEL
    gp -o json job submit "$3" --tenant "$2" --project p --class l4.1x -- \
        "$BASH_BIN" -c "$SERVE" "$NODE" "$GW/upstream.mjs" "$4" "$5" "$6"
    assert_rc 0
    printf -v "$1" '%s' "$(jout .id)"
}
server_pid() { cat "$E2E_TMP/agent/work/$1/server.pid" 2>/dev/null; }
ports_of() { db_sql "$DATA" "SELECT listen_ports FROM jobs WHERE id = '$1'"; }
listens() { [ "$(ports_of "$1")" == "$2" ]; }

P=$(freeport)
note "red's job serves on $P"
submit RJOB red red-serve "$P" red-own rm
poll 20 listens "$RJOB" "$P" || fail "red's job ports: '$(ports_of "$RJOB")', want $P"
_pass

gp model create warm --tenant red
assert_rc 0
gp endpoint add --tenant red --model warm --job "$RJOB" --port "$P" --health-path /not-here
assert_rc 0
gp -o json key create kred --tenant red --project p
assert_rc 0
RK=$(jout .key)

# red keeps its endpoint unhealthy: every call is routed in panic mode
unhealthy() {
    gp -o json model show warm --tenant red
    [ "$(jout '.endpoints[0].state')" == unhealthy ]
}
poll 20 unhealthy || fail "red's endpoint did not turn unhealthy: $(head -c 400 "$OUT_FILE")"
_pass
served_by_red() { chat "$RK" warm; [ "$STATUS" == 200 ] && [[ "$(jq -r .id "$BODY_FILE")" == *red-own* ]]; }
poll 20 served_by_red || fail "panic mode did not serve red's open job port: $STATUS $(head -c 300 "$BODY_FILE")"
_pass
sleep 2.5 # past the read cache's distrust of this process's own changes: the route is cached now
for i in 1 2 3; do
    chat "$RK" warm
    assert_status 200
    assert_contains "$(jq -r .id "$BODY_FILE")" red-own "warm call $i answered by red's job"
done

note "red closes its port; its job keeps running"
RPID=$(server_pid "$RJOB")
[ -n "$RPID" ] || fail "red's server pid is unknown"
kill -KILL "$RPID"
poll 20 listens "$RJOB" "" || fail "red's job ports after its server stopped: '$(ports_of "$RJOB")'"
_pass
gp -o json job show "$RJOB" --tenant red --project p
assert_eq "$(jout .state)" running "red's job after its server stopped"

note "blue's job starts serving on $P on the same node (no endpoint of its own)"
submit BJOB blue blue-serve "$P" blue-secret bm
poll 20 listens "$BJOB" "$P" || fail "blue's job ports: '$(ports_of "$BJOB")', want $P"
_pass
curl -s -X DELETE "http://127.0.0.1:$P/_log" >/dev/null

for i in 1 2 3; do
    chat "$RK" warm
    [[ "$(jq -r .id "$BODY_FILE" 2>/dev/null)" == *blue-secret* ]] &&
        fail "red's key was answered by blue's server (call $i)"
    assert_status 503
    assert_json .error.code no_healthy_endpoint
done
posts=$(curl -s "http://127.0.0.1:$P/_log" | jq '[.[] | select(.method == "POST")] | length')
assert_eq "$posts" 0 "requests that reached blue's server through red's endpoint"

note "blue's job ends"
gp job cancel "$BJOB" --tenant blue --project p
assert_rc 0
BPID=$(server_pid "$BJOB")
[ -z "$BPID" ] || kill -KILL "$BPID" 2>/dev/null
port_free() { ! curl -s -o /dev/null "http://127.0.0.1:$P/_log"; }
poll 20 port_free || fail "blue's server still listens on $P"
_pass
"$NODE" "$GW/upstream.mjs" --port "$P" --name red-again --model rm >/dev/null 2>&1 &
AGAIN=$!
note "an outside server on $P is not red's job: still refused"
sleep 2.5 # at least two of the node's reports: red's job still reports no port
chat "$RK" warm
assert_status 503
kill -KILL "$AGAIN"
wait "$AGAIN" 2>/dev/null

gp job cancel "$RJOB" --tenant red --project p
assert_rc 0
done_testing
