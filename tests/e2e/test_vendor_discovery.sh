#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_vendor_discovery.sh - the agent's vendor layer against a real server:
# an agent on the fake AMD SMI library (tests/fake_amdsmi: an MI300X in CPX
# mode, 8 partitions, and one in SPX) and one on the fake Intel Gaudi HLML
# library (tests/fake_hlml) register, and `gpupool node show` / `gpu list`
# show each card's vendor, driver, stack and partitions; a node holding cards
# of three vendors; vendor health signals reaching the server (a Gaudi
# critical event fails its card); declared AMD and Gaudi inventories with
# simulated signals, and `agent inject` refusing a fault that does not fit
# the card's vendor.  --print-report shows what discovery would register.
#
#   GPUPOOL_BIN=/path/to/gpupool FAKE_AMDSMI_PATH=/path/to/libfake_amdsmi.so \
#   FAKE_HLML_PATH=/path/to/libfake_hlml.so [FAKE_NVML_PATH=...] \
#       bash tests/e2e/test_vendor_discovery.sh
#
# Without the two fakes the test is skipped (77); without FAKE_NVML_PATH the
# three-vendor node is skipped.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKE_AMDSMI_PATH:-}" ] || [ ! -r "$FAKE_AMDSMI_PATH" ] ||
    [ -z "${FAKE_HLML_PATH:-}" ] || [ ! -r "$FAKE_HLML_PATH" ]; then
    note "FAKE_AMDSMI_PATH / FAKE_HLML_PATH not set: skipped"
    exit 77
fi
# the fakes' faults come from the environment: start clean
unset FAKE_AMDSMI_LOST FAKE_AMDSMI_UE FAKE_AMDSMI_BAD_PAGES FAKE_HLML_CRITICAL FAKE_HLML_LOST
unset GPUPOOL_NVML_LIBRARY GPUPOOL_AMDSMI_LIBRARY GPUPOOL_HLML_LIBRARY
NONE=/nonexistent/lib.so
# the ROCm release the agent reads ($ROCM_PATH/.info/version)
mkdir -p "$E2E_TMP/rocm/.info"
echo "6.2.0-66" >"$E2E_TMP/rocm/.info/version"
export ROCM_PATH=$E2E_TMP/rocm

gpu_field() {
    gp -o json gpu show "$1"
    [ "$RC" == 0 ] && jout "$2"
}

# ---------------------------------------------------------------- no server needed
note "usage errors"
run_cli agent --vendor nvida --print-report
assert_rc 2
assert_one_line_error "--vendor must be auto, nvidia, amd or intel"
run_cli agent --print-report --vendor amd --amdsmi-library "$NONE"
assert_rc 1
assert_one_line_error "AMD SMI not available"
assert_file_contains "$ERR_FILE" "--inventory"
run_cli agent --print-report --nvml-library "$NONE" --amdsmi-library "$NONE" --hlml-library "$NONE"
assert_rc 1
assert_one_line_error "declare them with --inventory FILE"

note "what discovery reports: AMD SMI"
run_cli agent --print-report --node-name amd-box --nvml-library "$NONE" \
    --amdsmi-library "$FAKE_AMDSMI_PATH" --hlml-library "$NONE"
assert_rc 0
assert_json '.[0].source' amdsmi "$OUT_FILE"
assert_json '.[0].driver_version' 6.8.5 "$OUT_FILE"
assert_json '.[0].gpus | length' 2 "$OUT_FILE"
assert_json '[.[0].gpus[].vendor] | join(",")' amd,amd "$OUT_FILE"
assert_json '[.[0].gpus[].stack.rocm] | join(",")' 6.2.0,6.2.0 "$OUT_FILE"
assert_json '.[0].gpus[0].mig_mode' enabled "$OUT_FILE"
assert_json '[.[0].gpus[0].slices[].profile] | unique | join(",")' cpx.24gb "$OUT_FILE"
assert_json '.[0].gpus[0].slices | length' 8 "$OUT_FILE"
assert_json '.[0].gpus[1].mig_mode' disabled "$OUT_FILE"
assert_json '.[0].gpus[0].compute_cap' gfx942 "$OUT_FILE"

