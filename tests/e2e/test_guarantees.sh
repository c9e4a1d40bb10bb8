#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_guarantees.sh - guaranteed shares end to end (docs/scheduling.md,
# "Guarantees"), on one simulated 8-GPU node:
#
#  1. the quota's guarantee fields through the CLI: set, shown, refused when
#     they break a rule (above the ceiling, kept above the guarantee, on a
#     project, a weight out of range), each refusal changing nothing;
#  2. borrowing up to the ceiling: red (guarantee 4) idle, blue (guarantee 4,
#     ceiling 8) runs 8 jobs; the 4 newest are `borrowed` in `job show`;
#     each tenant's overview shows its own guaranteed / in use / borrowed /
#     lent figures;
#  3. reclaim: red submits 2 jobs within its guarantee (its project-user, no
#     right to preempt anything); they run within two rounds, blue's 2 newest
#     borrowed jobs are requeued with a reason that does not name red, blue
#     keeps 6 and may not borrow back what red uses (borrow_limit); the audit
#     trail has job.reclaim in blue's tenant and job.reclaim_for in red's;
#  4. isolation: blue's tenant-admin reads neither red's overview nor red's
#     reclaim events, and may not set its own guarantee;
#  5. a reservation of red's in force counts against its guarantee: what it holds
#     unused is never lent, red's job outside it would borrow (borrow_limit),
#     its job in it is owned and reclaims blue's borrowed cards;
#  6. a project's part of red's guarantee: q, without one, runs on red's
#     unassigned part and borrows p's idle part; p's job within its part takes
#     it back by reclaim inside the tenant; the parts never add up to more than
#     the guarantee (409), a tenant-admin splits only its own tenant's;
#  7. lifting a guarantee (none) lifts its kept part with it.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_guarantees.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/gsleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"g8","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]}]}
EOF
for u in ru bu ba; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

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
user ru project-user red p
user bu project-user blue p
user ba tenant-admin blue
RU=$TOK_ru BU=$TOK_bu BA=$TOK_ba

note "guarantee fields: set, shown, refused when they break a rule"
gp -o json quota set --tenant red --gpus 8 --guaranteed-gpus 4
assert_rc 0
assert_json '"\(.gpus) \(.guaranteed_gpus) \(.kept_gpus) \(.borrow_weight)"' "8 4 0 1" "$OUT_FILE"
gp -o json quota set --tenant blue --gpus 8 --guaranteed-gpus 4 --borrow-weight 2
assert_rc 0
gp quota set --tenant blue --guaranteed-gpus 9
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "guaranteed_gpus 9 exceeds the gpus ceiling 8"
gp quota set --tenant blue --kept-gpus 5
assert_rc 1
assert_file_contains "$ERR_FILE" "kept_gpus 5 exceeds guaranteed_gpus 4"
gp quota set --tenant blue --borrow-weight 0
assert_rc 1
assert_file_contains "$ERR_FILE" "field 'borrow_weight' must be at least 1"
gp quota set --tenant blue --project p --guaranteed-gpus 5
assert_rc 1
assert_file_contains "$ERR_FILE" "the projects' parts would add up to 5 GPUs, above tenant blue's guarantee of 4"
gp quota set --tenant blue --project p --guaranteed-gpus 1 --kept-gpus 1
assert_rc 1
assert_file_contains "$ERR_FILE" "kept_gpus and borrow_weight are a tenant's"
# a tenant-admin may not give its tenant a guarantee
as "$BA" quota set --tenant blue --guaranteed-gpus 6
assert_denied 403
gp -o json quota show --tenant blue
assert_rc 0
assert_json '"\(.gpus) \(.guaranteed_gpus) \(.kept_gpus) \(.borrow_weight)"' "8 4 0 2" "$OUT_FILE"

note "shares: the guarantee fields through their own routes and gpupool share"
gp -o json share show --tenant blue
assert_rc 0
assert_json '"\(.tenant) \(.guaranteed_gpus) \(.kept_gpus) \(.borrow_weight) \(.ceiling_gpus) \(.applies)"' \
    "blue 4 0 2 8 true" "$OUT_FILE"
