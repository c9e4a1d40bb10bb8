#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_console.sh - the tenant and project overviews (GET …/overview) and the
# web console at / in a real browser: a server with a simulated node (an
# agent with --inventory), tenants A (tenant-amber) and B (tenant-cobalt)
# with users, classes, running jobs, a model served through the gateway and
# some usage; then tests/console/console.mjs drives Debian's Chromium
# headless through playwright-core.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_console.sh
#   CONSOLE_SHOTS=/some/dir  keeps the screenshots there (else they stay in the
#                            test's temporary folder, kept with E2E_KEEP=1)
#
# Checked here: the overview's quota, allocation, availability (a project
# bounded by its tenant), live jobs with reasons, models, usage and alarms
# parts; who may read it (tenant readers; project members only their
# project's; another tenant, ops and no token refused, with nothing of A in
# the answers); the console's page and assets (headers, CSP, offline).  In the
# browser (console.mjs): A signs in by keyboard, reads the overview, submits a
# job through the form and sees its queue reason, reads the usage charts,
# creates a key; B walks every view and never sees A's names or figures; the
# platform admin (pasted token) lists tenants and reads the cluster map; a gang
# on two more nodes, an array and a waiting job on A's jobs page; reservations
# of both tenants and a maintenance window, each user seeing only its own.
#
# Skips (passing, with a message) only when /usr/bin/chromium is missing and
# cannot be installed (scripts/bootstrap.sh installs it).
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHROMIUM=/usr/bin/chromium
if [ ! -x "$CHROMIUM" ]; then
    note "$CHROMIUM is missing; trying scripts/bootstrap.sh"
    "$ROOT/scripts/bootstrap.sh" >"$E2E_TMP/bootstrap.log" 2>&1 || true
fi
if [ ! -x "$CHROMIUM" ]; then
    echo "SKIP $E2E_NAME: $CHROMIUM is missing and could not be installed (apt-get install chromium)" >&2
    done_testing
fi
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
if [ ! -d "$ROOT/tests/console/node_modules/playwright-core" ]; then
    "$ROOT/scripts/npm-deps.sh" >"$E2E_TMP/npm.log" 2>&1 || { _show npm "$E2E_TMP/npm.log"; fail "scripts/npm-deps.sh failed"; }
fi
SHOTS=${CONSOLE_SHOTS:-$E2E_TMP/shots}
mkdir -p "$SHOTS"

workload_bin
ln -s "$(command -v sleep)" "$BIN/wlsleep"

start_server --health-interval 1 --endpoint-allow 127.0.0.0/8  # the fake upstream is on loopback
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0

# ---------------------------------------------------------------- the fleet
gp -o json jointoken create --ttl 600
JT=$(jout .token)
cat >"$E2E_TMP/inv.json" <<'EOF'
{"nodes":[{"name":"sim-console","address":"127.0.0.1","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":3,"mode":"whole"},
          {"model":"L40S","memory_gib":48,"count":1,"mode":"shared"}]}]}
EOF
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv.json" \
    --state-dir "$E2E_TMP/agent" --interval 1 --grace 1 >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
E2E_PIDS+=($!)
node_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 1 ]
}
poll 10 node_ready || fail "the simulated node did not register"
_pass
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create l40s.q --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0

