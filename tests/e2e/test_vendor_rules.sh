#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_vendor_rules.sh - compatibility rules across accelerator vendors, end to
# end: NVIDIA, AMD and Intel Gaudi nodes (and an old agent that names no
# vendor) register through the API as agents do (POST /api/v1/agent/register
# with a report whose gpus carry vendor, driver_version and stack, then
# heartbeats); classes name the vendors, driver minimums per vendor and the
# stack they accept; jobs name their image's stack.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_vendor_rules.sh
#
# Checked: a hostile report (unknown vendor, runtime or version, oversize
# stack) is refused and stores nothing; gpu list/show and node show/list give
# vendor, driver and stack (an old agent's card: nvidia, the node's driver);
# a class across nvidia+amd counts only their cards, a per-vendor driver
# minimum narrows it, a class no card could ever satisfy is refused with the
# reason, bad rules are refused (400, one-line CLI error), partition:<profile>
# is kept as mig:<profile>; a job with --stack rocm>=6.1 runs only on AMD
# (binding vendor amd; the node's assignment carries vendor and indexes); a
# job needing rocm>=9 stays queued with the rule in its reason and in job
# explain, and so does one under a driver minimum no card meets; a job of
# three cards never mixes vendors; per-vendor health: an Xid field on an AMD
# card means nothing, AMD bad pages and a Gaudi critical event fail the card
# and gate allocation, the policy's vendor sections change what is fatal;
# isolation: a tenant-admin cannot create classes or change the health policy
# (403) and nothing changes.  The rules' arithmetic is in
# tests/unit/test_compat.c, the per-vendor verdicts in tests/unit/test_health.c.
. "$(dirname "$0")/lib.sh"

# nodes only go silent after 10 minutes: the test's heartbeats are its own calls
start_server --node-timeout 600
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0

# ---------------------------------------------------------------- nodes of three vendors
# register NODE GPUS_JSON DRIVER [STATUS]: the agent's register call; NODE_TOKEN: its credential
register() {
    gp -o json jointoken create --ttl 600
    assert_rc 0
    local jt
    jt=$(jout .token)
    AUTH_HEADER='' api POST /api/v1/agent/register \
        "{\"join_token\":\"$jt\",\"node\":{\"name\":\"$1\",\"cpus\":64,\"memory_gib\":512,\"driver_version\":\"$3\",\"gpus\":$2}}"
    assert_status "${4:-201}"
    NODE_TOKEN=$(jq -r '.token // empty' "$BODY_FILE")
}
card() { # UUID INDEX MODEL MIB VENDOR DRIVER STACK
    printf '{"uuid":"%s","index":%s,"model":"%s","memory_mib":%s,"vendor":"%s","driver_version":"%s","stack":%s}' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$7"
}

note "a hostile report is refused and stores nothing"
for bad in "$(card GPU-x-0 0 H100 81920 arm 550.1 '{}')" \
    "$(card GPU-x-0 0 H100 81920 NVIDIA 550.1 '{}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.x '{}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.1 '{"opencl":"3.0"}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.1 '{"cuda":"12;rm"}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.1 '{"cuda":12}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.1 '["cuda"]')" \
    "$(card GPU-x-0 0 H100 81920 nvidia 550.1 '{"cuda":"12.4","rocm":"6.0","synapse":"1.1","x":"1"}')" \
    "$(card GPU-x-0 0 H100 81920 nvidia "$(printf '1.%.0s' {1..40})1" '{}')"; do
    register evil "[$bad]" 550.1 400
done
gp -o json jointoken create --ttl 600
AUTH_HEADER='' api POST /api/v1/agent/register \
    "{\"join_token\":\"$(jout .token)\",\"node\":{\"name\":\"evil\",\"cpus\":1,\"memory_gib\":1,\"source\":\"$(printf 'x%.0s' {1..300})\",\"gpus\":[]}}"
assert_status 400
gp -o json node list
assert_json '.items | length' 0 "$OUT_FILE"

NV="[$(card GPU-nv-0 0 'NVIDIA H100 80GB HBM3' 81920 nvidia 550.54.15 '{"cuda":"12.4"}'),
     $(card GPU-nv-1 1 'NVIDIA H100 80GB HBM3' 81920 nvidia 550.54.15 '{"cuda":"12.4"}')]"
AMD="[$(card GPU-amd-0 0 'AMD Instinct MI300X' 196608 amd 6.8.5 '{"rocm":"6.2.0"}'),
      $(card GPU-amd-1 1 'AMD Instinct MI300X' 196608 amd 6.8.5 '{"rocm":"6.2.0"}')]"