gp -o json share set --tenant blue --kept-gpus 1 --borrow-weight 3
assert_rc 0
assert_json '"\(.kept_gpus) \(.borrow_weight) \(.guaranteed_gpus)"' "1 3 4" "$OUT_FILE"
gp -o json quota show --tenant blue # the same fields as the quota's
assert_json '"\(.kept_gpus) \(.borrow_weight)"' "1 3" "$OUT_FILE"
gp share set --tenant blue --guaranteed-gpus 9
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "guaranteed_gpus 9 exceeds the gpus ceiling 8"
gp share set --tenant blue
assert_rc 2
assert_file_contains "$ERR_FILE" "give at least one of"
api PATCH /api/v1/tenants/blue/shares '{"gpus": 3}'
assert_status 400
assert_json .error.message "unknown field 'gpus'" "$BODY_FILE"
api PATCH /api/v1/tenants/blue/shares '{}'
assert_status 400
as "$BA" share set --tenant blue --guaranteed-gpus 6
assert_denied 403
as "$BA" -o json share show --tenant blue
assert_rc 0
assert_json '"\(.kept_gpus) \(.borrow_weight)"' "1 3" "$OUT_FILE" # nothing changed
gp -o json share set --tenant blue --kept-gpus none --borrow-weight 2 --ceiling-gpus 8
assert_rc 0
gp -o json audit list --action share.change
assert_rc 0
assert_json '[.items[] | select(.status == 200)] | length' 2 "$OUT_FILE"
assert_json '[.items[] | select(.status == 200)] | last | .summary.to.borrow_weight' 2 "$OUT_FILE"
gp -o json share list
assert_rc 0
assert_json '[.items[] | .tenant] | (index("red") != null and index("blue") != null)' true "$OUT_FILE"
as "$BA" -o json share list
assert_rc 0
assert_json '[.items[] | .tenant] | join(",")' "blue" "$OUT_FILE"
as "$BA" share show --tenant red
assert_denied 403 404

# sub TOKEN TENANT NAME: a 1-GPU sleeping job; JID
sub() {
    as "$1" -o json job submit --tenant "$2" --project p "$3" --class a100.1x -- "$BIN/gsleep" 600
    assert_rc 0
    JID=$(jout .id)
}
# state TOKEN TENANT ID
state() {
    as "$1" -o json job show --tenant "$2" --project p "$3"
    jout .state
}
running_of() {
    as "$1" -o json job list --tenant "$2" --project p
    jout '[.items[] | select(.state == "running")] | length'
}
is_running() { [ "$(state "$@")" == running ]; }
count_is() { [ "$(running_of "$1" "$2")" == "$3" ]; }

note "borrowing up to the ceiling while red is idle"
BL=()
for i in 1 2 3 4 5 6 7 8; do
    sub "$BU" blue "b$i"
    BL+=("$JID")
    sleep 0.05 # distinct start times, in submit order
done
poll 20 count_is "$BU" blue 8 || fail "blue's 8 jobs did not all start"
_pass
BORROWED=""
for i in 0 1 2 3 4 5 6 7; do
    as "$BU" -o json job show --tenant blue --project p "${BL[i]}"
    BORROWED+="$(jout .borrowed)"
done
assert_eq "$BORROWED" "falsefalsefalsefalsetruetruetruetrue" "blue's jobs above its guarantee are borrowed"
gp -o json binding list --tenant blue
assert_rc 0
assert_json '"\([.items[] | select(.borrowed == true)] | length) \([.items[] | select(.borrowed == false)] | length)"' \
    "4 4" "$OUT_FILE"
assert_json "[.items[] | select(.borrowed == true) | .job] | sort | join(\",\")" \
    "$(printf '%s\n' "${BL[4]}" "${BL[5]}" "${BL[6]}" "${BL[7]}" | sort | paste -sd,)" "$OUT_FILE"
note "lending is audited in the lender's trail, borrowing in the borrower's"
gp -o json audit list --action share.lend
assert_rc 0
assert_json '[.items[] | .tenant] | unique | join(",")' "red" "$OUT_FILE"
assert_json '.items | last | .summary.to' 4 "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "blue"
gp -o json audit list --action job.place --tenant blue
assert_rc 0
assert_json '[.items[] | select(.summary.borrowed == true) | .target.id] | sort | join(",")' \
    "$(printf '%s\n' "${BL[4]}" "${BL[5]}" "${BL[6]}" "${BL[7]}" | sort | paste -sd,)" "$OUT_FILE"
