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
#  2. on time, nothing killed: red reserves node n1 (far ahead, then moved to a
#     few seconds from now: no step races its start); blue's jobs
#     without a time limit are kept off it (the fifth waits, "reserved", and
#     job explain names when the reservation ends), a short one runs there and
#     ends; red's job naming the reservation waits for its start, runs there
#     from it, and is stopped at its end (end policy stop); blue's jobs are
#     never stopped, and the waiting one takes n1 after the end.
#  3. a count: 2 cards of pool batch for red's project; a job of 3 cards is
#     refused (400), a third job naming it waits (full) until one ends.
#  3b. a count of one shared card (slices of an L40S): blue's slices pack on
#     the other card, a fifth waits; red's job of four slices runs on the
#     held card (one card, counted whole), five are refused.
#  4. a recurring window (every 12 s, 6 s long, three times) opens twice: two
#     jobs naming it, each as long as half of it by its limit, run one in an
#     occurrence and the other in a later one.
#  5. a maintenance window (ops, with a work order) on n2: `node list` shows it
#     ahead; n2 drains before it, is cordoned in it and is back after it, each
#     move in the node's history by the scheduler and audited; a node an
#     operator cordoned stays the operator's.
#  6. accounting: a reservation nobody used is charged to its holder as
#     reserved-but-unused card-hours (exactly its cards x its window), priced
#     by the rate card, in its own columns of the usage report; the tenant
#     overview lists the tenant's reservations.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_reservations.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/asleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[
 {"name":"n1","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"n2","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"n3","cpus":32,"memory_gib":256,"gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"n4","cpus":32,"memory_gib":256,"gpus":[{"model":"L40S","memory_gib":48,"count":2,"mode":"shared"}]}]}
EOF
for u in ops ru rv bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create l40s.q --form shared:12/25 --models L40S --cpus 1 --memory 1
assert_rc 0
# pool default: n1, n2 (everyone's); pool batch: n3 (red's alone)
gp pool create batch --tenants red
assert_rc 0
gp node pool n3 batch
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

ts() { date -u -d "$1" +%s; } # RFC 3339 to seconds
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
bad --tenant red --pool default --class a100.1x --count 9 --start +1h --end +2h
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

note "1b. no two on the same cards at the same time: overlaps refused (409), nothing changed"
gp -o json reservation show far-red
FR1=$(jout .start) FR2=$(jout .end)
gp -o json reservation show far-blue
FB1=$(ts "$(jout .start)") FB2=$(ts "$(jout .end)")
iso() { date -u -d "@$1" +%FT%TZ; } # seconds to RFC 3339
before=$(names "$ADMIN")
cf_times() { jq -r '"\(.error.conflict.start) \(.error.conflict.end)" | gsub("\\.000000Z"; "Z")' "$BODY_FILE"; }
FR2=${FR2/.000000Z/Z}
# a node named by both, windows overlapping: the other and the first shared time named
T1=$(iso $(($(ts "$FR1") + 1800))) T2=$(iso $(($(ts "$FR2") + 3600)))
api POST /api/v1/reservations "{\"name\":\"clash\",\"tenant\":\"blue\",\"nodes\":[\"n2\",\"n1\"],\"start\":\"$T1\",\"end\":\"$T2\"}"
assert_status 409
assert_json '"\(.error.code) \(.error.conflict.reservation) \(.error.conflict.kind) \(.error.conflict.node)"' \
    "conflict far-red tenant n1"
assert_eq "$(cf_times)" "$T1 $FR2" "the first time both hold n1"
assert_json '.error.message | contains("far-red")' true
# only touching (it starts as the other ends): fine
gp reservation create touch --tenant blue --nodes n1 --start "$FR2" --end "$T2"
assert_rc 0
gp reservation delete touch
assert_rc 0
# a count against a recurring count: far-blue (2 of default's 8 cards, daily) meets a one-off
# in its second occurrence; 6 more fit, 7 do not
S2=$(iso $((FB1 + 86400 + 600))) E2=$(iso $((FB2 + 86400 - 600)))
api POST /api/v1/reservations "{\"name\":\"cnt\",\"tenant\":\"red\",\"pool\":\"default\",\"class\":\"a100.1x\",\"count\":7,\"start\":\"$S2\",\"end\":\"$E2\"}"
assert_status 409
assert_json '"\(.error.conflict.reservation) \(.error.conflict.pool) \(.error.conflict.class) \(.error.conflict.cards) \(.error.conflict.taken) \(.error.conflict.wanted)"' \
    "far-blue default a100.1x 8 2 7"
assert_eq "$(cf_times)" "$S2 $E2" "the time the counts meet"
gp reservation create cnt --tenant red --pool default --class a100.1x --count 6 --start "$S2" --end "$E2"
assert_rc 0
gp reservation delete cnt
assert_rc 0
# named nodes count against a count: far-red's n1 (4 cards) and far-blue's 2 leave 2 of 8
S1=$(iso $((FB1 + 600))) E1=$(iso $((FB2 - 600)))
gp reservation create cnt --tenant red --pool default --class a100.1x --count 3 --start "$S1" --end "$E1"
assert_denied 409
assert_one_line_error "holds 6 of the 8 cards of class a100.1x in pool default"
# a maintenance window on a tenant's node: refused, the tenant's reservation not named to ops
AUTH_HEADER="Authorization: Bearer $OPS" api POST /api/v1/reservations \
    "{\"name\":\"mclash\",\"maintenance\":true,\"nodes\":[\"n1\"],\"start\":\"$T1\",\"end\":\"$T2\"}"
assert_status 409
assert_json '"\(.error.conflict.reservation) \(.error.conflict.kind) \(.error.conflict.node)"' "null tenant n1"
assert_json '.error.message | contains("far-red")' false
assert_json '.error.message | startswith("a reservation of a tenant holds node n1")' true
# a one-off maintenance window in the recurring one's second occurrence, on the same node
as "$OPS" -o json reservation show far-maint
MS=$(ts "$(jout .start)")
as "$OPS" reservation create m2 --maintenance --nodes n2,n3 --start "$(iso $((MS + 86400 + 60)))" \
    --end "$(iso $((MS + 86400 + 120)))"
assert_denied 409
assert_one_line_error "maintenance window 'far-maint' holds node n3"
# an update that would overlap: refused whole, the reservation as it was
gp reservation update far-red --nodes n1,n3 --end "$(iso $((MS + 60)))"
assert_denied 409
gp -o json reservation show far-red
assert_json '"\(.nodes|join(",")) \(.end|sub("\\.000000Z"; "Z"))"' "n1 $FR2" "$OUT_FILE"
assert_eq "$(names "$ADMIN")" "$before" "the reservations after the refused overlaps"
# node list shows the tenants' reservations on each node too: named to who may see them
gp -o json node list
assert_json '[.items[] | select(.name == "n1") | .next_reservation | "\(.reservation) \(.tenant) \(.state)"][0]' \
    "far-red red upcoming" "$OUT_FILE"
as "$OPS" -o json node list
assert_json '[.items[] | select(.name == "n1") | .next_reservation | "\(.reservation) \(.tenant) \(.start != null)"][0]' \
    "null null true" "$OUT_FILE"
gp node list
assert_file_contains "$OUT_FILE" "NEXT_RESERVATION"
assert_file_contains "$OUT_FILE" "far-red"
for r in far-red far-blue; do
    gp reservation delete $r
    assert_rc 0
done
as "$OPS" reservation delete far-maint
assert_rc 0
assert_eq "$(names "$ADMIN")" "" "every reservation deleted"

# helpers: a job's state / field (TOKEN TENANT ID [FIELD])
jget() {
    as "$1" -o json job show --tenant "$2" --project p "$3"
    jout "${4:-.state}"
}
state_is() { [ "$(jget "$1" "$2" "$3")" == "$4" ]; }
reason_has() { [[ "$(jget "$1" "$2" "$3" .reason)" == *"$4"* ]]; }
# sub TOKEN TENANT NAME ARGS... -- CMD...: JID
sub() {
    local tok=$1 tn=$2 name=$3
    shift 3
    as "$tok" -o json job submit "$name" --tenant "$tn" --project p --class a100.1x "$@"
    assert_rc 0
    JID=$(jout .id)
}

note "2. on time, nothing killed: red's reservation of n1, blue kept off it beforehand"
# (far ahead while blue's jobs are placed, then moved near: nothing here races its start)
gp -o json reservation create red-win --tenant red --nodes n1 --start +10m --end +11m
assert_rc 0
W2=$(ts "$(jout .end)")
BLONG=()
for i in 1 2 3 4; do
    sub "$BU" blue "long$i" -- "$BIN/asleep" 600
    BLONG+=("$JID")
done
for j in "${BLONG[@]}"; do
    poll 15 state_is "$BU" blue "$j" running || fail "blue's long job $j did not start"
    _pass
    assert_eq "$(jget "$BU" blue "$j" '.bindings[0].node')" n2 "where blue's long job runs"
done
sub "$BU" blue long5 -- "$BIN/asleep" 600
B5=$JID
poll 10 reason_has "$BU" blue "$B5" "reserved: a reservation of another tenant" ||
    fail "blue's fifth long job: $(jget "$BU" blue "$B5" .reason)"
_pass
as "$BU" -o json job explain "$B5" "${B[@]}"
assert_rc 0
assert_json '"\(.reservation.kind) \(.reservation.name)"' "another_tenant null" "$OUT_FILE"
assert_eq "$(ts "$(jout .reservation.waits_until)")" "$W2" "blue's wait ends with the reservation"
sub "$BU" blue short --time-limit 4 -- "$BIN/asleep" 1
BS=$JID
poll 15 state_is "$BU" blue "$BS" succeeded || fail "blue's short job: $(jget "$BU" blue "$BS" .reason)"
_pass
assert_eq "$(jget "$BU" blue "$BS" '.bindings[0].node')" n1 "the short job ran on the reserved node"
# red: more cards than it holds is refused; the job naming it waits for its start
as "$RU" job submit big "${R[@]}" --class a100.1x --units 5 --reservation red-win
assert_denied 400
as "$BU" job submit theirs "${B[@]}" --class a100.1x --reservation red-win
assert_denied 400
sub "$RU" red inwin --units 4 --reservation red-win -- "$BIN/asleep" 600
RW=$JID
assert_eq "$(jget "$RU" red "$RW" .reservation)" red-win "the job's reservation"
poll 10 reason_has "$RU" red "$RW" "reservation_not_started: reservation red-win" ||
    fail "red's job before the window: $(jget "$RU" red "$RW" .reason)"
_pass
as "$RU" -o json job explain "$RW" "${R[@]}"
assert_json '"\(.reservation.kind) \(.reservation.name)"' "own red-win" "$OUT_FILE"
# the window moves near: an earlier start widens it (audited as such)
gp -o json reservation update red-win --start +4s --end +20s
assert_rc 0
W1=$(ts "$(jout .start)") W2=$(ts "$(jout .end)")
poll 30 state_is "$RU" red "$RW" running || fail "red's job in the window: $(jget "$RU" red "$RW" .reason)"
_pass
started=$(ts "$(jget "$RU" red "$RW" .started_at)")
[ "$started" -ge "$W1" ] || fail "red's job started at $started, before the window ($W1)"
_pass
assert_eq "$(jget "$RU" red "$RW" '[.bindings[].node] | unique | join(",")')" n1 "red's job holds n1"
# nothing of blue's was stopped to make room
for j in "${BLONG[@]}"; do assert_eq "$(jget "$BU" blue "$j")" running "blue's $j"; done
# the end: red's job stopped (end policy stop), blue's waiting job takes n1
poll 30 state_is "$RU" red "$RW" failed || fail "red's job at the end: $(jget "$RU" red "$RW" .reason)"
_pass
assert_contains "$(jget "$RU" red "$RW" .reason)" "reservation_end: reservation red-win ended"
assert_eq "$(jget "$RU" red "$RW" '.bindings[0].end_reason')" reservation_end "its bindings' end"
ended=$(ts "$(jget "$RU" red "$RW" .ended_at)")
[ "$ended" -ge "$W2" ] || fail "red's job stopped at $ended, before the end ($W2)"
_pass
poll 15 state_is "$BU" blue "$B5" running || fail "blue's fifth job after the end: $(jget "$BU" blue "$B5" .reason)"
_pass
for j in "${BLONG[@]}"; do assert_eq "$(jget "$BU" blue "$j")" running "blue's $j, after the window"; done
as "$BU" -o json job list "${B[@]}"
assert_json '[.items[] | select(.state == "failed" or .state == "preempted")] | length' 0 "$OUT_FILE"
for j in "${BLONG[@]}" "$B5"; do
    as "$BU" job cancel "$j" "${B[@]}"
    assert_rc 0
done

note "3. a count of a pool's cards: refused beyond it, waiting when it is full"
gp -o json reservation create red-count --tenant red --project p --pool batch --class a100.1x \
    --count 2 --start +4s --end +40s
assert_rc 0
as "$RU" job submit wide "${R[@]}" --class a100.1x --units 3 --reservation red-count
assert_denied 400
CJ=()
for i in 1 2 3; do
    sub "$RU" red "c$i" --time-limit 20 --reservation red-count -- "$BIN/asleep" $((i == 1 ? 3 : 30))
    CJ+=("$JID")
done
poll 20 state_is "$RU" red "${CJ[1]}" running || fail "the count's second job: $(jget "$RU" red "${CJ[1]}" .reason)"
_pass
assert_eq "$(jget "$RU" red "${CJ[1]}" '.bindings[0].node')" n3 "the count's cards are the pool's"
# while the first runs, the third waits: the count is full
if [ "$(jget "$RU" red "${CJ[0]}")" == running ]; then
    assert_contains "$(jget "$RU" red "${CJ[2]}" .reason)" "reservation_full: reservation red-count holds 2"
fi
poll 20 state_is "$RU" red "${CJ[2]}" running || fail "the count's third job: $(jget "$RU" red "${CJ[2]}" .reason)"
_pass
assert_eq "$(jget "$RU" red "${CJ[0]}")" succeeded "the first job ended by itself"
for j in "${CJ[1]}" "${CJ[2]}"; do
    as "$RU" job cancel "$j" "${R[@]}"
    assert_rc 0
done
gp reservation delete red-count
assert_rc 0

note "3b. a count of shared slices holds whole cards"
# n4: two L40S cards shared four ways; red holds one card from T1; blue's slices without a
# limit pack on the other card (four of them), a fifth would take the reserved card at T1
gp -o json reservation create red-slices --tenant red --project p --pool default --class l40s.q \
    --count 1 --start +4s --end +40s
assert_rc 0
QJ=()
for i in 1 2 3 4 5; do
    as "$BU" -o json job submit "q$i" "${B[@]}" --class l40s.q -- "$BIN/asleep" 600
    assert_rc 0
    q=$(jout .id)
    QJ+=("$q")
    # one at a time: each packs where the ones before it are
    [ "$i" == 5 ] || { poll 10 state_is "$BU" blue "$q" running || fail "blue's slice q$i: $(jget "$BU" blue "$q" .reason)"; }
done
_pass
poll 10 reason_has "$BU" blue "${QJ[4]}" "reserved: a reservation of another tenant" ||
    fail "blue's fifth slice: $(jget "$BU" blue "${QJ[4]}" .reason)"
_pass
BCARD=$(jget "$BU" blue "${QJ[0]}" '.bindings[0].gpu')
for j in "${QJ[@]:0:4}"; do assert_eq "$(jget "$BU" blue "$j" '.bindings[0].gpu')" "$BCARD" "blue's slices share one card"; done
# red's job of four slices fits its count of one card (it would not, counted slice by slice)
as "$RU" -o json job submit slices "${R[@]}" --class l40s.q --units 4 --time-limit 20 \
    --reservation red-slices -- "$BIN/asleep" 600
assert_rc 0
RQ=$(jout .id)
poll 20 state_is "$RU" red "$RQ" running || fail "red's slices in the window: $(jget "$RU" red "$RQ" .reason)"
_pass
assert_eq "$(jget "$RU" red "$RQ" '[.bindings[].gpu] | unique | length')" 1 "red's four slices on one card"
[ "$(jget "$RU" red "$RQ" '.bindings[0].gpu')" != "$BCARD" ] || fail "red's slices on blue's card"
_pass
# a fifth slice of red's would need a second card: more than it holds, refused at submit
as "$RU" job submit wide "${R[@]}" --class l40s.q --units 5 --reservation red-slices
assert_denied 400
assert_ne "$(jget "$BU" blue "${QJ[4]}")" running "blue's fifth slice, while red's card is held"
as "$RU" job cancel "$RQ" "${R[@]}"
assert_rc 0
for j in "${QJ[@]}"; do
    as "$BU" job cancel "$j" "${B[@]}"
    assert_rc 0
done
gp reservation delete red-slices
assert_rc 0

note "4. a recurring window opens twice"
gp -o json reservation create red-every --tenant red --nodes n1 --start +5s --end +11s \
    --recurrence every:12 --until +35s
assert_rc 0
assert_json '.occurrences|length' 3 "$OUT_FILE"
OCC=$(jout '[.occurrences[] | "\(.start) \(.end)"] | join(",")')
O1=$(ts "$(jout '.occurrences[0].start')") O2=$(ts "$(jout '.occurrences[1].start')")
assert_eq "$((O2 - O1))" 12 "the period"
which_occ() { # SECONDS: the occurrence (1..3) holding it, 0 none
    local i=0 o
    IFS=, read -ra occs <<<"$OCC"
    for o in "${occs[@]}"; do
        i=$((i + 1))
        [ "$1" -ge "$(ts "${o% *}")" ] && [ "$1" -lt "$(ts "${o#* }")" ] && { echo $i; return; }
    done
    echo 0
}
# (a job runs there only if it can end by the window's end: these two fit one at a time; the
# first outlives its limit by far, so it is stopped by it however late the agent looks)
sub "$RU" red first --units 4 --time-limit 3 --reservation red-every -- "$BIN/asleep" 30
E1=$JID
sub "$RU" red second --units 4 --time-limit 3 --reservation red-every -- "$BIN/asleep" 1
E2=$JID
poll 60 state_is "$RU" red "$E2" succeeded || fail "the second job: $(jget "$RU" red "$E2" .events) first: $(jget "$RU" red "$E1" .events) occurrences $O1 $O2"
_pass
assert_eq "$(jget "$RU" red "$E1")" failed "the first job (stopped by its time limit)"
s1=$(ts "$(jget "$RU" red "$E1" .started_at)") s2=$(ts "$(jget "$RU" red "$E2" .started_at)")
o1=$(which_occ "$s1") o2=$(which_occ "$s2")
[ "$o1" -ge 1 ] && [ "$o2" -gt "$o1" ] ||
    fail "the jobs started at $s1 (occurrence $o1) and $s2 (occurrence $o2) of $OCC"
_pass
gp reservation delete red-every
assert_rc 0

note "5. a maintenance window drains its node, cordons it, gives it back"
as "$OPS" -o json workorder open --node n2 --title "firmware"
assert_rc 0
WO=$(jout .id)
as "$OPS" node cordon n3
assert_rc 0
as "$OPS" -o json reservation create fw --maintenance --nodes n2,n3 --start +12s --end +20s \
    --drain-before 8 --work-orders "$WO"
assert_rc 0
M1=$(ts "$(jout .start)") M2=$(ts "$(jout .end)")
as "$RU" job submit nope "${R[@]}" --class a100.1x --reservation fw
assert_denied 400
as "$OPS" -o json node list
assert_rc 0
assert_json '[.items[] | select(.name == "n2") | .next_maintenance.reservation][0]' fw "$OUT_FILE"
assert_json '[.items[] | select(.name == "n1") | .next_maintenance][0]' null "$OUT_FILE"
as "$OPS" node list
assert_file_contains "$OUT_FILE" "NEXT_MAINTENANCE"
admin_is() {
    as "$OPS" -o json node show "$1"
    [ "$(jout .admin_state)" == "$2" ]
}
poll 15 admin_is n2 cordoned || fail "n2 in the window: $(jout .admin_state)"
_pass
[ "$(date +%s)" -ge "$M1" ] || fail "n2 cordoned before the window"
_pass
poll 20 admin_is n2 none || fail "n2 after the window: $(jout .admin_state)"
_pass
[ "$(date +%s)" -ge "$M2" ] || fail "n2 given back before the window's end"
_pass
as "$OPS" -o json node history n2
assert_rc 0
assert_eq "$(jout '[.items[] | select(.kind == "admin" and .actor == "scheduler") | .to] | reverse | join(",")')" \
    "draining,cordoned,none" "n2's moves"
assert_contains "$(jout '[.items[] | select(.kind == "admin" and .to == "draining")][0].cause')" \
    "maintenance window fw"
assert_contains "$(jout '[.items[] | select(.kind == "admin" and .to == "draining")][0].cause')" "$WO"
as "$OPS" -o json node show n3
assert_json .admin_state cordoned "$OUT_FILE" # the operator's cordon is the operator's
gp -o json audit list --action node.maintenance
assert_json '[.items[] | select(.target.id == "n2") | .summary.admin_state] | join(",")' \
    "draining,cordoned,none" "$OUT_FILE"
as "$OPS" node uncordon n3
assert_rc 0

note "6. reserved but unused: its own figures in the report, charged to the holder"
NOW_S=$(date +%s)
cat >"$E2E_TMP/rate.json" <<EOF
{"effective_from":"$(date -u -d @$((NOW_S - 3600)) +%FT%TZ)","currency":"EUR",
 "card_hour":[{"price":3.6}]}
EOF
gp ratecard create "$E2E_TMP/rate.json"
assert_rc 0
gp -o json reservation create idle-blue --tenant blue --project p --nodes n1 --start +3s --end +6s
assert_rc 0
I2=$(ts "$(jout .end)")
gp -o json tenant overview blue
assert_rc 0
assert_json '[.reservations[].name] | join(",")' idle-blue "$OUT_FILE"
as "$RU" -o json project overview p --tenant red
assert_rc 0
assert_json '[.reservations[].name] | index("idle-blue")' null "$OUT_FILE"
after_end() { [ "$(date +%s)" -gt "$I2" ]; }
poll 15 after_end || fail "the window did not end"
_pass
MONTH=$(date -u +%Y-%m)
gp -o json usage report --month "$MONTH" --group-by tenant
assert_rc 0
# 4 cards x 3 s, nobody's job in it: 12 card-seconds, at 3.6 a card-hour
assert_json '[.rows[] | select(.tenant == "blue")][0].reserved_unused_card_hours' 0.003333 "$OUT_FILE"
assert_json '[.rows[] | select(.tenant == "blue")][0].reserved_unused_cost' 0.012 "$OUT_FILE"
assert_json '.reserved' true "$OUT_FILE"
# red's windows were partly used: something unused
assert_json '[.rows[] | select(.tenant == "red")][0].reserved_unused_card_hours > 0' true "$OUT_FILE"
# a tenant's member sees its own, and the figures are in the cost
as "$BU" -o json usage report --tenant blue --project p --month "$MONTH" --group-by tenant
assert_rc 0
assert_json '.rows | length' 1 "$OUT_FILE"
assert_json '"\(.rows[0].reserved_unused_card_hours) \(.totals.reserved_unused_card_hours)"' \
    "0.003333 0.003333" "$OUT_FILE"
assert_json '.rows[0].cost >= .rows[0].reserved_unused_cost' true "$OUT_FILE"
gp -o csv usage report --month "$MONTH" --group-by tenant
assert_rc 0
assert_contains "$(head -n 1 "$OUT_FILE")" "reserved_unused_card_hours,reserved_unused_cost,cost"
gp usage report --month "$MONTH" --group-by tenant
assert_file_contains "$OUT_FILE" "reserved but unused:"

stop_server
done_testing
