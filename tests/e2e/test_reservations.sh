#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_reservations.sh - advance reservations and maintenance windows end to end
# (docs/scheduling.md, "Reservations"; issue 36), on a simulated fleet of three
# 4-card nodes, with windows a few seconds ahead (every wait is a bounded poll):
#
#  1. managing them: who may create which kind (a tenant's: platform-admin;
#     maintenance: ops-engineer too), bad input answered 400 with nothing
#     changed, who sees which (a tenant's: its members; maintenance: ops and
#     admins; anyone else 404), an update that widens one audited as such.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_reservations.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/asleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[
 {"name":"n1","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"n2","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"n3","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF
for u in ops ru rv bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

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
login() { # NAME: its token in TOK_NAME
    run_in "$E2E_TMP/pw.$1" --server "$URL" login "$1"
    assert_rc 0
    printf -v "TOK_$1" '%s' "$(head -n 1 "$OUT_FILE")"
}
user() { # NAME ROLE [TENANT]: a user holding ROLE (in TENANT's project p, else global)
    local name=$1 role=$2 tenant=${3:-}
    run_in "$E2E_TMP/pw.$name" --server "$URL" --token "$ADMIN" user create "$name"
    assert_rc 0
    if [ -n "$tenant" ]; then
        gp member grant "$name" "$role" --tenant "$tenant" --project p
    else
        gp member grant "$name" "$role"
    fi
    assert_rc 0
    login "$name"
}
user ops ops-engineer
user ru project-user red
user rv viewer red
user bu project-user blue
OPS=$TOK_ops RU=$TOK_ru RV=$TOK_rv BU=$TOK_bu
R=(--tenant red --project p)
B=(--tenant blue --project p)

names() { # the reservations the token's holder sees, by name
    as "$1" -o json reservation list
    jout '[.items[].name] | sort | join(",")'
}

note "1. managing reservations: who creates which kind, bad input, who sees which"
# a tenant's reservation is platform-admin's; a maintenance window ops-engineer's too
as "$RU" reservation create x --tenant red --nodes n1 --start +1h --end +2h
assert_denied 403
as "$OPS" reservation create x --tenant red --nodes n1 --start +1h --end +2h
assert_denied 403
gp -o json reservation create far-red --tenant red --nodes n1 --start +1h --end +2h
assert_rc 0
assert_json '"\(.kind) \(.tenant) \(.state) \(.nodes|join(","))"' "tenant red upcoming n1" "$OUT_FILE"
gp -o json reservation create far-blue --tenant blue --project p --pool default --class a100.1x \
    --count 2 --start +1h --end +2h --recurrence daily --until +3d
assert_rc 0
assert_json '"\(.count) \(.class) \(.recurrence) \(.occurrences|length)"' "2 a100.1x daily 3" "$OUT_FILE"
as "$OPS" -o json reservation create far-maint --maintenance --nodes n3 --start +3h --end +4h \
    --recurrence weekdays:mon,tue,wed,thu,fri,sat,sun --until +2d --drain-before 600
assert_rc 0
assert_json '"\(.kind) \(.drain_before_seconds) \(.weekdays|length)"' "maintenance 600 7" "$OUT_FILE"
# bad input: 400, one line, nothing changed
before=$(names "$ADMIN")
bad() {
    gp reservation create bad "$@"
    assert_denied 400
}
bad --tenant red --nodes n1 --start +2h --end +1h                # ends before it starts
bad --tenant red --nodes n1 --start +1h --end +1h                # empty window
bad --tenant red --pool default --class a100.1x --count 0 --start +1h --end +2h
bad --tenant red --pool default --class a100.1x --count 13 --start +1h --end +2h
bad --tenant red --pool nowhere --class a100.1x --count 1 --start +1h --end +2h
bad --tenant red --pool default --class nope --count 1 --start +1h --end +2h
bad --tenant red --nodes n1,n9 --start +1h --end +2h             # no node n9
bad --tenant green --nodes n1 --start +1h --end +2h              # no tenant green
bad --tenant red --project q --nodes n1 --start +1h --end +2h    # no project q
bad --tenant red --nodes n1 --pool default --class a100.1x --count 1 --start +1h --end +2h
bad --nodes n1 --start +1h --end +2h                             # neither holder
bad --tenant red --maintenance --nodes n1 --start +1h --end +2h  # both
bad --tenant red --nodes n1 --start +1h --end +2h --recurrence daily          # no horizon
bad --tenant red --nodes n1 --start +1h --end +27h --recurrence daily --until +3d  # overlaps
bad --tenant red --nodes n1 --start 2020-01-01T00:00:00Z --end 2020-01-01T01:00:00Z  # over
bad --tenant red --nodes n1 --start +1h --end +2h --end-policy later
bad --tenant red --nodes n1 --start +1h --end +2h --drain-before 60  # not maintenance
api POST /api/v1/reservations '{"name":"bad","tenant":"red","nodes":["n1"],"start":"soon","end":"later"}'
assert_status 400
assert_json .error.code invalid_argument
gp reservation create far-red --tenant red --nodes n2 --start +1h --end +2h
assert_denied 409
assert_eq "$(names "$ADMIN")" "$before" "the reservations after the refusals"
# who sees which: a tenant's members theirs; ops the maintenance windows; others 404
assert_eq "$(names "$RU")" "far-red" "what red's project-user sees"
assert_eq "$(names "$BU")" "far-blue" "what blue's project-user sees"
assert_eq "$(names "$OPS")" "far-maint" "what an ops-engineer sees"
assert_eq "$(names "$ADMIN")" "far-blue,far-maint,far-red" "what the platform-admin sees"
as "$BU" reservation show far-red
assert_denied 404
as "$RU" reservation show far-maint
assert_denied 404
as "$RV" reservation show far-red
assert_rc 0
as "$RV" reservation update far-red --end +3h    # seen, not his to change
assert_denied 403
as "$BU" reservation delete far-red
assert_denied 404
as "$OPS" reservation update far-red --end +3h
assert_denied 404
# widening is audited as such; a patch is checked whole (nothing changes on a 400)
gp -o json reservation update far-red --end +3h --description "longer"
assert_rc 0
gp reservation update far-red --nodes n1,n9
assert_denied 400
gp -o json reservation show far-red
assert_json '.nodes|join(",")' n1 "$OUT_FILE"
gp -o json audit list --tenant red --action reservation.update
assert_rc 0
assert_json '[.items[] | select(.result == "ok")][0].summary.widened' true "$OUT_FILE"
gp -o json audit list --tenant red --action reservation.create
assert_json '[.items[] | select(.result == "ok")][0].summary.widened' true "$OUT_FILE"
for r in far-red far-blue; do
    gp reservation delete $r
    assert_rc 0
done
as "$OPS" reservation delete far-maint
assert_rc 0
assert_eq "$(names "$ADMIN")" "" "every reservation deleted"

stop_server
done_testing
