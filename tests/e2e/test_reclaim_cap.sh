#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_reclaim_cap.sh - the reclaim cap end to end (docs/scheduling.md,
# "Guarantees", rule 4), on one simulated 4-GPU node:
#
#  1. the scheduler policy: its defaults (3 stops in 3600 s), refused when out
#     of range or set by a tenant-admin, set by the platform-admin to 2;
#  2. blue (guarantee 2, ceiling 8) runs 4 jobs, 2 of them borrowed; red
#     (guarantee 2) submits 2 jobs twice: each time they reclaim blue's two
#     borrowed jobs, then end, and blue borrows the cards back; the second
#     reclaim drives blue's jobs to the cap;
#  3. red's third pair finds only capped work: nobody is stopped, they wait
#     with `reclaim_capped`; `job explain` says so for red's job ("reclaim
#     would return ... no longer chooses them", never naming blue) and for
#     blue's ("preempted 2 times in the last 1h; reclaim no longer chooses
#     it"); a job of blue's waiting to borrow is explained too (needs, idle);
#  4. /metrics: gpupool_sched_reclaims_total counts blue's 4 reclaims,
#     gpupool_sched_preemptions_total none, gpupool_sched_preemption_chain_max
#     is 2;
#  5. a restarted server (the stops are read from the store) still holds the
#     cap; lifting the cap (a larger one) lets red reclaim again.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_reclaim_cap.sh
. "$(dirname "$0")/lib.sh"

workload_bin
ln -s "$(command -v sleep)" "$BIN/csleep"

