#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_pool_guarantees.sh - a guarantee in one pool over a class that spans pools
# (docs/scheduling.md, "A guarantee per pool"), on two simulated nodes of 4 A100s each, one in
# pool east and one in pool west, with one class a100.1x on both: red is guaranteed 4 GPUs in
# east and nothing else; blue is guaranteed 2 GPUs anywhere.
#
#  1. the pool guarantee through `share set --pool` and the quota: set, shown, refused when it
#     breaks a rule (above the ceiling with the tenant's other guarantees, --pool with --class,
#     a project's part above it or of a pool the tenant has none in, kept on a project, by a
#     tenant-admin, a CLI call without a guarantee), each refusal changing nothing; project p
#     takes all of it as its part (its jobs below run within it);
#  2. blue runs 8 jobs on both pools: its guarantee covers 2, it borrows 6;
#  3. red's project-user (no right to preempt) submits 4 jobs: admission gives them east, they
#     reclaim blue's work there and run there, within two rounds; blue keeps its guarantee and
#     its work in west; red's share shows east's figures, never who borrowed;
#  4. red's fifth job is above east's guarantee and red has none of its own: it would borrow,
#     nothing is idle, it waits, says so, and stops nobody; with 5 in east it is given east
#     (job show's guarantee_pool), where red's own work leaves no room: it waits there;
#  5. lifting the pool guarantee (none): refused while the project's part stands, then
#     audited.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_pool_guarantees.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/gsleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"east1","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]},
 {"name":"west1","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF

start_server
ADMIN=$TOKEN
start_agent
for p in east west; do
    gp pool create $p
    assert_rc 0
    gp node pool ${p}1 $p
    assert_rc 0
done
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
user ra tenant-admin red
RU=$TOK_ru BU=$TOK_bu RA=$TOK_ra

note "a pool guarantee: set, shown, refused when it breaks a rule"
gp quota set --tenant red --gpus 8
assert_rc 0
gp quota set --tenant blue --gpus 8 --guaranteed-gpus 2
assert_rc 0
gp -o json share set --tenant red --pool east --guaranteed-gpus 4
assert_rc 0
assert_json '.pool_guarantees | map("\(.pool) \(.guaranteed_gpus) \(.kept_gpus) \(.in_use_gpus)") | join(",")' \
    "east 4 0 0" "$OUT_FILE"
assert_json '"\(.guaranteed_gpus) \(.applies) \(.class_guarantees | length)"' "null true 0" "$OUT_FILE"
gp -o json quota show --tenant red
assert_rc 0
assert_json '.pool_guarantees.east | "\(.guaranteed_gpus) \(.kept_gpus)"' "4 0" "$OUT_FILE"
gp share set --tenant red --guaranteed-gpus 5 # with east's 4: 9, above the ceiling 8
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "guaranteed_gpus, class_guarantees and pool_guarantees add up to 9, above the gpus ceiling 8"
gp share set --tenant red --pool east --guaranteed-gpus 1 --kept-gpus 2
assert_rc 1
assert_file_contains "$ERR_FILE" "pool_guarantees: 'east' keeps 2 GPUs, more than its guaranteed_gpus 1"
gp share set --tenant red --pool east --kept-gpus 1
assert_rc 2
assert_file_contains "$ERR_FILE" "share set --pool: give --guaranteed-gpus N"
gp share set --tenant red --pool east --class a100.1x --guaranteed-gpus 1
assert_rc 2
assert_file_contains "$ERR_FILE" "--class or --pool, not both"
# a project's part of the pool's guarantee: within it, of one the tenant has, kept a tenant's
gp share set --tenant red --project p --pool east --guaranteed-gpus 5
assert_rc 1
assert_file_contains "$ERR_FILE" "the projects' parts would add up to 5 GPUs, above tenant red's guarantee in pool east of 4"
gp share set --tenant red --project p --pool west --guaranteed-gpus 1
assert_rc 1
assert_file_contains "$ERR_FILE" "tenant red has no guarantee in pool west: a project's is a part of its tenant's"
api PATCH /api/v1/tenants/red/projects/p/quota '{"pool_guarantees":{"east":{"guaranteed_gpus":1,"kept_gpus":1}}}'
assert_status 400
assert_json .error.message "kept_gpus and borrow_weight are a tenant's; a project has parts of its tenant's guarantees (guaranteed_gpus, class_guarantees, pool_guarantees)" "$BODY_FILE"
gp -o json share set --tenant red --project p --pool east --guaranteed-gpus 4 # all of it: p's
assert_rc 0
assert_json '.pool_guarantees | map("\(.pool) \(.guaranteed_gpus) \(.tenant_guaranteed_gpus)") | join(",")' \
    "east 4 4" "$OUT_FILE"
api PATCH /api/v1/tenants/red/shares '{"pool_guarantees":"east"}'
assert_status 400
api PATCH /api/v1/tenants/red/shares '{"pool_guarantees":{"east":{"guaranteed_gpus":2,"weight":1}}}'
assert_status 400
as "$RA" share set --tenant red --pool east --guaranteed-gpus 6
assert_denied 403
gp -o json share show --tenant red # nothing changed
assert_rc 0
assert_json '.pool_guarantees | map("\(.pool) \(.guaranteed_gpus) \(.kept_gpus)") | join(",")' \
    "east 4 0" "$OUT_FILE"

# sub TOKEN TENANT NAME: a 1-GPU sleeping job of a100.1x (both pools); JID
sub() {
    as "$1" -o json job submit --tenant "$2" --project p "$3" --class a100.1x -- "$BIN/gsleep" 600
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

note "blue borrows all that is idle, in both pools"
BJ=()
for i in 1 2 3 4 5 6 7 8; do
    sub "$BU" blue "b$i"
    BJ+=("$JID")
    sleep 0.05
done
poll 20 count_is "$BU" blue 8 || fail "blue's 8 jobs did not start"
_pass
gp -o json share show --tenant blue
assert_rc 0
assert_json '"\(.in_use_gpus) \(.borrowed_gpus)"' "8 6" "$OUT_FILE"

note "red's jobs are given east, reclaim blue's work there and run there"
RJ=()
for i in 1 2 3 4; do
    sub "$RU" red "r$i"
    RJ+=("$JID")
done
poll 30 count_is "$RU" red 4 || fail "red's 4 jobs did not all start: $(show "$RU" red "${RJ[3]}" .reason)"
_pass
for j in "${RJ[@]}"; do
    assert_eq "$(show "$RU" red "$j" .bindings[0].node)" east1 "red's job runs in east"
    assert_eq "$(show "$RU" red "$j" .borrowed)" false "red's job is owned"
done
assert_eq "$(running_of "$BU" blue)" 4 "blue keeps 4 (its guarantee, 2, and 2 borrowed)"
WEST=0
for j in "${BJ[@]}"; do
    if [ "$(show "$BU" blue "$j" .state)" == running ]; then
        assert_eq "$(show "$BU" blue "$j" .bindings[0].node)" west1 "blue's running job is in west"
        WEST=$((WEST + 1))
    fi
done
assert_eq "$WEST" 4 "blue's work in west is untouched"
as "$BU" -o json job list --tenant blue --project p
assert_file_lacks "$OUT_FILE" "red"
gp -o json audit list --action job.reclaim --tenant blue
assert_rc 0
assert_json '.items | length' 4 "$OUT_FILE"
as "$RA" -o json share show --tenant red
assert_rc 0
assert_json '.pool_guarantees | map("\(.pool) \(.in_use_gpus) \(.borrowed_gpus) \(.lent_gpus)") | join(",")' \
    "east 4 0 0" "$OUT_FILE"
assert_json '"\(.in_use_gpus) \(.borrowed_gpus)"' "4 0" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "blue"
gp -o json share show --tenant blue
assert_rc 0
assert_json '"\(.in_use_gpus) \(.borrowed_gpus)"' "4 2" "$OUT_FILE"
assert_json '.pool_guarantees | length' 0 "$OUT_FILE"

note "red's fifth job is above east's guarantee: it waits to borrow, stops nobody"
sub "$RU" red r5
R5=$JID
poll 10 reason_has "$RU" red "$R5" "borrow_limit: tenant red above its guarantee of 0 GPUs (and its guarantees in the pools open to it)" ||
    fail "red's fifth job: $(show "$RU" red "$R5" .reason)"
_pass
sleep 2 # a few more rounds
assert_eq "$(running_of "$BU" blue)" 4 "borrowed work reclaims nothing"
as "$RA" -o json job explain --tenant red --project p "$R5"
assert_rc 0
assert_json '"\(.borrow.guaranteed_gpus) \(.borrow.needs_gpus)"' "0 1" "$OUT_FILE"
note "with more of east's guarantee it is given east, full of red's own work: it waits there"
gp share set --tenant red --pool east --guaranteed-gpus 5
assert_rc 0
given_east() { [ "$(show "$RU" red "$R5" .guarantee_pool)" == east ]; }
poll 10 given_east || fail "red's fifth job: $(show "$RU" red "$R5" .state) $(show "$RU" red "$R5" .reason)"
_pass
assert_eq "$(show "$RU" red "$R5" .state)" admitted "red's fifth job waits admitted"
assert_match "$(show "$RU" red "$R5" .reason)" "in pool east: its tenant's guarantee there" "its reason names east"
assert_eq "$(running_of "$BU" blue)" 4 "red's own work in east is nobody's to reclaim"
as "$RU" job cancel --tenant red --project p "$R5"
assert_rc 0

note "lifting the pool guarantee (its project's part first), audited"
gp share set --tenant red --pool east --guaranteed-gpus none
assert_rc 1
assert_file_contains "$ERR_FILE" "tenant red's projects have parts of its guarantee in pool east adding up to 4 GPUs; lower theirs first"
gp share set --tenant red --project p --pool east --guaranteed-gpus none
assert_rc 0
gp -o json share set --tenant red --pool east --guaranteed-gpus none
assert_rc 0
assert_json '.pool_guarantees | length' 0 "$OUT_FILE"
gp -o json audit list --action share.change --tenant red
assert_rc 0
assert_json '[.items[] | select(.status == 200)] | length' 3 "$OUT_FILE"
assert_json '[.items[] | select(.status == 200)] | last | .summary.to.pool_guarantees | length' 0 "$OUT_FILE"

done_testing
