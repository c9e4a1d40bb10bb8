#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_class_guarantees.sh - a guarantee of one resource class (docs/scheduling.md, "A guarantee
# per class"), on one simulated node with 4 A100s and 4 H100s: red is guaranteed 4 H100s (2 of
# them kept) and nothing else; blue is guaranteed 4 GPUs of any class.
#
#  1. the class guarantee through `share set --class` and the quota: set, shown, refused when
#     it breaks a rule (above the ceiling with the tenant's own guarantee, kept above it, a
#     project's part above it or of a class the tenant has none of, kept on a project, by a
#     tenant-admin, a CLI call without a guarantee), each refusal changing nothing;
#  2. blue runs 4 A100 and 4 H100 jobs: its guarantee covers the first 4, it borrows 2 H100s,
#     and the 2 others wait (borrow_limit): red's kept 2 are never lent;
#  3. red's project-user (no right to preempt) submits 4 H100 jobs: 2 start on the kept
#     cards, 2 reclaim blue's 2 borrowed H100 jobs and run within two rounds; blue's A100
#     work (owned) is untouched; red's share shows its class figures, never who borrowed;
#  4. red's A100 job counts against red's own guarantee (none): it would borrow, nothing is
#     idle, it waits and stops nobody; a fifth H100 job waits to borrow above the class's
#     guarantee, and `job explain` says which guarantee each one is above;
#  5. lifting the class guarantee (none), audited.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_class_guarantees.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/gsleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"mix8","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"},
          {"model":"H100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF

start_server
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
gp class create h100.1x --form whole --models H100-80GB --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t --class development
    assert_rc 0
done
user ru project-user red p
user bu project-user blue p
user ra tenant-admin red
RU=$TOK_ru BU=$TOK_bu RA=$TOK_ra

note "a class guarantee: set, shown, refused when it breaks a rule"
gp quota set --tenant red --gpus 8
assert_rc 0
gp quota set --tenant blue --gpus 8 --guaranteed-gpus 4
assert_rc 0
gp -o json share set --tenant red --class h100.1x --guaranteed-gpus 4 --kept-gpus 2
assert_rc 0
assert_json '.class_guarantees | map("\(.class) \(.guaranteed_gpus) \(.kept_gpus) \(.in_use_gpus)") | join(",")' \
    "h100.1x 4 2 0" "$OUT_FILE"
assert_json '"\(.guaranteed_gpus) \(.applies)"' "null true" "$OUT_FILE"
gp -o json quota show --tenant red
assert_rc 0
assert_json '.class_guarantees["h100.1x"] | "\(.guaranteed_gpus) \(.kept_gpus)"' "4 2" "$OUT_FILE"
gp share set --tenant red --guaranteed-gpus 5 # with the class's 4: 9, above the ceiling 8
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "guaranteed_gpus, class_guarantees and pool_guarantees add up to 9, above the gpus ceiling 8"
gp share set --tenant red --class h100.1x --guaranteed-gpus 1 --kept-gpus 2
assert_rc 1
assert_file_contains "$ERR_FILE" "keeps 2 GPUs, more than its guaranteed_gpus 1"
gp share set --tenant red --class h100.1x --kept-gpus 1
assert_rc 2
assert_file_contains "$ERR_FILE" "give --guaranteed-gpus N"
# a project's part of the class's guarantee: within it, of one the tenant has, kept a tenant's
gp share set --tenant red --project p --class h100.1x --guaranteed-gpus 5
assert_rc 1
assert_file_contains "$ERR_FILE" "the projects' parts would add up to 5 GPUs, above tenant red's guarantee of class h100.1x of 4"
gp share set --tenant red --project p --class a100.1x --guaranteed-gpus 1
assert_rc 1
assert_file_contains "$ERR_FILE" "tenant red has no guarantee of class a100.1x: a project's is a part of its tenant's"
api PATCH /api/v1/tenants/red/projects/p/quota '{"class_guarantees":{"h100.1x":{"guaranteed_gpus":1,"kept_gpus":1}}}'
assert_status 400
assert_json .error.message "kept_gpus and borrow_weight are a tenant's; a project has parts of its tenant's guarantees (guaranteed_gpus, class_guarantees, pool_guarantees)" "$BODY_FILE"
api PATCH /api/v1/tenants/red/shares '{"class_guarantees":{"h100.1x":{"guaranteed_gpus":2,"weight":1}}}'
assert_status 400
as "$RA" share set --tenant red --class h100.1x --guaranteed-gpus 6
assert_denied 403
gp -o json share show --tenant red # nothing changed
assert_rc 0
assert_json '.class_guarantees | map("\(.class) \(.guaranteed_gpus) \(.kept_gpus)") | join(",")' \
    "h100.1x 4 2" "$OUT_FILE"

# sub TOKEN TENANT NAME CLASS: a 1-GPU sleeping job; JID
sub() {
    as "$1" -o json job submit --tenant "$2" --project p "$3" --class "$4" -- "$BIN/gsleep" 600
    assert_rc 0
    JID=$(jout .id)
}
# show TOKEN TENANT ID FIELD
show() {
    as "$1" -o json job show --tenant "$2" --project p "$3"
    jout "$4"
}
running_of() {
    as "$1" -o json job list --tenant "$2" --project p
    jout '[.items[] | select(.state == "running")] | length'
}
count_is() { [ "$(running_of "$1" "$2")" == "$3" ]; }
reason_has() { show "$1" "$2" "$3" .reason | grep -q -- "$4"; }

note "blue borrows H100s up to red's kept part, never into it"
BA=() BH=()
for i in 1 2 3 4; do
    sub "$BU" blue "a$i" a100.1x
    BA+=("$JID")
    sleep 0.05
done
for i in 1 2 3 4; do
    sub "$BU" blue "h$i" h100.1x
    BH+=("$JID")
    sleep 0.05
done
poll 20 count_is "$BU" blue 6 || fail "blue's 6 jobs did not start"
_pass
poll 10 reason_has "$BU" blue "${BH[3]}" "borrow_limit" || fail "blue's last H100 job: $(show "$BU" blue "${BH[3]}" .reason)"
_pass
BORROWED=""
for j in "${BA[@]}" "${BH[@]}"; do BORROWED+="$(show "$BU" blue "$j" .borrowed) "; done
assert_eq "$BORROWED" "false false false false true true false false " "blue's H100 jobs above its guarantee are borrowed"
sleep 3 # a few more rounds: the kept cards stay idle
assert_eq "$(running_of "$BU" blue)" 6 "red's kept H100s are never lent"
as "$RA" -o json share show --tenant red # what of its class's guarantee is lent: 2 (not who to)
assert_rc 0
assert_json '.class_guarantees | map("\(.class) \(.in_use_gpus) \(.borrowed_gpus) \(.lent_gpus)") | join(",")' \
    "h100.1x 0 0 2" "$OUT_FILE"
assert_json '"\(.lent_gpus) \(.in_use_gpus)"' "2 0" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "blue"
gp -o json audit list --action share.lend --tenant red
assert_rc 0
assert_json '.items | last | .summary.to' 2 "$OUT_FILE"

note "red's H100 jobs take the kept cards, then reclaim blue's borrowed ones"
RH=()
for i in 1 2 3 4; do
    sub "$RU" red "rh$i" h100.1x
    RH+=("$JID")
done
poll 30 count_is "$RU" red 4 || fail "red's 4 H100 jobs did not all start: $(show "$RU" red "${RH[3]}" .reason)"
_pass
assert_eq "$(running_of "$BU" blue)" 4 "blue keeps its 4 A100 jobs"
for j in "${BA[@]}"; do assert_eq "$(show "$BU" blue "$j" .state)" running "blue's owned A100 job runs"; done
for j in "${BH[0]}" "${BH[1]}"; do
    assert_eq "$(show "$BU" blue "$j" .state)" queued "a reclaimed H100 job is queued again"
done
as "$BU" -o json job list --tenant blue --project p
assert_file_lacks "$OUT_FILE" "red"
for j in "${RH[@]}"; do assert_eq "$(show "$RU" red "$j" .borrowed)" false "red's H100 job is owned"; done
gp -o json audit list --action job.reclaim --tenant blue
assert_rc 0
assert_json '.items | length' 2 "$OUT_FILE"
as "$RA" -o json share show --tenant red
assert_rc 0
assert_json '.class_guarantees | map("\(.class) \(.in_use_gpus) \(.borrowed_gpus) \(.lent_gpus)") | join(",")' \
    "h100.1x 4 0 0" "$OUT_FILE"
assert_json '"\(.in_use_gpus) \(.borrowed_gpus)"' "4 0" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "blue"
gp -o json share show --tenant blue
assert_rc 0
assert_json '"\(.in_use_gpus) \(.borrowed_gpus) \(.class_guarantees | length)"' "4 0 0" "$OUT_FILE"

note "red's A100 work counts against red's own guarantee, none: it waits, stops nobody"
sub "$RU" red ra1 a100.1x
RA1=$JID
poll 10 reason_has "$RU" red "$RA1" "borrow_limit: tenant red above its guarantee of 0 GPUs" ||
    fail "red's A100 job: $(show "$RU" red "$RA1" .reason)"
_pass
assert_eq "$(running_of "$BU" blue)" 4 "borrowed work reclaims nothing"
as "$RA" -o json job explain --tenant red --project p "$RA1"
assert_rc 0
assert_json '"\(.borrow.guaranteed_gpus) \(.borrow.class // "none")"' "0 none" "$OUT_FILE"
note "red's fifth H100 job is above its class's guarantee: it waits to borrow, said so"
sub "$RU" red rh5 h100.1x
RH5=$JID
poll 10 reason_has "$RU" red "$RH5" "borrow_limit: tenant red above its guarantee of 4 GPUs for class h100.1x" ||
    fail "red's fifth H100 job: $(show "$RU" red "$RH5" .reason)"
_pass
as "$RA" -o json job explain --tenant red --project p "$RH5"
assert_rc 0
assert_json '"\(.borrow.guaranteed_gpus) \(.borrow.class) \(.borrow.needs_gpus)"' "4 h100.1x 1" "$OUT_FILE"
assert_json '.notes | map(select(test("guarantee of 4 GPUs for class h100.1x"))) | length' 1 "$OUT_FILE"
as "$RU" job cancel --tenant red --project p "$RH5"
assert_rc 0

note "lifting the class guarantee, audited"
gp -o json share set --tenant red --class h100.1x --guaranteed-gpus none
assert_rc 0
assert_json '.class_guarantees | length' 0 "$OUT_FILE"
gp -o json audit list --action share.change --tenant red
assert_rc 0
assert_json '[.items[] | select(.status == 200)] | length' 2 "$OUT_FILE"
assert_json '[.items[] | select(.status == 200)] | last | .summary.to.class_guarantees | length' 0 "$OUT_FILE"

done_testing