as "$BA" -o json audit list --tenant blue --action share.lend
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
as "$BA" -o json tenant overview blue
assert_rc 0
assert_json '"\(.share.guaranteed_gpus) \(.share.in_use_gpus) \(.share.borrowed_gpus) \(.share.lent_gpus) \(.share.applies)"' \
    "4 8 4 0 true" "$OUT_FILE"
gp -o json tenant overview red
assert_rc 0
assert_json '"\(.share.guaranteed_gpus) \(.share.in_use_gpus) \(.share.borrowed_gpus) \(.share.lent_gpus)"' \
    "4 0 0 4" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "blue"

note "reclaim: red's jobs within its guarantee take it back"
sub "$RU" red r1
R1=$JID
sub "$RU" red r2
R2=$JID
poll 20 is_running "$RU" red "$R1" || fail "r1 did not start after reclaim"
poll 20 is_running "$RU" red "$R2" || fail "r2 did not start after reclaim"
_pass
as "$RU" -o json job show --tenant red --project p "$R1"
assert_json .borrowed false "$OUT_FILE"
assert_json '[.events[] | .kind] | join(",")' "submitted,admitted,placed" "$OUT_FILE"
assert_match "$(jout '[.events[] | select(.kind == "admitted") | .message] | .[0]')" \
    '^waiting_for_reclaim: [12] borrowed jobs? being stopped' "r1 waited for the reclaim"
# the newest borrowed go, the reason does not name red
for i in 6 7; do
    as "$BU" -o json job show --tenant blue --project p "${BL[i]}"
    assert_match "$(jout .state)" '^(queued|admitted)$' "state of reclaimed b$((i + 1))"
    assert_json .preemptions 1 "$OUT_FILE"
    assert_match "$(jout '[.events[] | select(.kind == "preempted") | .message] | .[0]')" \
        "^requeued: reclaimed: it ran on capacity borrowed above tenant blue's guarantee of 4 GPUs" \
        "reason of reclaimed b$((i + 1))"
    assert_file_lacks "$OUT_FILE" "red"
done
count_is "$BU" blue 6 || fail "blue should keep 6 running"
_pass
as "$BU" -o json job show --tenant blue --project p "${BL[7]}"
assert_match "$(jout .reason)" '^borrow_limit: tenant blue above its guarantee of 4 GPUs' \
    "blue may not borrow back what red uses"
for i in 0 1 2 3 4 5; do
    assert_eq "$(state "$BU" blue "${BL[i]}")" running "b$((i + 1)) keeps running"
done
as "$BA" -o json tenant overview blue
assert_json '"\(.share.in_use_gpus) \(.share.borrowed_gpus)"' "6 2" "$OUT_FILE"
gp -o json tenant overview red
assert_json '"\(.share.in_use_gpus) \(.share.borrowed_gpus) \(.share.lent_gpus)"' "2 0 2" "$OUT_FILE"

note "audit: each tenant's side in its own trail"
gp -o json audit list --action job.reclaim
assert_rc 0
assert_json '[.items[] | .target.id] | sort | join(",")' \
    "$(printf '%s\n' "${BL[6]}" "${BL[7]}" | sort | paste -sd,)" "$OUT_FILE"
assert_json '[.items[] | "\(.tenant) \(.summary.borrowed)"] | unique | join(",")' "blue true" "$OUT_FILE"
gp -o json audit list --action job.reclaim_for
assert_rc 0
assert_json '[.items[] | .tenant] | unique | join(",")' "red" "$OUT_FILE"
assert_json '.items | length' 2 "$OUT_FILE"

note "isolation: blue's admin sees only blue"
as "$BA" -o json tenant overview red
assert_denied 403 404
as "$BA" -o json audit list --tenant blue --action job.reclaim
assert_rc 0
assert_json '.items | length' 2 "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "$R1"
assert_file_lacks "$OUT_FILE" "$R2"
as "$BA" -o json audit list --tenant blue --action job.reclaim_for
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
as "$BA" -o json audit list --tenant red --action job.reclaim_for
assert_denied 403 404

note "settled: nothing more is stopped"
sleep 2
gp -o json audit list --action job.reclaim
assert_json '.items | length' 2 "$OUT_FILE"

note "a reservation counts against its tenant's guarantee, not on top of it"
# red (guarantee 4) runs r1, r2; blue runs 6 (2 of them borrowed). red's reservation of 2 cards
# opens: what it holds unused is red's (never lent), so red's next job outside it would borrow
gp reservation create red-pair --tenant red --project p --pool default --class a100.1x --count 2 \
    --start +2s --end +1h