OLD="[$(card GPU-amdo-0 0 'AMD Instinct MI300X' 196608 amd 6.2.1 '{"rocm":"5.7"}')]"
HL="[$(card GPU-hl-0 0 'Intel Gaudi 3 HL-325L' 131072 intel 1.18.0 '{"synapse":"1.18.0"}'),
     $(card GPU-hl-1 1 'Intel Gaudi 3 HL-325L' 131072 intel 1.18.0 '{"synapse":"1.18.0"}')]"
LEGACY='[{"uuid":"GPU-leg-0","index":0,"model":"NVIDIA L40S","memory_mib":49152}]'
register nv-1 "$NV" 550.54.15
NV_TOKEN=$NODE_TOKEN
register amd-1 "$AMD" 6.8.5
AMD_TOKEN=$NODE_TOKEN
register amd-old "$OLD" 6.2.1
OLD_TOKEN=$NODE_TOKEN
register hl-1 "$HL" 1.18.0
HL_TOKEN=$NODE_TOKEN
register leg-1 "$LEGACY" 535.104.05
LEG_TOKEN=$NODE_TOKEN
# beat NODE TOKEN GPUS_JSON: a heartbeat; its answer (assignments) in BODY_FILE
beat() {
    AUTH_HEADER="Authorization: Bearer $2" api POST /api/v1/agent/heartbeat "{\"node\":\"$1\",\"gpus\":$3}"
    assert_status 200
}
quiet() { # UUID...: healthy signals for these cards
    local out="" u
    for u in "$@"; do out="$out${out:+,}{\"uuid\":\"$u\",\"signals\":{}}"; done
    echo "[$out]"
}
beat nv-1 "$NV_TOKEN" "$(quiet GPU-nv-0 GPU-nv-1)"
beat amd-1 "$AMD_TOKEN" "$(quiet GPU-amd-0 GPU-amd-1)"
beat amd-old "$OLD_TOKEN" "$(quiet GPU-amdo-0)"
beat hl-1 "$HL_TOKEN" "$(quiet GPU-hl-0 GPU-hl-1)"
beat leg-1 "$LEG_TOKEN" "$(quiet GPU-leg-0)"

note "cards show vendor, driver and stack; an old agent's card is NVIDIA with the node's driver"
gp -o json gpu list
assert_rc 0
assert_json '[.items[] | "\(.uuid)=\(.vendor)/\(.driver_version)/\(.stack | to_entries | map("\(.key):\(.value)") | join("+"))"] | join(",")' \
    "GPU-amd-0=amd/6.8.5/rocm:6.2.0,GPU-amd-1=amd/6.8.5/rocm:6.2.0,GPU-amdo-0=amd/6.2.1/rocm:5.7,GPU-hl-0=intel/1.18.0/synapse:1.18.0,GPU-hl-1=intel/1.18.0/synapse:1.18.0,GPU-leg-0=nvidia/535.104.05/,GPU-nv-0=nvidia/550.54.15/cuda:12.4,GPU-nv-1=nvidia/550.54.15/cuda:12.4" \
    "$OUT_FILE"
gp gpu list
assert_rc 0
assert_file_contains "$OUT_FILE" "rocm"
gp -o json gpu show GPU-hl-1
assert_json '.vendor + " " + .stack.synapse' "intel 1.18.0" "$OUT_FILE"
api GET /api/v1/nodes/amd-1
assert_status 200
assert_json '.vendors | join(",")' amd
assert_json '[.gpus[].vendor] | join(",")' amd,amd
gp -o json node list
assert_json '[.items[] | "\(.name):\(.vendors | join("+"))"] | join(",")' \
    "amd-1:amd,amd-old:amd,hl-1:intel,leg-1:nvidia,nv-1:nvidia" "$OUT_FILE"

# ---------------------------------------------------------------- classes
note "classes across vendors, with driver minimums per vendor and stack rules"
gp class create any.1x --form whole --models H100,MI300X --vendors nvidia,amd --cpus 1 --memory 1
assert_rc 0
gp class create amd68.1x --form whole --models MI300X --vendors amd --min-driver amd:6.8 \
    --min-driver 550 --cpus 1 --memory 1
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "nvidia"
gp class create amd68.1x --form whole --models MI300X --min-driver amd:6.8 --min-driver 550 \
    --stack rocm:6.0 --cpus 1 --memory 1