# ---------------------------------------------------------------- tenants, users
api POST /api/v1/tenants '{"name":"tenant-amber","display_name":"Amber Research Lab"}'
assert_status 201
api POST /api/v1/tenants '{"name":"tenant-cobalt","display_name":"Cobalt Vision"}'
assert_status 201
api POST /api/v1/tenants/tenant-amber/projects '{"name":"amber-train"}'
assert_status 201
api POST /api/v1/tenants/tenant-amber/projects '{"name":"amber-eval"}'
assert_status 201
api POST /api/v1/tenants/tenant-cobalt/projects '{"name":"cobalt-web"}'
assert_status 201
# A: at most 3 GPUs (amber-train's hold job takes 2, amber-eval's job 1), 777 CPUs,
# 4321 GiB: figures B must never see
api PUT /api/v1/tenants/tenant-amber/quota '{"gpus":3,"guaranteed_gpus":2,"cpus":777,"memory_gib":4321,"concurrent_jobs":20}'
assert_status 200
api PUT /api/v1/tenants/tenant-amber/projects/amber-train/quota '{"gpus":2,"cpus":700,"memory_gib":4321,"concurrent_jobs":20}'
assert_status 200
api PUT /api/v1/tenants/tenant-cobalt/quota '{"gpus":1,"cpus":16,"memory_gib":64}'
assert_status 200
mkuser() { # NAME PASSWORD ROLE TENANT [PROJECT]
    api POST /api/v1/users "{\"name\":\"$1\",\"password\":\"$2\"}"
    assert_status 201
    if [ -n "${5:-}" ]; then api PUT "/api/v1/tenants/$4/projects/$5/members/$1" "{\"role\":\"$3\"}"
    else api PUT "/api/v1/tenants/$4/members/$1" "{\"role\":\"$3\"}"; fi
    assert_status 200
}
login() { # NAME PASSWORD -> token on stdout
    curl -s "$URL/api/v1/login" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\",\"password\":\"$2\"}" | jq -r .token
}
mkuser amber-alice 'Amber-Secret-9' tenant-admin tenant-amber
mkuser amber-pat 'Amber-Pat-Secret-9' project-user tenant-amber amber-train
mkuser cobalt-bob 'Cobalt-Secret-9' tenant-admin tenant-cobalt
api POST /api/v1/users '{"name":"ops-olga","password":"Ops-Secret-9"}'
assert_status 201
api PUT /api/v1/members/ops-olga '{"role":"ops-engineer"}'
assert_status 200
ALICE=$(login amber-alice 'Amber-Secret-9')
PAT=$(login amber-pat 'Amber-Pat-Secret-9')
BOB=$(login cobalt-bob 'Cobalt-Secret-9')
OLGA=$(login ops-olga 'Ops-Secret-9')
assert_ne "$ALICE" null "alice's token"
assert_ne "$BOB" null "bob's token"

# ---------------------------------------------------------------- jobs, a model, tokens
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/tenant-amber/projects/amber-train/jobs \
    "{\"name\":\"amber-hold\",\"class\":\"a100.1x\",\"units\":2,\"command\":[\"sh\",\"-c\",\"i=0; while [ \$i -lt 300 ]; do echo tick-\$i; i=\$((i+1)); $BIN/wlsleep 1; done\"]}"