assert_rc 0
in_force() {
    gp -o json share show --tenant red
    [ "$(jout .reserved_gpus)" == 2 ]
}
poll 10 in_force || fail "red's reservation did not come into force: $(cat "$OUT_FILE")"
_pass
assert_json '"\(.in_use_gpus) \(.reserved_gpus) \(.borrowed_gpus) \(.lent_gpus)"' "2 2 0 0" "$OUT_FILE"
sub "$RU" red r-out
ROUT=$JID
waits_to_borrow() {
    as "$RU" -o json job show --tenant red --project p "$ROUT"
    [[ "$(jout .reason)" == borrow_limit* ]]
}
poll 10 waits_to_borrow || fail "red's job outside its reservation: $(cat "$OUT_FILE")"
_pass
assert_match "$(jout .reason)" \
    "^borrow_limit: tenant red above its guarantee of 4 GPUs \\(2 of it held unused by its reservations\\)" \
    "red's job outside its reservation would borrow"
as "$RU" job cancel --tenant red --project p "$ROUT"
assert_rc 0
# red's job in it is owned: it takes back the cards blue borrows there (reclaim)
as "$RU" -o json job submit --tenant red --project p r-in --class a100.1x --units 2 \
    --reservation red-pair --time-limit 600 -- "$BIN/gsleep" 600
assert_rc 0
RIN=$(jout .id)
poll 20 is_running "$RU" red "$RIN" || fail "red's job in its reservation did not start"
_pass
as "$RU" -o json job show --tenant red --project p "$RIN"
assert_json .borrowed false "$OUT_FILE"
assert_match "$(jout '[.events[] | select(.kind == "admitted") | .message] | .[0]')" \
    '^waiting_for_reclaim: 2 borrowed jobs being stopped' "r-in reclaimed blue's borrowed cards"
count_is "$BU" blue 4 || fail "blue should keep its guarantee of 4"
_pass
gp -o json binding list --tenant red
assert_json "[.items[] | select(.job == \"$RIN\" and .end == null) | .borrowed] | unique | join(\",\")" \
    "false" "$OUT_FILE"
gp -o json share show --tenant red
assert_json '"\(.in_use_gpus) \(.reserved_gpus) \(.borrowed_gpus) \(.lent_gpus)"' "4 2 0 0" "$OUT_FILE"
as "$BA" -o json share show --tenant blue
assert_json '"\(.in_use_gpus) \(.reserved_gpus) \(.borrowed_gpus)"' "4 0 0" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "red-pair"
as "$RU" job cancel --tenant red --project p "$RIN"
assert_rc 0
gp reservation delete red-pair
assert_rc 0

note "a project's part of its tenant's guarantee"
# a clean slate: nothing runs; red (guarantee 4) gets a second project q, p a part of 2
for t in red blue; do
    tok=$RU
    [ $t == blue ] && tok=$BU
    as "$tok" -o json job list --tenant $t --project p
    for id in $(jout '.items[] | select(.state == "running" or .state == "queued" or .state == "admitted") | .id'); do
        as "$tok" job cancel --tenant $t --project p "$id"
        assert_rc 0
    done
done
idle_now() {
    gp -o json binding list --tenant "$1"
    [ "$(jout '[.items[] | select(.end == null)] | length')" == 0 ]
}
poll 20 idle_now red || fail "red's cards were not given back"
poll 20 idle_now blue || fail "blue's cards were not given back"
_pass
gp project create q --tenant red --class development
assert_rc 0
gp member grant ru project-user --tenant red --project q
assert_rc 0
gp -o json share set --tenant red --project p --guaranteed-gpus 2
assert_rc 0
assert_json '"\(.project) \(.guaranteed_gpus) \(.tenant_guaranteed_gpus) \(.in_use_gpus)"' "p 2 4 0" "$OUT_FILE"
gp share set --tenant red --project q --guaranteed-gpus 3
assert_rc 1
assert_file_contains "$ERR_FILE" "the projects' parts would add up to 5 GPUs, above tenant red's guarantee of 4"
gp share set --tenant red --guaranteed-gpus 1
assert_rc 1
assert_file_contains "$ERR_FILE" "tenant red's projects have parts of its guarantee adding up to 2 GPUs"
gp share set --tenant red --project q --kept-gpus 1
assert_rc 2
# a tenant-admin splits its own tenant's guarantee, and no other's
as "$BA" -o json share set --tenant blue --project p --guaranteed-gpus 1
assert_rc 0
as "$BA" share set --tenant red --project p --guaranteed-gpus 1
assert_denied 403 404
as "$BA" -o json share set --tenant blue --project p --guaranteed-gpus none
assert_rc 0
assert_json .guaranteed_gpus null "$OUT_FILE"
gp -o json audit list --action share.project.change
assert_json '[.items[] | select(.status == 200)] | length' 3 "$OUT_FILE"
# blue takes its 4 (owned); red's q runs 4: 2 in red's unassigned part, 2 on p's idle part
BQ=()
for i in 1 2 3 4; do
    sub "$BU" blue "bq$i"
    BQ+=("$JID")