assert_rc 0
gp class create amd7.1x --form whole --models MI300X --vendors amd --min-driver amd:7.0 --cpus 1 --memory 1
assert_rc 0
gp class create gaudi.1x --form whole --models HL-325L --vendors intel --stack synapse:1.17 --cpus 1 --memory 1
assert_rc 0
gp class create mi.cpx --form partition:cpx.24gb --models MI300X --vendors amd --cpus 1 --memory 1
assert_rc 0
gp -o json class show mi.cpx
assert_json '.items[0].form // .form' "mig:cpx.24gb" "$OUT_FILE"
gp -o json class list
assert_rc 0
cap() { jq -r --arg c "$1" '.items[] | select(.name == $c) | "\(.capacity.total)/\(.capacity.free)"' "$OUT_FILE"; }
# any.1x: 2 H100 + 3 MI300X (the L40S and the Gaudi cards are other models or vendors)
assert_eq "$(cap any.1x)" "5/5" "any.1x counts NVIDIA and AMD cards"
# amd68.1x: the old AMD card's driver 6.2.1 is below 6.8 (and its ROCm 5.7 below 6.0)
assert_eq "$(cap amd68.1x)" "2/2" "amd68.1x leaves out the old driver"
assert_eq "$(cap amd7.1x)" "0/0" "no AMD card has driver 7.0"
assert_eq "$(cap gaudi.1x)" "2/2" "gaudi.1x"
assert_json '.items[] | select(.name == "amd68.1x") | "\(.vendors | join(","))|\(.min_drivers.amd)|\(.min_drivers.nvidia)|\(.min_driver)|\(.stack.rocm)"' \
    "|6.8|550|550|6.0" "$OUT_FILE"
assert_json '.items[] | select(.name == "any.1x") | .vendors | join(",")' "nvidia,amd" "$OUT_FILE"
gp class list
assert_rc 0
assert_file_contains "$OUT_FILE" "rocm"

note "a class no card could ever satisfy is refused with the reason; bad rules are refused"
gp class create nope.1x --form whole --models H100 --vendors amd --cpus 1 --memory 1
assert_rc 1
assert_one_line_error
assert_file_contains "$ERR_FILE" "no GPU could ever satisfy"
assert_file_contains "$ERR_FILE" "model H100 (nvidia) is excluded by the class's vendors"
gp class create nope.1x --form whole --models MI300X --stack cuda:12 --cpus 1 --memory 1
assert_rc 1
assert_file_contains "$ERR_FILE" "stack rule"
gp class create bad.1x --form whole --models H100 --stack cuda --cpus 1 --memory 1
assert_rc 2
assert_one_line_error
for args in "--vendors arm" "--vendors NVIDIA" "--stack opencl:3" "--stack cuda:12.x" \
    "--min-driver xilinx:1" "--min-driver amd:six" "--min-driver 5.x"; do
    # shellcheck disable=SC2086
    gp class create bad.1x --form whole --models H100 $args --cpus 1 --memory 1
    assert_rc 1
    assert_one_line_error
done
for body in '{"vendors":"nvidia"}' '{"vendors":["amd","arm"]}' '{"min_drivers":{"amd":6}}' \
    '{"stack":{"rocm":"6..0"}}' '{"stack":["rocm"]}' '{"min_drivers":{"intel":"1.1"},"vendors":["amd"]}'; do
    api POST /api/v1/classes "$(jq -c '. + {name:"bad.1x",form:"whole",gpu_models:["MI300X"],cpus:1,memory_gib:1}' <<<"$body")"
    assert_status 400
done
api POST /api/v1/classes '{"name":"bad.1x","form":"partition:9x.1gb","gpu_models":["MI300X"],"cpus":1,"memory_gib":1}'
assert_status 400
api GET /api/v1/classes/bad.1x
assert_status 404

# ---------------------------------------------------------------- tenants
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t
    assert_rc 0
done
printf 'ta-Secret-9\n' >"$E2E_TMP/pw.ta"
run_in "$E2E_TMP/pw.ta" --server "$URL" --token "$ADMIN" user create ta
assert_rc 0
gp member grant ta tenant-admin --tenant red
assert_rc 0
run_in "$E2E_TMP/pw.ta" --server "$URL" login ta
assert_rc 0
TA=$(head -n 1 "$OUT_FILE")