note "what discovery reports: HLML"
run_cli agent --print-report --node-name hl-box --vendor intel --hlml-library "$FAKE_HLML_PATH"
assert_rc 0
assert_json '.[0].source' hlml "$OUT_FILE"
assert_json '[.[0].gpus[] | "\(.vendor) \(.driver_version) \(.stack.synapse) \(.module_id)"] | join(",")' \
    "intel 1.18.0 1.18.0 3,intel 1.18.0 1.18.0 0" "$OUT_FILE"

note "declared vendors"
run_cli agent --print-report --inventory "$(dirname "$0")/../../examples/inventory-vendors.json"
assert_rc 0
assert_json '[.[] | .gpus[0].vendor] | join(",")' amd,intel "$OUT_FILE"
assert_json '[.[0].gpus[7].slices[].profile] | unique | join(",")' cpx.24gb "$OUT_FILE"
cat >"$E2E_TMP/badvendor.json" <<'EOF'
{"nodes":[{"name":"x","cpus":1,"memory_gib":1,"gpus":[{"model":"M","vendor":"amdx","memory_gib":1}]}]}
EOF
run_cli agent --print-report --inventory "$E2E_TMP/badvendor.json"
assert_rc 1
assert_one_line_error "vendor must be nvidia, amd or intel"
cat >"$E2E_TMP/badstack.json" <<'EOF'
{"nodes":[{"name":"x","cpus":1,"memory_gib":1,"gpus":[{"model":"M","vendor":"amd","memory_gib":1,"stack":{"cuda":"12.4"}}]}]}
EOF
run_cli agent --print-report --inventory "$E2E_TMP/badstack.json"
assert_rc 1
assert_one_line_error 'stack must be {"rocm"'
cat >"$E2E_TMP/baddriver.json" <<'EOF'
{"nodes":[{"name":"x","cpus":1,"memory_gib":1,"gpus":[{"model":"M","vendor":"intel","memory_gib":1,"driver_version":"1.18-rc1"}]}]}
EOF
run_cli agent --print-report --inventory "$E2E_TMP/baddriver.json"
assert_rc 1
assert_one_line_error "driver_version must be a dotted number"

# ---------------------------------------------------------------- against a server
start_server
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 600 --uses 6
assert_rc 0
JT=$(jout .token)

note "an agent on the fake HLML"
run_cli --server "$URL" agent --once --node-name hl-box --join-token "$JT" \
    --nvml-library "$NONE" --amdsmi-library "$NONE" --hlml-library "$FAKE_HLML_PATH" \
    --state-dir "$E2E_TMP/hl-state"
assert_rc 0
gp -o json node show hl-box
assert_rc 0
assert_json .source hlml "$OUT_FILE"
assert_json '[.gpus[].uuid] | join(",")' "hl-fake-0000,hl-fake-0001" "$OUT_FILE"
assert_json '[.gpus[] | "\(.vendor)/\(.model)/\(.driver_version)/\(.stack.synapse)"] | join(",")' \
    "intel/HL-325L/1.18.0/1.18.0,intel/HL-325L/1.18.0/1.18.0" "$OUT_FILE"
assert_json '[.gpus[].health] | join(",")' healthy,healthy "$OUT_FILE"
gp gpu list --node hl-box
assert_rc 0
assert_file_contains "$OUT_FILE" "intel"
assert_file_contains "$OUT_FILE" "synapse"
# a critical event on card 1 reaches the server and fails that card (the Intel policy)
FAKE_HLML_CRITICAL=2 run_cli --server "$URL" agent --once --node-name hl-box \
    --hlml-library "$FAKE_HLML_PATH" --vendor intel --state-dir "$E2E_TMP/hl-state"
