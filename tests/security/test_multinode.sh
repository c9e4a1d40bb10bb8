#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2154,SC2317  # commands expand on the node; start_server takes optional flags; TOK_* are set by printf -v; poll calls helpers indirectly
#
# test_multinode.sh - jobs that span nodes, as an attacker would try them
# (issue 37 items 1-2; docs/workloads.md, "Distributed jobs"; docs/security.md).
# A real server and one agent simulating nodes a, b and c (each node its own
# account), tenants red and blue.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_multinode.sh
#
# Checked:
# - node labels (the topology jobs are placed by) are ops' alone: red's
#   project-user and viewer, blue's project-user, and a node's own agent
#   account cannot set one (404 / 403), and nothing changes;
# - the rendezvous port (MASTER_PORT) of red's 2 x 1 job is rank 0's node's
#   word alone, once: rank 1's node claiming another port, rank 0's node
#   claiming a second one, a node the job is not on (c) claiming one, a port
#   that is not one - none changes the port the ranks were given, each refused
#   report is audited (denied, by the node's account, in red's trail), and the
#   job runs on;
# - a name the job left in its folder where the agent writes the hostfile (a
#   link to another file) is replaced, never followed: the file it pointed to
#   is untouched, the hostfile is the runner's own regular file.
. "$(dirname "$0")/../e2e/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/gsleep"
cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[
 {"name":"a","address":"127.0.0.1","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]},
 {"name":"b","address":"127.0.0.1","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]},
 {"name":"c","address":"127.0.0.1","cpus":8,"memory_gib":32,
  "gpus":[{"model":"L4","memory_gib":24,"count":1,"mode":"whole"}]}]}
EOF
for u in ru rv bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
start_agent
STATE=$E2E_TMP/agent-state
for n in a b c; do
    printf -v "TOK_$n" '%s' "$(cat "$STATE/$n.token")"
done
gp class create l4.1x --form whole --models L4 --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create "$t"
    assert_rc 0
    gp project create p --tenant "$t" --class development
    assert_rc 0
done
user() {
    local name=$1 role=$2 tenant=$3
    run_in "$E2E_TMP/pw.$name" --server "$URL" --token "$ADMIN" user create "$name"
    assert_rc 0
    gp member grant "$name" "$role" --tenant "$tenant" --project p
    assert_rc 0
    run_in "$E2E_TMP/pw.$name" --server "$URL" login "$name"
    assert_rc 0
    printf -v "TOK_$name" '%s' "$(head -n 1 "$OUT_FILE")"
}
user ru project-user red
user rv viewer red
user bu project-user blue
R=(--tenant red --project p)

note "1. node labels are ops' alone"
for who in ru rv bu; do
    tok=TOK_$who
    as "${!tok}" node label a rack=evil
    assert_denied 404
done
for n in a c; do
    tok=TOK_$n
    AUTH_HEADER="Authorization: Bearer ${!tok}" api PATCH /api/v1/nodes/a/labels \
        '{"labels":{"rack":"evil"}}'
    [ "$STATUS" == 403 ] || [ "$STATUS" == 404 ] || fail "node $n's agent labelled node a: HTTP $STATUS"
    _pass
done
gp -o json node show a
assert_json '.labels.rack // "none"' none "$OUT_FILE"
assert_eq "$(db_sql "$DATA" "SELECT topo_rack FROM nodes WHERE name = 'a'" | tr -d ' \n')" "" \
    "node a's rack after the refusals"

note "2. the rendezvous port is rank 0's node's word alone, once"
gp node cordon c
assert_rc 0
as "$TOK_ru" -o json job submit g "${R[@]}" --class l4.1x --nodes 2 -- \
    sh -c 'echo "rank=$NODE_RANK port=$MASTER_PORT"; exec '"$BIN"'/gsleep 300'
assert_rc 0
G=$(jout .id)
gp node uncordon c
assert_rc 0
port_of() { db_sql "$DATA" "SELECT COALESCE(master_port, 0) FROM jobs WHERE id = '$G'" | tr -d ' \n'; }
rendezvous() { [ "$(port_of)" != 0 ]; }
poll 30 rendezvous || fail "rank 0 did not report its port"
_pass
PORT=$(port_of)
logged() {
    as "$TOK_ru" -o json job logs "$G" "${R[@]}"
    [[ "$(jout .log)" == *"rank=1 port=$PORT"* && "$(jout .log)" == *"rank=0 port=$PORT"* ]]
}
poll 20 logged || fail "the ranks did not start with port $PORT: $(jout .log)"
_pass
rank_node() {
    db_sql "$DATA" "SELECT node FROM bindings WHERE job_id = '$G' AND end_us IS NULL AND unit = $1" |
        tr -d ' \n'
}
placement() {
    db_sql "$DATA" "SELECT id FROM bindings WHERE job_id = '$G' AND end_us IS NULL AND unit = $1" |
        tr -d ' \n'
}
N0=$(rank_node 0) N1=$(rank_node 1) PL0=$(placement 0) PL1=$(placement 1)
assert_eq "$N0$N1" ab "the job's nodes, rank order"
claim() { # NODE PLACEMENT PORT-JSON: NODE's account reports the job running with that port
    local tok=TOK_$1
    AUTH_HEADER="Authorization: Bearer ${!tok}" api POST /api/v1/agent/heartbeat \
        "{\"node\":\"$1\",\"gpus\":[],\"workloads\":[{\"job\":\"$G\",\"placement\":\"$2\",\"state\":\"running\",\"log\":\"FORGED-$1\",\"ports\":[],\"master_port\":$3}]}"
    assert_status 200
}
claim "$N1" "$PL1" 31337     # rank 1's node: not rank 0
claim "$N0" "$PL0" 31338     # rank 0's node: a second port
claim "$N0" "$PL0" 0         # not a port
claim "$N0" "$PL0" 70000
claim "$N0" "$PL0" '"29999"'
claim c "$PL0" 31339         # a node the job is not on
sleep 1
assert_eq "$(port_of)" "$PORT" "the job's port after the forged claims"
as "$TOK_ru" -o json job show "$G" "${R[@]}"
assert_json .state running "$OUT_FILE"
gp -o json audit list --tenant red --action job.rendezvous --result denied
assert_json '[.items[] | .actor] | sort | join(",")' \
    "agent-$N0,agent-$N0,agent-$N0,agent-$N0,agent-$N1" "$OUT_FILE"
assert_json '[.items[] | .summary.master_port | tostring] | sort | join(",")' \
    '0,29999,31337,31338,70000' "$OUT_FILE"
gp -o json audit list --action job.report --result denied
assert_json '[.items[] | select(.target.id == "'"$G"'") | .actor] | join(",")' agent-c "$OUT_FILE"
gp -o json audit list --tenant red --action job.rendezvous --result ok
assert_json '[.items[] | .actor] | join(",")' "agent-$N0" "$OUT_FILE"
as "$TOK_ru" job cancel "$G" "${R[@]}"
assert_rc 0

note "3. a name left where the hostfile goes is replaced, never followed"
for n in a b c; do
    gp node cordon "$n"
    assert_rc 0
done
as "$TOK_ru" -o json job submit h "${R[@]}" --class l4.1x --nodes 2 -- "$BIN/gsleep" 300
assert_rc 0
H=$(jout .id)
printf 'untouched\n' >"$E2E_TMP/victim"
chmod 0666 "$E2E_TMP/victim"
for n in a b; do
    mkdir -p "$STATE/work/$H-$n"
    ln -s "$E2E_TMP/victim" "$STATE/work/$H-$n/hostfile"
done
for n in a b; do
    gp node uncordon "$n"
    assert_rc 0
done
h_running() {
    as "$TOK_ru" -o json job show "$H" "${R[@]}"
    [ "$(jout .state)" == running ] && [ -n "$(db_sql "$DATA" "SELECT master_port FROM jobs WHERE id = '$H'" | tr -d ' \n')" ]
}
poll 30 h_running || fail "the job did not start: $(jout .reason)"
_pass
wrote() { [ -f "$STATE/work/$H-a/hostfile" ] && [ -f "$STATE/work/$H-b/hostfile" ] &&
    [ ! -L "$STATE/work/$H-a/hostfile" ] && [ ! -L "$STATE/work/$H-b/hostfile" ]; }
poll 20 wrote || fail "the hostfiles were not written"
_pass
assert_eq "$(cat "$E2E_TMP/victim")" untouched "the file the links pointed to"
for n in a b; do
    assert_eq "$(cat "$STATE/work/$H-$n/hostfile")" "$(printf '127.0.0.1 slots=1\n127.0.0.1 slots=1')" \
        "node $n's hostfile"
    assert_eq "$(stat -c '%u %a' "$STATE/work/$H-$n/hostfile")" "$(id -u) 644" \
        "node $n's hostfile's owner and mode"
done
as "$TOK_ru" job cancel "$H" "${R[@]}"
assert_rc 0

stop_server
done_testing