done
poll 20 count_is "$BU" blue 4 || fail "blue's 4 did not start"
_pass
QJ=()
for i in 1 2 3 4; do
    as "$RU" -o json job submit --tenant red --project q "q$i" --class a100.1x -- "$BIN/gsleep" 600
    assert_rc 0
    QJ+=("$(jout .id)")
    sleep 0.05
done
q_running() {
    as "$RU" -o json job list --tenant red --project q
    [ "$(jout '[.items[] | select(.state == "running")] | length')" == "$1" ]
}
poll 20 q_running 4 || fail "q's 4 did not start"
_pass
MARKS=""
for i in 0 1 2 3; do
    as "$RU" -o json job show --tenant red --project q "${QJ[i]}"
    MARKS+="$(jout .borrowed)"
done
assert_eq "$MARKS" "falsefalsetruetrue" "q's work beyond the unassigned part is borrowed"
as "$RU" -o json share show --tenant red --project q
assert_json '"\(.guaranteed_gpus) \(.in_use_gpus) \(.borrowed_gpus)"' "null 4 2" "$OUT_FILE"
# p asks for its part: q's 2 borrowed stop (reclaim inside the tenant), blue keeps its 4
as "$RU" -o json job submit --tenant red --project p p1 --class a100.1x --units 2 -- "$BIN/gsleep" 600
assert_rc 0
P1=$(jout .id)
poll 20 is_running "$RU" red "$P1" || fail "p's job within its part did not start"
_pass
as "$RU" -o json job show --tenant red --project p "$P1"
assert_json .borrowed false "$OUT_FILE"
assert_match "$(jout '[.events[] | select(.kind == "admitted") | .message] | .[0]')" \
    '^waiting_for_reclaim: 2 borrowed jobs being stopped' "p1 reclaimed q's borrowed work"
for i in 2 3; do
    as "$RU" -o json job show --tenant red --project q "${QJ[i]}"
    assert_match "$(jout .state)" '^(queued|admitted)$' "q$((i + 1)) was requeued"
    assert_match "$(jout '[.events[] | select(.kind == "preempted") | .message] | .[0]')" \
        "^requeued: reclaimed: it ran above project q's part of tenant red's guarantee" \
        "q$((i + 1))'s reason"
done
q_running 2 || fail "q should keep 2"
count_is "$BU" blue 4 || fail "blue should keep its 4"
_pass
gp -o json share show --tenant red --project p
assert_json '"\(.guaranteed_gpus) \(.in_use_gpus) \(.borrowed_gpus)"' "2 2 0" "$OUT_FILE"
as "$BA" share show --tenant red --project p
assert_denied 403 404
as "$RU" job cancel --tenant red --project p "$P1"
assert_rc 0
for id in "${QJ[@]}"; do
    as "$RU" job cancel --tenant red --project q "$id"
    assert_rc 0
done
for id in "${BQ[@]}"; do
    as "$BU" job cancel --tenant blue --project p "$id"
    assert_rc 0
done
gp -o json share set --tenant red --project p --guaranteed-gpus none
assert_rc 0

note "lifting a guarantee lifts its kept part"
gp -o json quota set --tenant red --kept-gpus 1
assert_rc 0
assert_json '"\(.guaranteed_gpus) \(.kept_gpus)"' "4 1" "$OUT_FILE"
gp -o json quota set --tenant red --guaranteed-gpus none
assert_rc 0
assert_json '"\(.guaranteed_gpus) \(.kept_gpus)"' "null 0" "$OUT_FILE"

done_testing