assert_rc 0
assert_eq "$(gpu_field hl-fake-0001 .health)" failed "health of hl-fake-0001 after a critical event"
assert_contains "$(gpu_field hl-fake-0001 .health_cause)" "critical event" "cause on hl-fake-0001"
assert_eq "$(gpu_field hl-fake-0000 .health)" healthy "health of hl-fake-0000"

note "an agent on the fake AMD SMI"
run_cli --server "$URL" agent --once --node-name amd-box --join-token "$JT" \
    --nvml-library "$NONE" --amdsmi-library "$FAKE_AMDSMI_PATH" --hlml-library "$NONE" \
    --state-dir "$E2E_TMP/amd-state"
assert_rc 0
gp -o json node show amd-box
assert_rc 0
assert_json .source amdsmi "$OUT_FILE"
assert_json '[.gpus[] | "\(.vendor)/\(.driver_version)/\(.stack.rocm)/\(.mode)"] | join(",")' \
    "amd/6.8.5/6.2.0/mig,amd/6.8.5/6.2.0/whole" "$OUT_FILE"
assert_json '.gpus[0].model' "AMD Instinct MI300X" "$OUT_FILE"
assert_json '.gpus[0].slices | length' 8 "$OUT_FILE"
assert_json '[.gpus[0].slices[].profile] | unique | join(",")' cpx.24gb "$OUT_FILE"
assert_json '.gpus[0].slices[3].uuid' a0000000-0000-1000-8000-000000000003 "$OUT_FILE"
gp gpu list --node amd-box
assert_rc 0
assert_file_contains "$OUT_FILE" "rocm"
# a card lost before it tells its UUID ("not found" from the start) is left out, the
# node keeps reporting (a card lost later is reported lost: tests/unit/test_amdsmi.c)
FAKE_AMDSMI_LOST=1 FAKE_AMDSMI_UE=1 run_cli --server "$URL" agent --once --node-name amd-box \
    --vendor amd --amdsmi-library "$FAKE_AMDSMI_PATH" --state-dir "$E2E_TMP/amd-state"
assert_rc 0
assert_file_contains "$ERR_FILE" "card lost before it gave its UUID"
assert_eq "$(gpu_field a0000000-0000-1000-8000-000000000000 .health)" healthy "health of the CPX card"

if [ -n "${FAKE_NVML_PATH:-}" ] && [ -r "$FAKE_NVML_PATH" ]; then
    note "one node, three vendors"
    # other cards than amd-box's and hl-box's: a card another node holds is refused
    FAKE_AMDSMI_HOST=1 FAKE_HLML_HOST=1 \
    run_cli --server "$URL" agent --once --node-name mixed-box --join-token "$JT" \
        --nvml-library "$FAKE_NVML_PATH" --amdsmi-library "$FAKE_AMDSMI_PATH" \
        --hlml-library "$FAKE_HLML_PATH" --state-dir "$E2E_TMP/mixed-state"
    assert_rc 0
    gp -o json node show mixed-box
    assert_rc 0
    assert_json '[.gpus[].vendor] | join(",")' nvidia,nvidia,amd,amd,intel,intel "$OUT_FILE"
    assert_json '[.gpus[].index] | join(",")' 0,1,2,3,4,5 "$OUT_FILE"
    assert_json '.gpus[0].stack.cuda' 12.4 "$OUT_FILE"
    assert_json '.gpus[0].driver_version' 550.54.15 "$OUT_FILE"
else
    note "FAKE_NVML_PATH not set: three-vendor node skipped"
fi

