#!/usr/bin/env bash
#
# test_gpu_identity.sh - issue 33, item 3: a GPU belongs to the node that
# registered it.  A real server; the agents' calls are made by hand, as an
# attacker holding a node's credential would make them.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_gpu_identity.sh
#
# Checked:
# - node evil (joined with a join token of its own) reports node victim's card
#   UUID in its hardware report: the card stays on victim (it was moved to
#   evil before), the rest of evil's report applies, the heartbeat carrying it
#   (with the card's signals) still answers 200; a denied "node.report" event
#   by agent-evil names the card and its holder; a critical "identity" alarm is
#   raised;
# - the same card in a new node's registration (node thief): registered
#   without it, refused_gpus 1, audited and alarmed the same way;
# - a slice UUID of victim's card inside another card of evil's: that card is
#   refused too;
# - `gpupool gpu move UUID --to NODE`: 404 to a tenant role, 403 to a
#   security-admin, 409 (audited) while victim is in service, 400 for an
#   unknown node; after `node drain victim` a platform-admin's move is 200,
#   audited "gpu.move" with both nodes; then evil's report of the card is
#   accepted and its heartbeats update the card's signals.
. "$(dirname "$0")/../e2e/lib.sh"

start_server
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0

V_GPU=GPU-11111111-victim-0001
V_SLICE=MIG-11111111-victim-0001-s0
E_GPU=GPU-22222222-evil-0001
E_GPU2=GPU-22222222-evil-0002

# gpu_json UUID MODEL [SLICE]: one card of a report
gpu_json() {
    local sl=""
    [ -n "${3:-}" ] && sl=",\"mig_capable\":true,\"mig_mode\":\"enabled\",\"slices\":[{\"uuid\":\"$3\",\"profile\":\"3g.40gb\",\"memory_mib\":40000}]"
    printf '{"uuid":"%s","index":0,"model":"%s","memory_mib":81920%s}' "$1" "$2" "$sl"
}
# report NAME GPU-JSON...: a node's hardware report
report() {
    local name=$1 gpus
    shift
    gpus=$(IFS=,; echo "$*")
    printf '{"name":"%s","hostname":"%s","cpus":8,"memory_gib":32,"source":"inventory","gpus":[%s]}' \
        "$name" "$name" "$gpus"
}
# join NAME REPORT: register with a fresh join token -> NODE_TOKEN
join() {
    gp -o json jointoken create --node "$1"
    assert_rc 0
    AUTH_HEADER='' api POST /api/v1/agent/register "{\"join_token\":\"$(jout .token)\",\"node\":$2}"
    assert_status 201
    NODE_TOKEN=$(jq -r .token "$BODY_FILE")
}
# beat NODE TOKEN [REPORT] UUID...: a heartbeat with the cards' signals (and the report)
beat() {
    local node=$1 tok=$2 rep=$3 u gpus="" body
    shift 3
    for u in "$@"; do gpus+="${gpus:+,}{\"uuid\":\"$u\",\"signals\":{\"temperature_c\":41}}"; done
    body="{\"node\":\"$node\",\"gpus\":[$gpus],\"workloads\":[]"
    [ -n "$rep" ] && body+=",\"report\":$rep"
    AUTH_HEADER="Authorization: Bearer $tok" api POST /api/v1/agent/heartbeat "$body}"
}
gpu_node() {
    gp -o json gpu show "$1"
    assert_rc 0
    jout .node
}
denied_reports() {
    gp -o json audit list --action node.report --result denied
    assert_rc 0
    jout "[.items[] | select(.target.id == \"$1\" and .actor == \"$2\")] | length"
}
identity_alarms() {
    gp -o json alarm list
    assert_rc 0
    jout "[.items[] | select(.kind == \"identity\" and .gpu == \"$1\" and .node == \"$2\")] | length"
}

note "victim registers its card; evil its own"
join victim "$(report victim "$(gpu_json "$V_GPU" "NVIDIA H100 80GB HBM3" "$V_SLICE")")"
V_TOK=$NODE_TOKEN
join evil "$(report evil "$(gpu_json "$E_GPU" "NVIDIA H100 80GB HBM3")")"
E_TOK=$NODE_TOKEN
beat victim "$V_TOK" "" "$V_GPU"
assert_status 200
assert_eq "$(gpu_node "$V_GPU")" victim "victim's card"