assert_status 201
AJOB=$(jq -r .id "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/tenant-amber/projects/amber-eval/jobs \
    "{\"name\":\"amber-eval-job\",\"class\":\"a100.1x\",\"command\":[\"$BIN/wlsleep\",\"300\"]}"
assert_status 201
EJOB=$(jq -r .id "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $BOB" api POST /api/v1/tenants/tenant-cobalt/projects/cobalt-web/jobs \
    "{\"name\":\"cobalt-run\",\"class\":\"l40s.q\",\"command\":[\"$BIN/wlsleep\",\"300\"]}"
assert_status 201
BJOB=$(jq -r .id "$BODY_FILE")
running() {
    AUTH_HEADER="Authorization: Bearer $ADMIN" api GET "/api/v1/tenants/$1/projects/$2/jobs/$3"
    [ "$(jq -r .state "$BODY_FILE")" == running ]
}
poll 15 running tenant-amber amber-train "$AJOB" || fail "amber-hold did not start: $(cat "$BODY_FILE")"
poll 15 running tenant-amber amber-eval "$EJOB" || fail "amber-eval-job did not start: $(cat "$BODY_FILE")"
poll 15 running tenant-cobalt cobalt-web "$BJOB" || fail "cobalt-run did not start: $(cat "$BODY_FILE")"
_pass

node "$ROOT/tests/gateway/upstream.mjs" --port 0 --name console --model amber-llm >"$E2E_TMP/upstream.out" 2>&1 &
E2E_PIDS+=($!)
poll 10 grep -q '^listening' "$E2E_TMP/upstream.out" || fail "the fake upstream did not start"
UPORT=$(awk '/^listening/ {print $2}' "$E2E_TMP/upstream.out")
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/tenant-amber/models '{"name":"amber-llm"}'
assert_status 201
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/tenant-amber/models/amber-llm/endpoints \
    "{\"url\":\"http://127.0.0.1:$UPORT/v1\",\"accelerator\":\"A100-80GB\"}"
assert_status 201
AUTH_HEADER="Authorization: Bearer $ALICE" api POST /api/v1/tenants/tenant-amber/projects/amber-train/keys \
    '{"name":"amber-key","models":["amber-llm"]}'
assert_status 201
AKEY=$(jq -r .key "$BODY_FILE")
# a long prompt, so A's token figure is large and distinctive
PROMPT=$(printf 'amber words %.0s' $(seq 1 420))
chat() {
    curl -s -o "$E2E_TMP/chat.json" -w '%{http_code}' "$URL/v1/chat/completions" \
        -H "Authorization: Bearer $AKEY" -H 'Content-Type: application/json' \
        -d "{\"model\":\"amber-llm\",\"messages\":[{\"role\":\"user\",\"content\":\"$PROMPT\"}]}"
}
served() { [ "$(chat)" == 200 ]; }
poll 15 served || fail "the model did not answer through the gateway: $(cat "$E2E_TMP/chat.json")"
assert_eq "$(chat)" 200 "a second chat"
sleep 1.5 # some card-hours accrue

# ---------------------------------------------------------------- the overview API
note "tenant overview"
AUTH_HEADER="Authorization: Bearer $ALICE" api GET /api/v1/tenants/tenant-amber/overview
assert_status 200
cp "$BODY_FILE" "$E2E_TMP/ov-amber.json"
assert_json .tenant tenant-amber
assert_json .display_name "Amber Research Lab"
assert_json .quota.cpus.limit 777
assert_json .quota.cpus.used 3
assert_json .quota.cpus.available 774
assert_json .quota.gpus.used 3
assert_json .quota.gpus.available 0
assert_json .quota.memory_gib.limit 4321
assert_json .quota.concurrent_jobs.used 2
assert_json '.quota.gpu_memory_gib.used' 240
assert_json '.quota.class_gpus["a100.1x"].used' 3
assert_json '.quota.card_hours_month.limit' null
assert_json '.quota.card_hours_month.used > 0' true
assert_json .jobs.running 2
assert_json '[.jobs.items[].name] | sort | join(",")' amber-eval-job,amber-hold
assert_json '[.projects[] | select(.name == "amber-train") | .gpus][0]' 2
assert_json '.models[0].name' amber-llm
assert_json '.models[0].endpoints' 1
assert_json '.usage.tokens > 1000' true
assert_json '.usage.requests >= 2' true
assert_json '.usage.card_hours > 0' true
assert_json '.alarms.open' 0
assert_json '.omitted | length' 0
# what A holds now by vendor and form, and the month's card-hours by vendor (all NVIDIA here)
assert_json '[.accelerators[] | "\(.vendor):\(.form)"] | unique | join(",")' nvidia:whole
assert_json '[.accelerators[].gpus] | add' 3
assert_json '[.usage.by_vendor[].vendor] | join(",")' nvidia
ATOKENS=$(jq -r .usage.tokens "$E2E_TMP/ov-amber.json")
assert_file_lacks "$E2E_TMP/ov-amber.json" cobalt

note "project overview: bounded by the tenant; members of the project only"
AUTH_HEADER="Authorization: Bearer $PAT" api GET /api/v1/tenants/tenant-amber/projects/amber-train/overview
assert_status 200
assert_json .project amber-train
assert_json .quota.gpus.limit 2
assert_json .quota.gpus.available 0
assert_json .quota.cpus.limit 700
assert_json .quota.cpus.available 698
assert_json .quota.cpus.bounded_by null
assert_json '.quota.memory_gib | [.limit, .used, .available, .bounded_by] | map(tostring) | join(",")' "4321,2,4318,tenant"
assert_json '.models' null
assert_json '.jobs.running' 1
assert_json '[.jobs.items[].project] | unique | join(",")' amber-train
assert_json '.usage.tokens > 1000' true
AUTH_HEADER="Authorization: Bearer $PAT" api GET /api/v1/tenants/tenant-amber/overview
assert_status 403
AUTH_HEADER="Authorization: Bearer $ALICE" api GET /api/v1/tenants/tenant-amber/projects/amber-train/overview
assert_status 200

note "other tenants, ops and anonymous callers see nothing"
for p in /api/v1/tenants/tenant-amber/overview /api/v1/tenants/tenant-amber/projects/amber-train/overview; do
    AUTH_HEADER="Authorization: Bearer $BOB" api GET "$p"
    assert_status 404
    assert_file_lacks "$BODY_FILE" amber
    AUTH_HEADER="Authorization: Bearer $OLGA" api GET "$p"
    assert_status 404
    AUTH_HEADER= api GET "$p"
    assert_status 401
done
AUTH_HEADER="Authorization: Bearer $BOB" api GET /api/v1/tenants/tenant-cobalt/overview
assert_status 200
assert_json .quota.gpus.used 0.25
assert_json .jobs.running 1
assert_file_lacks "$BODY_FILE" amber
AUTH_HEADER="Authorization: Bearer $ADMIN" api GET /api/v1/tenants/nope/overview
assert_status 404
AUTH_HEADER="Authorization: Bearer $ADMIN" api GET /api/v1/tenants/tenant-amber/overview
assert_status 200
assert_json .quota.cpus.limit 777

note "the CLI: gpupool tenant|project overview"
as "$ALICE" tenant overview tenant-amber
assert_rc 0
assert_file_contains "$OUT_FILE" "tenant tenant-amber"
assert_match "$(grep -E '^  cpus ' "$OUT_FILE")" '^  cpus +777 +3 +774$' "the cpus row"
assert_file_contains "$OUT_FILE" "amber-hold"
assert_file_contains "$OUT_FILE" "jobs: 2 running"
as "$PAT" -o json project overview amber-train --tenant tenant-amber
assert_rc 0
assert_eq "$(jout .quota.memory_gib.bounded_by)" tenant "project overview in JSON"
as "$BOB" tenant overview tenant-amber
assert_denied 404
as "$PAT" tenant overview tenant-amber
assert_denied 403

note "the console's files"
api_raw GET /
assert_status 200
assert_header Content-Type '^text/html'
assert_header Content-Security-Policy "^default-src 'none'; script-src 'self'; style-src 'self'"
assert_header X-Frame-Options '^DENY$'
assert_file_contains "$BODY_FILE" '<script src="/console/app.js" defer></script>'
assert_file_lacks "$BODY_FILE" 'http://'
assert_file_lacks "$BODY_FILE" 'https://'
api_raw GET /console/app.js
assert_status 200
assert_header Content-Type '^text/javascript'
assert_file_lacks "$BODY_FILE" 'innerHTML ='
assert_file_lacks "$BODY_FILE" 'eval('
api_raw GET /console/app.css
assert_status 200
assert_header Content-Type '^text/css'
api_raw GET /console/missing.js
assert_status 404
api_raw GET /console/../../etc/passwd --path-as-is
assert_ne "$STATUS" 200 "no way out of the embedded files"

# ---------------------------------------------------------------- gangs, arrays, dependencies
# two more simulated nodes (a second agent, joining now: the jobs above are placed already) for
# a job that spans nodes in amber's project amber-dist; an array and a job that waits for both
gp -o json jointoken create --ttl 600 --uses 2
JT2=$(jout .token)
cat >"$E2E_TMP/inv2.json" <<'EOF2'
{"nodes":[{"name":"sim-gang-a","address":"127.0.0.1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":1,"mode":"whole"}]},
 {"name":"sim-gang-b","address":"127.0.0.1","cpus":16,"memory_gib":64,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":1,"mode":"whole"}]}]}
EOF2
GPUPOOL_JOIN_TOKEN=$JT2 "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/inv2.json" \
    --state-dir "$E2E_TMP/agent2" --interval 1 --grace 1 >"$E2E_TMP/agent2.out" 2>"$E2E_TMP/agent2.err" </dev/null &
E2E_PIDS+=($!)
nodes_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 3 ]
}
poll 10 nodes_ready || fail "the second agent's nodes did not register"
_pass
# (a guarantee of a class amber runs nothing of, and one in a pool that does not exist: the
# overview lists them, nothing else moves)
api PUT /api/v1/tenants/tenant-amber/quota '{"gpus":5,"guaranteed_gpus":2,"cpus":777,"memory_gib":4321,"concurrent_jobs":20,"class_guarantees":{"h100.1x":{"guaranteed_gpus":1,"kept_gpus":1}},"pool_guarantees":{"nowhere":{"guaranteed_gpus":1}}}'
assert_status 200
api POST /api/v1/tenants/tenant-amber/projects '{"name":"amber-dist"}'
assert_status 201
DP=/api/v1/tenants/tenant-amber/projects/amber-dist
AUTH_HEADER="Authorization: Bearer $ALICE" api POST "$DP/jobs" \
    "{\"name\":\"dist-train\",\"class\":\"a100.1x\",\"nodes\":2,\"units_per_node\":1,\"command\":[\"$BIN/wlsleep\",\"300\"]}"
assert_status 201
GJOB=$(jq -r .id "$BODY_FILE")
poll 15 running tenant-amber amber-dist "$GJOB" || fail "dist-train did not start: $(cat "$BODY_FILE")"
_pass
AUTH_HEADER="Authorization: Bearer $ALICE" api POST "$DP/jobs" \
    "{\"name\":\"dist-sweep\",\"class\":\"a100.1x\",\"array\":\"0-5%2\",\"command\":[\"$BIN/wlsleep\",\"1\"]}"
assert_status 201
ARR=$(jq -r .id "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $ALICE" api GET "$DP/jobs?array=$ARR"
TASK0=$(jq -r '[.items[] | select(.array.index == 0)][0].id' "$BODY_FILE")
AUTH_HEADER="Authorization: Bearer $ALICE" api POST "$DP/jobs" \
    "{\"name\":\"dist-eval\",\"class\":\"a100.1x\",\"after\":[\"$GJOB:ok\",\"$TASK0:any\"],\"command\":[\"$BIN/wlsleep\",\"1\"]}"
assert_status 201
AUTH_HEADER="Authorization: Bearer $ALICE" api GET "$DP/jobs/$GJOB"
assert_json '[.bindings[].node] | sort | join(",")' "sim-gang-a,sim-gang-b"

# ---------------------------------------------------------------- the browser
# costs carry the rate card's currency (no prices: every figure above stays as it is)
echo '{"effective_from":"2020-01-01T00:00:00Z","currency":"CHF","note":"console test"}' >"$E2E_TMP/card.json"
as "$ADMIN" ratecard create "$E2E_TMP/card.json"
assert_rc 0
# a second vendor joins as an agent does (the cluster map shows each card's vendor)
gp -o json jointoken create --ttl 600
assert_rc 0
AMD_JT=$(jout .token)
AUTH_HEADER='' api POST /api/v1/agent/register "{\"join_token\":\"$AMD_JT\",\"node\":{\"name\":\"sim-amd\",\"cpus\":8,\"memory_gib\":64,\"gpus\":[
  {\"uuid\":\"GPU-console-amd-0\",\"index\":0,\"model\":\"AMD Instinct MI300X\",\"memory_mib\":196608,\"vendor\":\"amd\",\"driver_version\":\"6.8.5\",\"stack\":{\"rocm\":\"6.2.0\"}},
  {\"uuid\":\"GPU-console-amd-1\",\"index\":1,\"model\":\"AMD Instinct MI300X\",\"memory_mib\":196608,\"vendor\":\"amd\",\"driver_version\":\"6.8.5\",\"stack\":{\"rocm\":\"6.2.0\"}}]}}"
assert_status 201
# reservations: amber's (named nodes, and a recurring count), cobalt's, and ops' maintenance
# window on sim-amd; each tenant's user sees its own, ops the window (amber's only as "a
# reservation of a tenant" on the node), the platform admin all
gp reservation create amber-window --tenant tenant-amber --project amber-train --nodes sim-amd \
    --start +3d --end +74h --description "amber's long run"
assert_rc 0
gp reservation create amber-count --tenant tenant-amber --pool default --class a100.1x --count 1 \
    --start +2d --end +49h --recurrence daily --until +5d
assert_rc 0
gp reservation create cobalt-slot --tenant tenant-cobalt --pool default --class l40s.q --count 1 \
    --start +1d --end +25h
assert_rc 0
as "$OLGA" reservation create amd-firmware --maintenance --nodes sim-amd --start +1d --end +26h \
    --drain-before 600
assert_rc 0
note "the console in Chromium (screenshots in $SHOTS)"
jq -n --arg url "$URL" --arg shots "$SHOTS" --arg admin "$ADMIN" --arg tokens "$ATOKENS" \
    --arg ajob "$AJOB" --arg key "${AKEY:0:12}" '{
  url: $url, shots: $shots, chromium: "/usr/bin/chromium", admin_token: $admin,
  node: "sim-console", gpus: 8, currency: "CHF",
  ops: {user: "ops-olga", password: "Ops-Secret-9"},
  dist: {project: "amber-dist", gang: "dist-train", array: "dist-sweep", after: "dist-eval",
         gang_nodes: ["sim-gang-a", "sim-gang-b"]},
  vendors: {"sim-console": "nvidia", "sim-amd": "amd"},
  a: {user: "amber-alice", password: "Amber-Secret-9", tenant: "tenant-amber", project: "amber-train",
      hold_job: "amber-hold", model: "amber-llm", cpus: 777},
  b: {user: "cobalt-bob", password: "Cobalt-Secret-9", tenant: "tenant-cobalt", project: "cobalt-web"},
  markers: ["tenant-amber", "amber", "Amber Research Lab", "amber-alice", "amber-pat", $ajob, $key],
  figures: [777, 4321, 4318, 774, ($tokens | tonumber)]
}' >"$E2E_TMP/console.json"
timeout 120 node "$ROOT/tests/console/console.mjs" "$E2E_TMP/console.json" >"$E2E_TMP/console.out" 2>"$E2E_TMP/console.err"
CRC=$?
cat "$E2E_TMP/console.out" >&2
if [ "$CRC" != 0 ]; then
    _show "console.mjs stderr" "$E2E_TMP/console.err"
    fail "the browser test failed (exit $CRC)"
fi
NCHECKS=$(sed -n 's/^console: \([0-9]*\) checks passed, 0 failed$/\1/p' "$E2E_TMP/console.out")
[ -n "$NCHECKS" ] || fail "console.mjs did not report its checks"
E2E_PASSED=$((E2E_PASSED + NCHECKS))
assert_eq "$(grep -c '^screenshot ' "$E2E_TMP/console.out")" "$(find "$SHOTS" -name '*.png' | wc -l)" "screenshots saved"
if [ -n "${CONSOLE_SHOTS:-}" ] || [ "${E2E_KEEP:-0}" == 1 ]; then note "screenshots kept in $SHOTS"; fi

note "the job the browser submitted, through the API"
AUTH_HEADER="Authorization: Bearer $ALICE" api GET /api/v1/tenants/tenant-amber/projects/amber-train/overview
assert_json '[.jobs.items[] | select(.name == "amber-console-job") | .state][0]' queued
assert_json '[.jobs.items[] | select(.name == "amber-console-job") | .reason | test("quota")][0]' true

stop_server
done_testing