cat >"$E2E_TMP/node.json" <<'EOF'
{"nodes":[{"name":"c4","cpus":32,"memory_gib":256,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":4,"mode":"whole"}]}]}
EOF
for u in ba ru bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done

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
    gp -o json quota set --tenant $t --gpus $([ $t == red ] && echo 4 || echo 8) --guaranteed-gpus 2
    assert_rc 0
done
user ba tenant-admin blue
BA=$(head -n 1 "$OUT_FILE")
user ru project-user red p
RU=$(head -n 1 "$OUT_FILE")
user bu project-user blue p
BU=$(head -n 1 "$OUT_FILE")
tok() { if [ "$1" == red ]; then echo "$RU"; else echo "$BU"; fi; }

note "the scheduler policy: defaults, refusals, set"
gp -o json priority policy
assert_rc 0
assert_json '"\(.reclaim_cap) \(.reclaim_window_seconds)"' "3 3600" "$OUT_FILE"
gp priority policy --reclaim-cap 0
assert_rc 1
assert_file_contains "$ERR_FILE" "field 'reclaim_cap' must be at least 1"
gp priority policy --reclaim-window 10
assert_rc 1
assert_file_contains "$ERR_FILE" "field 'reclaim_window_seconds' must be at least 60"
as "$BA" priority policy --reclaim-cap 50
assert_denied 403
as "$BA" -o json priority policy # anyone signed in reads it
assert_rc 0
assert_json .reclaim_cap 3 "$OUT_FILE"
gp -o json priority policy --reclaim-cap 2
assert_rc 0
assert_json '"\(.reclaim_cap) \(.reclaim_window_seconds)"' "2 3600" "$OUT_FILE"
gp -o json audit list --action scheduler_policy.change
assert_rc 0
assert_json '[.items[] | .result] | sort | join(",")' "denied,error,error,ok" "$OUT_FILE"
assert_json '[.items[] | select(.result == "ok") | .summary.reclaim_cap] | join(",")' 2 "$OUT_FILE"

# sub TENANT NAME: a 1-GPU sleeping job, as the tenant's project-user; JID
sub() {
    as "$(tok "$1")" -o json job submit --tenant "$1" --project p "$2" --class a100.1x -- \
        "$BIN/csleep" 600
    assert_rc 0
    JID=$(jout .id)
}
state() {
    gp -o json job show --tenant "$1" --project p "$2"
    jout .state
}
is_running() { [ "$(state "$@")" == running ]; }
running_of() {
    gp -o json job list --tenant "$1" --project p
    jout '[.items[] | select(.state == "running")] | length'
}
count_is() { [ "$(running_of "$1")" == "$2" ]; }

note "blue borrows 2 above its guarantee while red is idle"
BL=()
for i in 1 2 3 4; do
    sub blue "b$i"
    BL+=("$JID")
    sleep 0.05 # distinct start times, in submit order
done
poll 20 count_is blue 4 || fail "blue's 4 jobs did not all start"
_pass

note "red reclaims twice: blue's borrowed jobs reach the cap"
for pass in 1 2; do
    sub red "r${pass}a"
    RA=$JID
    sub red "r${pass}b"
    RB=$JID
    poll 20 is_running red "$RA" || fail "pass $pass: red's first job did not start by reclaim"
    poll 20 is_running red "$RB" || fail "pass $pass: red's second job did not start by reclaim"
    _pass
    count_is blue 2 || fail "pass $pass: blue should keep its guarantee of 2"
    _pass
    as "$RU" job cancel --tenant red --project p "$RA"
    assert_rc 0
    as "$RU" job cancel --tenant red --project p "$RB"
    assert_rc 0
    poll 20 count_is blue 4 || fail "pass $pass: blue did not borrow the cards back"
    _pass
done
for i in 2 3; do
    gp -o json job show --tenant blue --project p "${BL[i]}"
    assert_json .preemptions 2 "$OUT_FILE"
    assert_json .borrowed true "$OUT_FILE"
done

note "the third time: only capped work holds red's guarantee, nobody is stopped"
sub red r3a
R3A=$JID
sub red r3b
R3B=$JID
capped() {
    gp -o json job show --tenant red --project p "$R3A"
    [[ "$(jout .reason)" == reclaim_capped:* ]]
}
poll 10 capped || fail "red's job should wait with reclaim_capped (reason: $(jout .reason))"
_pass
assert_match "$(jout .reason)" \
    "^reclaim_capped: tenant red's guarantee is lent to [12] borrowed jobs? preempted at least 2 times in the last 1h, which reclaim no longer stops" \
    "the owner's reason"
assert_file_lacks "$OUT_FILE" "blue"
sleep 2 # rounds go by: still nobody stopped
count_is blue 4 || fail "blue's capped jobs must keep running"
_pass
assert_ne "$(state red "$R3A")" running "red's job waits"
gp -o json audit list --action job.reclaim
assert_json '.items | length' 4 "$OUT_FILE"

note "job explain: the owner held back by the cap, the capped job, a job waiting to borrow"
as "$RU" -o json job explain --tenant red --project p "$R3A"
assert_rc 0
assert_json .reclaim.capped true "$OUT_FILE"
assert_match "$(jout .reclaim.capped_jobs)" '^[12]$' "capped jobs holding red's place"
assert_match "$(jout '.notes | join(" | ")')" \
    "reclaim would return tenant red's guarantee from [12] borrowed jobs?, but each was preempted at least 2 times in the last 1h: reclaim no longer chooses them" \
    "the owner's note"
assert_file_lacks "$OUT_FILE" "blue"
as "$BA" -o json job explain --tenant blue --project p "${BL[3]}"
assert_rc 0
assert_json .state running "$OUT_FILE"
assert_json '"\(.preempted.times) \(.preempted.reclaim_cap) \(.preempted.window_seconds) \(.preempted.reclaim_victim)"' \
    "2 2 3600 false" "$OUT_FILE"
assert_json '.notes[0]' "preempted 2 times in the last 1h; reclaim no longer chooses it" "$OUT_FILE"
assert_file_lacks "$OUT_FILE" "red"
as "$BA" job explain --tenant blue --project p "${BL[3]}"
assert_rc 0
assert_file_contains "$OUT_FILE" "note: preempted 2 times in the last 1h; reclaim no longer chooses it"
# blue asks for a fifth card: above its guarantee, nothing idle to lend
sub blue b5
B5=$JID
borrow_wait() {
    gp -o json job show --tenant blue --project p "$B5"
    [[ "$(jout .reason)" == borrow_limit:* ]]
}
poll 10 borrow_wait || fail "b5 should wait to borrow (reason: $(jout .reason))"
_pass
as "$BA" -o json job explain --tenant blue --project p "$B5"
assert_rc 0
assert_json '"\(.borrow.guaranteed_gpus) \(.borrow.needs_gpus) \(.borrow.idle_gpus)"' "2 1 0" "$OUT_FILE"
assert_match "$(jout '.notes | join(" | ")')" \
    "^it waits to borrow: tenant blue is above its guarantee of 2 GPUs, so it runs only on idle capacity; it needs 1 GPUs, 0 are idle to lend now" \
    "the borrower's note"
assert_file_lacks "$OUT_FILE" "red"
as "$BU" job cancel --tenant blue --project p "$B5"
assert_rc 0

note "/metrics: reclaims apart from preemptions, the longest preemption chain"
curl -s -o "$E2E_TMP/scrape.txt" -H "Authorization: Bearer $ADMIN" "$URL/metrics"
value() { grep -E "$1" "$E2E_TMP/scrape.txt" | head -n 1 | awk '{print $NF}'; }
assert_eq "$(value '^gpupool_sched_reclaims_total\{tenant="blue",priority_class="normal"\}')" 4 \
    "blue's reclaims"
assert_eq "$(value '^gpupool_sched_preemptions_total\{tenant="blue",priority_class="normal"\}')" 0 \
    "a reclaim is no preemption"
assert_eq "$(value '^gpupool_sched_preemption_chain_max ')" 2 "the longest preemption chain"
assert_file_contains "$E2E_TMP/scrape.txt" "# TYPE gpupool_sched_preemption_chain_max gauge"

note "a restarted server reads the stops from the store: the cap holds"
stop_server
start_server
ADMIN=$TOKEN
gp -o json job explain --tenant red --project p "$R3A"
assert_rc 0
assert_json .reclaim.capped true "$OUT_FILE"
curl -s -o "$E2E_TMP/scrape.txt" -H "Authorization: Bearer $ADMIN" "$URL/metrics"
assert_eq "$(value '^gpupool_sched_preemption_chain_max ')" 2 "the chain, after a restart"

note "a larger cap: reclaim chooses them again"
gp -o json priority policy --reclaim-cap 3
assert_rc 0
reclaimed_again() {
    gp -o json audit list --action job.reclaim
    [ "$(jout '.items | length')" -ge 5 ]
}
poll 10 reclaimed_again || fail "red's jobs should reclaim once the cap is raised"
_pass

done_testing