# ---------------------------------------------------------------- the job's stack
note "a job needing rocm>=6.1 runs only on AMD; its assignment names the vendor and indexes"
submit() { # NAME CLASS ARGS... -> JOB_ID
    local name=$1 cls=$2
    shift 2
    as "$TA" -o json job submit "$name" --tenant red --project p --class "$cls" "$@" -- sleep 300
    assert_rc 0
    JOB_ID=$(jout .id)
}
job_state() { # ID STATE
    as "$TA" -o json job show "$1" --tenant red --project p
    [ "$(jout .state)" == "$2" ]
}
job_reason() { # ID TEXT: it is queued or admitted, with TEXT in its reason
    as "$TA" -o json job show "$1" --tenant red --project p
    case "$(jout .state)" in queued | admitted) ;; *) return 1 ;; esac
    jout .reason | grep -qF -- "$2"
}
submit rocm61 any.1x --stack 'rocm>=6.1'
R61=$JOB_ID
assert_json '.stack' 'rocm>=6.1' "$OUT_FILE"
poll 15 job_state "$R61" running || fail "rocm>=6.1 job not running: $(cat "$OUT_FILE")"
_pass
gp -o json binding list --job "$R61"
assert_json '[.items[] | .vendor + ":" + .node] | join(",")' "amd:amd-1" "$OUT_FILE"
R61_GPU=$(jout '.items[0].gpu')
beat amd-1 "$AMD_TOKEN" "$(quiet GPU-amd-0 GPU-amd-1)"
assert_json "[.assignments[] | select(.job == \"$R61\") | \"\(.vendor)|\(.devices | join(\",\"))|\(.indexes | map(tostring) | join(\",\"))\"] | join(\";\")" \
    "amd|$R61_GPU|${R61_GPU#GPU-amd-}"

note "a job needing rocm>=9 stays queued with the rule in its reason and in explain"
submit rocm9 any.1x --stack 'rocm >= 9'
R9=$JOB_ID
assert_json '.stack' 'rocm>=9' "$OUT_FILE"
poll 15 job_reason "$R9" "no card offers rocm >= 9 (newest: 6.2.0 on amd)" ||
    fail "rocm>=9 job: $(jq -c '{state, reason}' "$OUT_FILE")"
_pass
as "$TA" -o json job explain "$R9" --tenant red --project p
assert_rc 0
assert_json '.reason' "no_matching_gpu: no card offers rocm >= 9 (newest: 6.2.0 on amd) (class any.1x)" "$OUT_FILE"
as "$TA" job show "$R9" --tenant red --project p
assert_file_contains "$OUT_FILE" "rocm>=9"

note "bad stacks are refused and nothing is queued"
for bad in 'rocm' 'rocm>6.1' 'hip>=6' 'rocm>=6.x' 'ROCM>=6.1' 'cuda>=12;rm -rf /'; do
    as "$TA" job submit badstack --tenant red --project p --class any.1x --stack "$bad"
    assert_rc 1
    assert_one_line_error
done
AUTH_HEADER="Authorization: Bearer $TA" api POST /api/v1/tenants/red/projects/p/jobs \
    '{"name":"badstack","class":"any.1x","stack":{"rocm":"6.1"}}'
assert_status 400
as "$TA" -o json job list --tenant red --project p
assert_json '[.items[] | select(.name == "badstack")] | length' 0 "$OUT_FILE"

note "a driver minimum per vendor no card meets: queued, naming the driver"
submit drv7 amd7.1x
D7=$JOB_ID
poll 15 job_reason "$D7" "no amd card has driver >= 7.0 (newest: 6.8.5)" ||
    fail "amd7 job: $(jq -c '{state, reason}' "$OUT_FILE")"
_pass

note "a CUDA job of a cross-vendor class runs on NVIDIA; a Gaudi job on Gaudi"
submit cuda any.1x --stack 'cuda>=12.2'
CU=$JOB_ID
poll 15 job_state "$CU" running || fail "cuda job not running: $(cat "$OUT_FILE")"
_pass
gp -o json binding list --job "$CU"
assert_json '[.items[] | .vendor + ":" + .node] | join(",")' "nvidia:nv-1" "$OUT_FILE"
submit syn gaudi.1x --stack 'synapse>=1.18'
SY=$JOB_ID
poll 15 job_state "$SY" running || fail "gaudi job not running: $(cat "$OUT_FILE")"
_pass
gp -o json binding list --job "$SY"
assert_json '[.items[] | .vendor] | join(",")' "intel" "$OUT_FILE"

