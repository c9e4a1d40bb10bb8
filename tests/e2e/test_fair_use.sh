#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_fair_use.sh - fair use of idle capacity among borrowers (docs/scheduling.md,
# "Guarantees", fair use), on one simulated 16-GPU node: red is guaranteed 10 GPUs and runs
# nothing; blue, green and gold are guaranteed 2 each and borrow the rest.
#
#  1. the borrowing half-life: shown, set by a platform-admin (audited), refused when 0 or
#     out of range or by a tenant-admin, each refusal changing nothing; and a pool's own
#     (pool set --borrow-half-life), kept when left out, back to the policy's with default;
#  2. recent borrowing: blue alone borrows 8 GPUs for a while; once it stops, its overview's
#     recent_borrowed_gpu_hours is above 0 and decays (a half-life of 60 s);
#  3. shares by weight and by recent use: with the node cordoned, each borrower queues 12
#     one-GPU jobs (blue's first, so that queue order alone would give blue every idle
#     card), gold has weight 2; uncordoned, one round places all 16: each its 2 owned, then
#     the 10 idle go to gold most (weight 2), green next, and blue - which borrowed recently -
#     least.  Without fair use blue would borrow all 10.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_fair_use.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/gsleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"g16","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":16,"mode":"whole"}]}]}
EOF
for u in ta blue green gold; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

start_server
ADMIN=$TOKEN
start_agent
gp class create a100.1x --form whole --models A100-80GB --cpus 1 --memory 1
assert_rc 0
for t in red blue green gold; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t --class development
    assert_rc 0
done
gp quota set --tenant red --gpus 16 --guaranteed-gpus 10
assert_rc 0
for t in blue green gold; do
    gp quota set --tenant $t --gpus 16 --guaranteed-gpus 2
    assert_rc 0
done
user ta tenant-admin blue
TA=$TOK_ta
for t in blue green gold; do user $t project-user $t p; done
tok() { local v="TOK_$1"; echo "${!v}"; }

note "the borrowing half-life: shown, set, refused"
gp -o json priority policy
assert_rc 0
assert_json .borrow_half_life_seconds 21600 "$OUT_FILE"
gp priority policy --borrow-half-life 0
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "borrow_half_life_seconds"
as "$TA" priority policy --borrow-half-life 600
assert_denied 403
gp -o json priority policy --borrow-half-life 60
assert_rc 0
assert_json '"\(.borrow_half_life_seconds) \(.reclaim_cap)"' "60 3" "$OUT_FILE"
gp -o json audit list --action scheduler_policy.change
assert_rc 0
assert_json '[.items[] | select(.status == 200)][0].summary.borrow_half_life_seconds' 60 "$OUT_FILE"

note "a half-life per pool: set, shown, refused, back to the policy's, audited"
gp -o json pool show default
assert_rc 0
assert_json .borrow_half_life_seconds null "$OUT_FILE"
gp pool set default --borrow-half-life 30
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "field 'borrow_half_life_seconds' must be at least 60"
gp pool set default --borrow-half-life soon
assert_rc 2
as "$TA" pool set default --borrow-half-life 600
assert_denied 403
gp -o json pool set default --borrow-half-life 600
assert_rc 0
assert_json '"\(.borrow_half_life_seconds) \(.tenants | length)"' "600 0" "$OUT_FILE"
gp -o json pool set default --description "every node" # left out: kept
assert_rc 0
assert_json .borrow_half_life_seconds 600 "$OUT_FILE"
gp -o json pool set default --borrow-half-life default
assert_rc 0
assert_json .borrow_half_life_seconds null "$OUT_FILE"
gp -o json audit list --action pool.change
assert_rc 0
assert_json '[.items[] | select(.status == 200) | .summary.borrow_half_life_seconds] | map(tostring) | join(",")' \
    "600,null,null" "$OUT_FILE"

# sub TENANT NAME: a 1-GPU sleeping job; JID
sub() {
    as "$(tok "$1")" -o json job submit --tenant "$1" --project p "$2" --class a100.1x -- "$BIN/gsleep" 600
    assert_rc 0
    JID=$(jout .id)
}
running_of() {
    as "$(tok "$1")" -o json job list --tenant "$1" --project p
    jout '[.items[] | select(.state == "running")] | length'
}
count_is() { [ "$(running_of "$1")" == "$2" ]; }
recent_of() {
    gp -o json tenant overview "$1"
    jout .share.recent_borrowed_gpu_hours
}
cancel_all() {
    as "$(tok "$1")" -o json job list --tenant "$1" --project p
    local id
    for id in $(jout '.items[] | select(.state == "running" or .state == "queued" or .state == "admitted") | .id'); do
        as "$(tok "$1")" job cancel --tenant "$1" --project p "$id"
        assert_rc 0
    done
}

note "recent borrowing: blue borrows 8 for a while, then stops"
for i in $(seq 1 10); do sub blue "a$i"; done
poll 20 count_is blue 10 || fail "blue's 10 jobs did not all start"
_pass
sleep 12
cancel_all blue
poll 20 count_is blue 0 || fail "blue's jobs did not end"
_pass
sleep 1
R1=$(recent_of blue)
assert_match "$R1" '^0\.0[0-9]+$' "blue's recent borrowing is counted (GPU-hours)"
assert_eq "$(recent_of green)" 0 "green borrowed nothing"
sleep 3
R2=$(recent_of blue)
awk -v a="$R1" -v b="$R2" 'BEGIN { exit !(b <= a && b > 0) }' || fail "recent borrowing should decay: $R1 then $R2"
_pass

note "shares of idle capacity by weight and recent use"
gp quota set --tenant gold --borrow-weight 2
assert_rc 0
gp node cordon g16
assert_rc 0
for t in blue green gold; do
    for i in $(seq 1 12); do sub $t "$t$i"; done
done
gp node uncordon g16
assert_rc 0
all_placed() { [ "$(($(running_of blue) + $(running_of green) + $(running_of gold)))" == 16 ]; }
poll 30 all_placed || fail "the 16 cards were not all placed"
_pass
B=$(($(running_of blue) - 2)) G=$(($(running_of green) - 2)) AU=$(($(running_of gold) - 2))
note "borrowed: blue $B, green $G, gold $AU"
assert_eq "$((B + G + AU))" 10 "the 10 idle cards are lent"
[ "$AU" -gt "$G" ] || fail "gold (weight 2) should borrow more than green: $AU vs $G"
_pass
[ "$G" -gt "$B" ] || fail "blue (recent borrowing) should borrow less than green: $B vs $G"
_pass
gp -o json tenant overview gold
assert_json .share.borrowed_gpus "$AU" "$OUT_FILE"
as "$TA" -o json tenant overview blue
assert_rc 0
assert_json .share.borrow_half_life_seconds 60 "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "gold"
as "$(tok blue)" -o json job list --tenant blue --project p
WAIT=$(jout '[.items[] | select(.state == "queued")][0].id')
as "$(tok blue)" -o json job explain --tenant blue --project p "$WAIT"
assert_rc 0
assert_json '"\(.borrow.borrow_weight) \(.borrow.recent_borrowed_gpu_hours > 0)"' "1 true" "$OUT_FILE"
assert_match "$(jout '.notes | join(" ")')" 'idle capacity goes to borrowers by weight and recent borrowing' \
    "explain says how borrowers are ordered"
for t in blue green gold; do cancel_all $t; done

done_testing