note "declared AMD and Gaudi nodes: simulated signals and vendor faults"
cat >"$E2E_TMP/sim.json" <<'EOF'
{"nodes":[
 {"name":"sim-amd","cpus":8,"memory_gib":64,"gpus":[{"model":"MI300X","vendor":"amd","memory_gib":192,"count":2,"driver_version":"6.8.5","stack":{"rocm":"6.2.0"}}]},
 {"name":"sim-gaudi","cpus":8,"memory_gib":64,"gpus":[{"model":"HL-325L","vendor":"intel","memory_gib":128,"count":2,"driver_version":"1.18.0","stack":{"synapse":"1.18.0"}}]}]}
EOF
SIM_STATE=$E2E_TMP/sim-state
run_cli --server "$URL" agent --once --inventory "$E2E_TMP/sim.json" --join-token "$JT" \
    --state-dir "$SIM_STATE"
assert_rc 0
gp -o json node show sim-amd
assert_rc 0
assert_json '[.gpus[] | "\(.vendor)/\(.driver_version)/\(.stack.rocm)"] | join(",")' \
    "amd/6.8.5/6.2.0,amd/6.8.5/6.2.0" "$OUT_FILE"
AMD0=$(jout '.gpus[0].uuid')
gp -o json node show sim-gaudi
assert_rc 0
GAUDI1=$(jout '.gpus[1].uuid')
# faults that do not fit the card's vendor are refused, nothing queued
run_cli agent inject --state-dir "$SIM_STATE" --node sim-amd --gpu 0 --xid 48
assert_rc 1
assert_one_line_error "AMD card: --xid does not apply to it"
run_cli agent inject --state-dir "$SIM_STATE" --node sim-amd --gpu 0 --critical 1
assert_rc 1
assert_one_line_error "--critical does not apply"
run_cli agent inject --state-dir "$SIM_STATE" --node sim-gaudi --gpu 1 --bad-pages 3
assert_rc 1
assert_one_line_error "Intel Gaudi card: --bad-pages does not apply to it"
run_cli agent inject --state-dir "$SIM_STATE" --node sim-gaudi --gpu 1 --remap-pending
assert_rc 1
assert_one_line_error "--remap-pending"
run_cli agent inject --state-dir "$SIM_STATE" --node sim-gaudi --gpu 1 --critical 0
assert_rc 2
assert_one_line_error "--critical wants 1..16"
assert_eq "$(find "$SIM_STATE/inject" -name '*.json' 2>/dev/null | wc -l)" 0 "faults queued after refusals"
# faults that fit: AMD bad pages (degraded at 64 by default), a Gaudi critical event
run_cli agent inject --state-dir "$SIM_STATE" --node sim-amd --gpu 0 --bad-pages 100
assert_rc 0
run_cli agent inject --state-dir "$SIM_STATE" --node sim-gaudi --gpu "$GAUDI1" --critical 2
assert_rc 0
# --dbe fits every vendor: on an AMD card it raises the uncorrectable total AMD SMI counts
run_cli agent inject --state-dir "$SIM_STATE" --node sim-amd --gpu 1 --dbe 2
assert_rc 0
run_cli --server "$URL" agent --once --inventory "$E2E_TMP/sim.json" --state-dir "$SIM_STATE"
assert_rc 0
assert_eq "$(gpu_field "$AMD0" .health)" degraded "health of $AMD0 after 100 bad pages"
assert_contains "$(gpu_field "$AMD0" .health_cause)" "bad pages" "cause on $AMD0"
assert_eq "$(gpu_field "$GAUDI1" .health)" failed "health of $GAUDI1 after a critical event"
assert_contains "$(gpu_field "$GAUDI1" .health_cause)" "critical event 2" "cause on $GAUDI1"
gp -o json node show sim-amd
assert_rc 0
assert_json '.gpus[1].health' failed "$OUT_FILE"
assert_contains "$(jout '.gpus[1].health_cause')" "uncorrectable ECC" "cause on the AMD card after --dbe"
gp -o json node show sim-gaudi
assert_json '.gpus[0].health' healthy "$OUT_FILE"

stop_server
done_testing
