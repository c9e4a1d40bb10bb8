#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119  # jq programs in single quotes; start_server takes optional flags
#
# test_job_endpoint.sh - a job endpoint reaches only its own job's server: tenants red
# and blue each run a job on the same node; blue's job serves a model on port PB.
# red adds an endpoint "served by my job, port PB" (a confused deputy: the gateway
# would carry red's keys' requests to blue's server).  Checked:
#   - red's calls are refused 503 and blue's server never sees a request; red's
#     endpoint is unhealthy with the generic reason "job port not open" (ops see
#     "does not listen on port PB");
#   - the node reports each job's listening ports (jobs.listen_ports), bounded;
#   - red's endpoint on its own job's port serves (the positive control), and so
#     does blue's on its own.
# A real server, a real agent with two L4 cards, the fake Node upstream as the jobs'
# model servers, curl.
. "$(dirname "$0")/../e2e/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || { echo "$E2E_NAME: skipped: node is not installed"; exit 77; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
chat() { # chat KEY MODEL: POST /v1/chat/completions
    AUTH_HEADER="Authorization: Bearer $1" api POST /v1/chat/completions \
        "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
}
newkey() { # newkey VAR TENANT PROJECT
    gp -o json key create "k$2" --tenant "$2" --project "$3"
    assert_rc 0
    printf -v "$1" '%s' "$(jout .key)"
}

start_server --health-interval 1
ADMIN=$TOKEN
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

PB=$(freeport)
PR=$(freeport)
while [ "$PR" == "$PB" ]; do PR=$(freeport); done
note "blue's job serves on $PB, red's on $PR, both on node shared"
gp -o json job submit blue-serve --tenant blue --project p --class l4.1x -- \
    "$(command -v node)" "$GW/upstream.mjs" --port "$PB" --name blue-secret --model bm
assert_rc 0
BJOB=$(jout .id)
gp -o json job submit red-serve --tenant red --project p --class l4.1x -- \
    "$(command -v node)" "$GW/upstream.mjs" --port "$PR" --name red-own --model rm
assert_rc 0
RJOB=$(jout .id)

# the node reports each job's ports once its server listens
ports_of() { db_sql "$DATA" "SELECT listen_ports FROM jobs WHERE id = '$1'"; }
listens() { [ "$(ports_of "$1")" == "$2" ]; }
poll 20 listens "$BJOB" "$PB" || fail "blue's job ports: '$(ports_of "$BJOB")', want $PB"
_pass
poll 20 listens "$RJOB" "$PR" || fail "red's job ports: '$(ports_of "$RJOB")', want $PR"
_pass

note "red's endpoint names its own job but blue's port"
gp model create stolen --tenant red
assert_rc 0
gp endpoint add --tenant red --model stolen --job "$RJOB" --port "$PB"
assert_rc 0
gp model create own --tenant red
assert_rc 0
gp endpoint add --tenant red --model own --job "$RJOB" --port "$PR"
assert_rc 0
gp model create bm --tenant blue
assert_rc 0
gp endpoint add --tenant blue --model bm --job "$BJOB" --port "$PB"
assert_rc 0
newkey RK red p
newkey BK blue p
curl -s -X DELETE "http://127.0.0.1:$PB/_log" >/dev/null

# positive controls: each tenant's endpoint on its own job's port serves
serves() { chat "$1" "$2"; [ "$STATUS" == 200 ]; }
poll 20 serves "$RK" own || fail "red's own job endpoint did not serve: $STATUS $(head -c 300 "$BODY_FILE")"
_pass
assert_contains "$(jq -r .id "$BODY_FILE")" red-own "answered by red's job"
poll 20 serves "$BK" bm || fail "blue's job endpoint did not serve: $STATUS $(head -c 300 "$BODY_FILE")"
_pass
assert_contains "$(jq -r .id "$BODY_FILE")" blue-secret "answered by blue's job"
curl -s -X DELETE "http://127.0.0.1:$PB/_log" >/dev/null

for i in 1 2 3; do
    chat "$RK" stolen
    assert_status 503
    assert_json .error.code no_healthy_endpoint
done
posts=$(curl -s "http://127.0.0.1:$PB/_log" | jq '[.[] | select(.method == "POST")] | length')
assert_eq "$posts" 0 "requests that reached blue's server through red's endpoint"

stolen_state() {
    gp -o json model show stolen --tenant red
    [ "$(jout '.endpoints[0].state')" == unhealthy ]
}
poll 10 stolen_state || fail "red's endpoint on blue's port is not unhealthy: $(head -c 400 "$OUT_FILE")"
_pass
assert_contains "$(jout '.endpoints[0].last_error')" "job port not open" "the tenant's reason"
detail=$(db_sql "$DATA" "SELECT last_error_detail FROM endpoints WHERE job_id = '$RJOB' AND port = $PB")
assert_contains "$detail" "does not listen on port $PB" "the detail ops see"

note "the job's own endpoint still serves"
chat "$RK" own
assert_status 200

gp job cancel "$BJOB" --tenant blue --project p
gp job cancel "$RJOB" --tenant red --project p
pkill -f -- "--name blue-secret --model bm" 2>/dev/null
pkill -f -- "--name red-own --model rm" 2>/dev/null
done_testing