note "three cards of a cross-vendor class never mix vendors"
# free now: 1 H100 and 2 MI300X (one on the old node): 3 cards, no vendor with 3
submit three any.1x --units 3
T3=$JOB_ID
poll 15 job_reason "$T3" "no_capacity: class any.1x needs 3 units, 2 free now on one vendor (amd; 3 on all, never mixed)" ||
    fail "3-card job: $(jq -c '{state, reason}' "$OUT_FILE")"
_pass
as "$TA" -o json job explain "$T3" --tenant red --project p
assert_json '[.suggestions[] | select(.change == "free_capacity") | .units] | join(",")' 1 "$OUT_FILE"
# two units: both on one vendor (AMD is the only one with two free)
submit two any.1x --units 2
T2=$JOB_ID
poll 15 job_state "$T2" running || fail "2-card job not running: $(cat "$OUT_FILE")"
_pass
gp -o json binding list --job "$T2"
assert_json '[.items[].vendor] | unique | join(",")' "amd" "$OUT_FILE"
for j in "$T3" "$T2" "$D7" "$R9"; do
    as "$TA" job cancel "$j" --tenant red --project p
    assert_rc 0
done

# ---------------------------------------------------------------- health per vendor
note "health per vendor: an Xid on AMD means nothing; bad pages and critical events fail"
beat amd-1 "$AMD_TOKEN" '[{"uuid":"GPU-amd-0","signals":{"xids":[79]}},{"uuid":"GPU-amd-1","signals":{"xids":[79]}}]'
gp -o json gpu list --node amd-1
assert_json '[.items[].health] | unique | join(",")' healthy "$OUT_FILE"
beat leg-1 "$LEG_TOKEN" '[{"uuid":"GPU-leg-0","signals":{"xids":[79],"bad_pages":100000}}]'
gp -o json gpu show GPU-leg-0
assert_json '.health' failed "$OUT_FILE"
assert_contains "$(jout .health_cause)" "Xid 79" "an Xid fails an NVIDIA card"
# the old AMD card crosses the fatal bad-page threshold (512 by default)
beat amd-old "$OLD_TOKEN" '[{"uuid":"GPU-amdo-0","signals":{"bad_pages":600}}]'
gp -o json gpu show GPU-amdo-0
assert_json '.health + " " + (.allocatable | tostring)' "failed false" "$OUT_FILE"
assert_contains "$(jout .health_cause)" "600 bad pages" "bad pages cause"
# a Gaudi critical event fails the card (it is free: hl-1 has one job on one card)
gp -o json binding list --job "$SY"
SY_GPU=$(jout '.items[0].gpu')
HL_FREE=GPU-hl-0
[ "$SY_GPU" == GPU-hl-0 ] && HL_FREE=GPU-hl-1
beat hl-1 "$HL_TOKEN" "[{\"uuid\":\"$HL_FREE\",\"signals\":{\"critical_events\":[1027]}},{\"uuid\":\"$SY_GPU\",\"signals\":{}}]"
gp -o json gpu show "$HL_FREE"
assert_json '.health' failed "$OUT_FILE"
assert_contains "$(jout .health_cause)" "critical event 1027" "critical event cause"
gp -o json class list
assert_eq "$(cap gaudi.1x)" "1/0" "the failed Gaudi card leaves the class's capacity"
assert_eq "$(cap any.1x)" "4/2" "the failed AMD card leaves any.1x"
note "the failed cards gate allocation"
submit syn2 gaudi.1x
S2=$JOB_ID
poll 15 job_reason "$S2" "no_capacity" || fail "second gaudi job: $(jq -c '{state, reason}' "$OUT_FILE")"
_pass
submit rocm61b any.1x --stack 'rocm>=6.1'
RB=$JOB_ID
poll 15 job_state "$RB" running || fail "second rocm job: $(cat "$OUT_FILE")"
_pass
gp -o json binding list --job "$RB"
assert_json '.items[0].node' amd-1 "$OUT_FILE"
submit rocm61c any.1x --stack 'rocm>=5'
RC=$JOB_ID
poll 15 job_reason "$RC" "no_capacity" || fail "third rocm job: $(jq -c '{state, reason}' "$OUT_FILE")"
_pass

