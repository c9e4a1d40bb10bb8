#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters in single quotes
#
# test_reservations.sh - advance reservations and maintenance windows under attack
# (issue 36; docs/scheduling.md "Reservations"), on a real server with a simulated node:
#
# - Blue's roles (tenant-admin, project-user, viewer) probe red's reservation and a
#   maintenance window through every reservation route: the list never shows them, show /
#   update / delete answer 404 as for a name that does not exist, creating one for red, for
#   blue or for maintenance is 403; nothing of red's changes, no answer names it.
# - A blue job naming red's reservation is refused like one naming no reservation at all;
#   a blue job red's reservation keeps out is told "a reservation of another tenant" and job
#   explain names neither it nor its holder.
# - An ops-engineer sees and manages maintenance windows, never a tenant's reservation (404);
#   red's viewer sees red's, may not change it (403); each refused change is audited.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_reservations.sh
. "$(dirname "$0")/../e2e/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/asleep"
cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"n1","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":2,"mode":"whole"}]}]}
EOF
for u in ops ba bu bv rv; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t --class development
    assert_rc 0
done
user ops ops-engineer
user ba tenant-admin blue
user bu project-user blue p
user bv viewer blue
user rv viewer red
as_api() {
    local tok=$1
    shift
    AUTH_HEADER="Authorization: Bearer $tok" api "$@"
}
no_red() { # the last answer names nothing of red's
    ! grep -q 'secret-red\|maint-1\|"red"' "$BODY_FILE" || fail "leak: $(cat "$BODY_FILE")"
    _pass
}

# red's reservation of the node (all of it, from now on) and a maintenance window
gp -o json reservation create secret-red --tenant red --project p --nodes n1 --start +2s --end +1h \
    --description "red's launch"
assert_rc 0
BEFORE=$(jout .updated_at)
as "$TOK_ops" reservation create maint-1 --maintenance --nodes n1 --start +2h --end +3h
assert_rc 0
START=$(date -u -d '+1 hour' +%FT%TZ)
END=$(date -u -d '+2 hours' +%FT%TZ)

note "blue's roles probe red's reservation and the maintenance window"
for tok in "$TOK_ba" "$TOK_bu" "$TOK_bv"; do
    as_api "$tok" GET /api/v1/reservations
    assert_status 200
    assert_json '.items | length' 0
    no_red
    for r in secret-red maint-1 no-such; do
        as_api "$tok" GET "/api/v1/reservations/$r"
        assert_status 404
        no_red
        as_api "$tok" PATCH "/api/v1/reservations/$r" '{"end":"2099-01-01T00:00:00Z"}'
        assert_status 404
        no_red
        as_api "$tok" DELETE "/api/v1/reservations/$r"
        assert_status 404
        no_red
    done
    for holder in '"tenant":"red"' '"tenant":"blue"' '"maintenance":true' '"tenant":"nobody"'; do
        as_api "$tok" POST /api/v1/reservations \
            "{\"name\":\"grab\",$holder,\"nodes\":[\"n1\"],\"start\":\"$START\",\"end\":\"$END\"}"
        assert_status 403
        no_red
    done
done
gp -o json reservation show secret-red
assert_json '"\(.updated_at) \(.end == null)"' "$BEFORE false" "$OUT_FILE"
gp -o json reservation list
assert_json '[.items[].name] | sort | join(",")' "maint-1,secret-red" "$OUT_FILE"

note "a blue job naming red's reservation is refused as one naming none"
as_api "$TOK_bu" POST /api/v1/tenants/blue/projects/p/jobs \
    '{"name":"sneak","class":"a100.1x","reservation":"secret-red"}'
assert_status 400
m1=$(jq -r .error.message "$BODY_FILE")
as_api "$TOK_bu" POST /api/v1/tenants/blue/projects/p/jobs \
    '{"name":"sneak","class":"a100.1x","reservation":"no-such"}'
assert_status 400
m2=$(jq -r .error.message "$BODY_FILE")
assert_eq "${m1//secret-red/X}" "${m2//no-such/X}" "the two refusals"

note "a blue job red's reservation keeps out is not told whose it is"
as_api "$TOK_bu" POST /api/v1/tenants/blue/projects/p/jobs \
    '{"name":"kept","class":"a100.1x","command":["'"$BIN"'/asleep","60"]}'
assert_status 201
J=$(jq -r .id "$BODY_FILE")
kept() {
    as_api "$TOK_bu" GET "/api/v1/tenants/blue/projects/p/jobs/$J"
    [[ "$(jq -r .reason "$BODY_FILE")" == *"reserved: a reservation of another tenant"* ]]
}
poll 15 kept || fail "the job's reason: $(jq -r .reason "$BODY_FILE")"
_pass
no_red
as_api "$TOK_bu" GET "/api/v1/tenants/blue/projects/p/jobs/$J/explain"
assert_status 200
assert_json '.reservation.kind' another_tenant
assert_json '.reservation.name' null
no_red

note "ops: maintenance windows only; red's viewer: sees red's, changes nothing"
as_api "$TOK_ops" GET /api/v1/reservations
assert_json '[.items[].name] | join(",")' maint-1
as_api "$TOK_ops" GET /api/v1/reservations/secret-red
assert_status 404
no_red
as_api "$TOK_ops" PATCH /api/v1/reservations/maint-1 '{"description":"fans"}'
assert_status 200
as_api "$TOK_rv" GET /api/v1/reservations
assert_json '[.items[].name] | join(",")' secret-red
as_api "$TOK_rv" PATCH /api/v1/reservations/secret-red '{"end":"2099-01-01T00:00:00Z"}'
assert_status 403
as_api "$TOK_rv" DELETE /api/v1/reservations/secret-red
assert_status 403
gp -o json reservation show secret-red
assert_json .updated_at "$BEFORE" "$OUT_FILE"
gp -o json audit list --action reservation.update --result denied
assert_rc 0
assert_json '.items | length > 0' true "$OUT_FILE"
gp -o json audit list --action reservation.create --result denied
assert_json '.items | length >= 12' true "$OUT_FILE"

as_api "$TOK_bu" POST "/api/v1/tenants/blue/projects/p/jobs/$J/cancel"
assert_status 200
stop_server
done_testing