note "evil reports victim's card: refused, audited, alarmed; the rest of its report applies"
EVIL_REPORT=$(report evil "$(gpu_json "$E_GPU" "NVIDIA H100 80GB HBM3")" "$(gpu_json "$V_GPU" "NVIDIA H100 80GB HBM3")")
EVIL_REPORT=${EVIL_REPORT/\"hostname\":\"evil\"/\"hostname\":\"evil-2\"}
beat evil "$E_TOK" "$EVIL_REPORT" "$E_GPU" "$V_GPU"
assert_status 200
assert_eq "$(gpu_node "$V_GPU")" victim "the card after evil's report"
assert_eq "$(jout .health)" healthy "the card's health (not marked failed by anyone)"
gp -o json node show evil
assert_json .hostname evil-2 "$OUT_FILE"
assert_json ".gpus | length" 1 "$OUT_FILE"
assert_eq "$(denied_reports "$V_GPU" agent-evil)" 1 "denied node.report events by agent-evil on the card"
gp -o json audit list --action node.report --result denied
assert_contains "$(jout '.items[0].summary | tostring')" "victim" "the denied report names the holder"
assert_eq "$(identity_alarms "$V_GPU" evil)" 1 "identity alarms for the card"
gp -o json alarm list
assert_eq "$(jout '[.items[] | select(.kind == "identity")][0].severity')" critical "the alarm's severity"
# evil's later heartbeats (the agent keeps sending the card's signals) still work
beat evil "$E_TOK" "" "$E_GPU" "$V_GPU"
assert_status 200
assert_eq "$(gpu_node "$V_GPU")" victim "the card after evil's next heartbeat"

note "a new node registering with victim's card: joined without it"
join thief "$(report thief "$(gpu_json "$V_GPU" "NVIDIA H100 80GB HBM3")")"
assert_json .refused_gpus[0].gpu "$V_GPU"
assert_json .refused_gpus[0].held_by victim
assert_eq "$(gpu_node "$V_GPU")" victim "the card after thief's registration"
assert_eq "$(denied_reports "$V_GPU" agent-thief)" 1 "denied node.report by agent-thief"
assert_eq "$(identity_alarms "$V_GPU" thief)" 1 "identity alarm for thief"

note "victim's slice UUID on another card of evil's: that card is refused"
beat evil "$E_TOK" "$(report evil "$(gpu_json "$E_GPU" "NVIDIA H100 80GB HBM3")" \
    "$(gpu_json "$E_GPU2" "NVIDIA H100 80GB HBM3" "$V_SLICE")")" "$E_GPU"
assert_status 200
gp -o json gpu show "$E_GPU2"
assert_rc 1
gp -o json gpu show "$V_GPU"
assert_eq "$(jout '.slices[0].uuid')" "$V_SLICE" "victim's slice"
assert_eq "$(denied_reports "$E_GPU2" agent-evil)" 1 "denied node.report on the card with the slice"

note "gpu move: an ops action, only after a drain"
printf 'sec-Secret-9\n' >"$E2E_TMP/pw.sec"
printf 'ten-Secret-9\n' >"$E2E_TMP/pw.ten"
printf 'plat-Secret-9\n' >"$E2E_TMP/pw.plat"
run_in "$E2E_TMP/pw.sec" --server "$URL" --token "$ADMIN" user create sec
assert_rc 0
run_in "$E2E_TMP/pw.plat" --server "$URL" --token "$ADMIN" user create plat
assert_rc 0
gp member grant plat platform-admin
assert_rc 0
run_in "$E2E_TMP/pw.ten" --server "$URL" --token "$ADMIN" user create ten
assert_rc 0
gp member grant sec security-admin
assert_rc 0
gp tenant create red
assert_rc 0
gp member grant ten tenant-admin --tenant red
assert_rc 0
run_in "$E2E_TMP/pw.sec" --server "$URL" login sec
assert_rc 0
SEC=$(head -n 1 "$OUT_FILE")
run_in "$E2E_TMP/pw.ten" --server "$URL" login ten
assert_rc 0
TEN=$(head -n 1 "$OUT_FILE")
run_in "$E2E_TMP/pw.plat" --server "$URL" login plat
assert_rc 0
PLAT=$(head -n 1 "$OUT_FILE")
as "$TEN" gpu move "$V_GPU" --to evil
assert_denied 404
as "$SEC" gpu move "$V_GPU" --to evil
assert_denied 403
gp gpu move "$V_GPU" --to evil
assert_denied 409
assert_contains "$(cat "$ERR_FILE")" "drain" "the refusal says what to do"
gp gpu move "$V_GPU" --to nosuch
assert_denied 400
gp gpu move "$V_GPU"
assert_rc 2
assert_eq "$(gpu_node "$V_GPU")" victim "the card after refused moves"
gp -o json audit list --action gpu.move
assert_rc 0
assert_eq "$(jout '[.items[] | "\(.actor) \(.result) \(.status)"] | sort | join(",")')" \
    "admin error 400,admin error 409,sec denied 403,ten denied 404" "refused moves audited"

gp node drain victim
assert_rc 0
gp gpu move "$V_GPU" --to victim
assert_denied 409
# a platform-admin (without ops-engineer) may move a card
as "$PLAT" -o json gpu move "$V_GPU" --to evil
assert_rc 0
assert_json .from victim "$OUT_FILE"
assert_json .node evil "$OUT_FILE"
assert_eq "$(gpu_node "$V_GPU")" evil "the card after the move"
gp -o json audit list --action gpu.move --result ok
assert_eq "$(jout '.items | length')" 1 "gpu.move events"
assert_eq "$(jout '.items[0].actor')" plat "the move's actor"
assert_contains "$(jout '.items[0].summary | tostring')" '"from":"victim"' "the move names the old node"
assert_contains "$(jout '.items[0].summary | tostring')" '"to":"evil"' "the move names the new node"

note "after the move evil's report of the card is accepted"
beat evil "$E_TOK" "$EVIL_REPORT" "$E_GPU" "$V_GPU"
assert_status 200
assert_eq "$(gpu_node "$V_GPU")" evil "the card after evil's report"
assert_eq "$(denied_reports "$V_GPU" agent-evil)" 1 "no new denied node.report"
assert_eq "$(identity_alarms "$V_GPU" evil)" 1 "no new identity alarm"
# victim's heartbeat naming the card now is victim's to lose: dropped, not an error
beat victim "$V_TOK" "" "$V_GPU"
assert_status 200
assert_eq "$(gpu_node "$V_GPU")" evil "the card after victim's heartbeat"

stop_server
done_testing