note "the policy's vendor sections decide: Gaudi critical events ignored"
gp -o json alarm policy
assert_json '.vendors.amd.bad_pages_fatal' 512 "$OUT_FILE"
assert_json '.vendors.intel.critical_events' fatal "$OUT_FILE"
echo '{"vendors":{"intel":{"critical_events":"ignored"},"amd":{"deferred_ecc":"fatal"}}}' >"$E2E_TMP/pol.json"
gp -o json alarm policy "$E2E_TMP/pol.json"
assert_rc 0
assert_json '.vendors.intel.critical_events + " " + .vendors.amd.deferred_ecc + " " + (.vendors.amd.bad_pages_fatal | tostring)' \
    "ignored fatal 512" "$OUT_FILE"
beat hl-1 "$HL_TOKEN" "[{\"uuid\":\"$SY_GPU\",\"signals\":{\"critical_events\":[1027]}}]"
gp -o json gpu show "$SY_GPU"
assert_json '.health' healthy "$OUT_FILE"
for bad in '{"vendors":{"arm":{}}}' '{"vendors":{"nvidia":{"critical_events":"fatal"}}}' \
    '{"vendors":{"amd":{"deferred_ecc":"panic"}}}' '{"vendors":{"intel":{"bad_pages_fatal":1}}}'; do
    echo "$bad" >"$E2E_TMP/bad.json"
    gp alarm policy "$E2E_TMP/bad.json"
    assert_rc 1
    assert_one_line_error
done
gp -o json alarm policy
assert_json '.vendors.intel.critical_events' ignored "$OUT_FILE"

# ---------------------------------------------------------------- AMD compute partitions
note "an MI300X in CPX mode: 8 partitions as slices, a partition:cpx.24gb class uses them"
SL=""
for k in 0 1 2 3 4 5 6 7; do
    SL="$SL${SL:+,}{\"uuid\":\"AMD-cpx-0-$k\",\"profile\":\"cpx.24gb\",\"memory_mib\":24576}"
done
CPX="[{\"uuid\":\"GPU-cpx-0\",\"index\":0,\"model\":\"AMD Instinct MI300X\",\"memory_mib\":196608,\"vendor\":\"amd\",\"driver_version\":\"6.8.5\",\"stack\":{\"rocm\":\"6.2.0\"},\"mig_mode\":\"enabled\",\"slices\":[$SL]}]"
# nine partitions are more than any card has
register amd-bad "[$(jq -c '.[0] | .uuid = "GPU-cpx-9" | .slices += [{"uuid":"AMD-cpx-9-8","profile":"cpx.24gb","memory_mib":24576}]' <<<"$CPX")]" 6.8.5 400
register amd-cpx "$CPX" 6.8.5
CPX_TOKEN=$NODE_TOKEN
beat amd-cpx "$CPX_TOKEN" "$(quiet GPU-cpx-0)"
gp -o json class list
assert_eq "$(cap mi.cpx)" "8/8" "eight CPX partitions"
submit part mi.cpx --stack 'rocm>=6.2'
PT=$JOB_ID
poll 15 job_state "$PT" running || fail "partition job not running: $(cat "$OUT_FILE")"
_pass
beat amd-cpx "$CPX_TOKEN" "$(quiet GPU-cpx-0)"
assert_json "[.assignments[] | select(.job == \"$PT\") | \"\(.vendor)|\(.indexes | map(tostring) | join(\",\"))|\(.slice_indexes | length)|\(.devices[0] | startswith(\"AMD-cpx-0-\"))\"] | join(\";\")" \
    "amd|0|1|true"
api GET "/api/v1/bindings?job=$PT"
assert_json '.items[0].form + " " + .items[0].vendor + " " + (.items[0].share | tostring)' "mig:cpx.24gb amd 0.125"

# ---------------------------------------------------------------- isolation
note "a tenant-admin changes neither classes nor the health policy"
AUTH_HEADER="Authorization: Bearer $TA" api POST /api/v1/classes \
    '{"name":"mine.1x","form":"whole","gpu_models":["MI300X"],"vendors":["amd"],"cpus":1,"memory_gib":1}'
assert_status 403
AUTH_HEADER="Authorization: Bearer $TA" api DELETE /api/v1/classes/any.1x
assert_status 403
AUTH_HEADER="Authorization: Bearer $TA" api PUT /api/v1/health-policy '{"vendors":{"amd":{"bad_pages_fatal":0}}}'
assert_status 403
as "$TA" class create mine.1x --form whole --models MI300X --vendors amd --cpus 1 --memory 1
assert_rc 1
assert_one_line_error
api GET /api/v1/classes/mine.1x
assert_status 404
gp -o json alarm policy
assert_json '.vendors.amd.bad_pages_fatal' 512 "$OUT_FILE"

stop_server
done_testing
