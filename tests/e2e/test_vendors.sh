#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # workload commands expand on the node; start_server takes optional flags; poll calls helpers indirectly
#
# test_vendors.sh - a fleet of NVIDIA, AMD and Intel Gaudi nodes behind the same
# resource classes, end to end (issue 24, the first "Done when"): one server,
# one agent with a declared inventory of three nodes (--runtime: a stand-in
# container runtime that records its arguments).
#
#   GPUPOOL_BIN=/path/to/gpupool FAKE_AMDSMI_PATH=.../libfake_amdsmi.so \
#       FAKE_HLML_PATH=.../libfake_hlml.so bash tests/e2e/test_vendors.sh
#
# Fleet: node nv (2x H100-80GB, cuda 12.4), node mi (MI300X whole, rocm 6.2.0,
# and an MI300X in CPX mode: 8 compute partitions cpx.24gb), node ga (2x Gaudi 2
# HL-225, synapse 1.18.0).
#
# Checked: the nodes report their cards' vendor, driver and stack; classes
# across vendors (a class of three models, one per vendor) and per vendor
# (--vendors, --stack, --min-driver per vendor), classes no card could ever
# satisfy refused at create with the reason; placement honours the stack
# rules (a job's --stack lands it on the only vendor offering it; one no card
# offers stays pending and says why, in its reason and `job explain`; all
# units of a job on one vendor); the variables that reach each workload (it
# writes its environment to a file): CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES
# only on NVIDIA, ROCR_VISIBLE_DEVICES (the card's index; a CPX partition's
# own number) with HIP_VISIBLE_DEVICES/GPU_DEVICE_ORDINAL 0..n-1 on AMD,
# HABANA_VISIBLE_MODULES/HABANA_VISIBLE_DEVICES on Gaudi, GPUPOOL_VENDOR on
# all; containers get their vendor's CDI names (amd.com/gpu=N,
# habana.ai/gaudi=N); a health fault per vendor (--dbe 1 on the AMD card,
# --critical N on a Gaudi card) takes the card out of allocation and a job
# for it waits, a fault flag of another vendor is refused; card-hours in the
# usage report split by vendor.  With the fake AMD SMI and HLML libraries
# (FAKE_AMDSMI_PATH, FAKE_HLML_PATH; ctest sets them), two agents that
# discover their cards: workloads get ROCm's numbers (a CPX card's partitions
# first, then the SPX card as device 8) and Gaudi module ids, which differ
# from the cards' indexes.
. "$(dirname "$0")/lib.sh"

BIN=$E2E_TMP/bin
RT=$E2E_TMP/rt
ENVD=$E2E_TMP/envs
mkdir -p "$BIN" "$RT" "$ENVD"
# workloads run as uids of their own (agent as root): they write their environment here
chmod 1777 "$ENVD"
chmod 0755 "$RT"
ln -s "$(command -v sleep)" "$BIN/vsleep"
_v_exit() {
    local rc=$? pid
    for pid in $(pgrep -f -- "$BIN/vsleep" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    (exit "$rc")
    _e2e_cleanup
}
trap _v_exit EXIT

# a stand-in container runtime: records its argument list, then runs the command after the
# image with only the -e variables (as test_container.sh's)
cat >"$BIN/fake-podman" <<EOF
#!/bin/sh
RT='$RT'
[ "\$1" = kill ] && exit 0
[ "\$1" = run ] || exit 125
name=unnamed
for a in "\$@"; do
    case \$prev in --name) name=\$a ;; esac
    prev=\$a
done
printf '%s\n' "\$@" >"\$RT/\$name.args"
shift
vars=
while [ \$# -gt 0 ]; do
    case \$1 in
    --rm) shift ;;
    -e) vars="\$vars
\$2"; shift 2 ;;
    --name|--device|--cpus|--memory|--workdir|-v) shift 2 ;;
    *) break ;;
    esac
done
shift # the image
IFS='
'
# shellcheck disable=SC2086
exec env -i \$vars "\$@"
EOF
chmod +x "$BIN/fake-podman"

CPX='"cpx.24gb","cpx.24gb","cpx.24gb","cpx.24gb","cpx.24gb","cpx.24gb","cpx.24gb","cpx.24gb"'
cat >"$E2E_TMP/fleet.json" <<EOF
{"nodes":[
 {"name":"nv","cpus":32,"memory_gib":256,
  "gpus":[{"model":"H100-80GB","vendor":"nvidia","memory_gib":80,"count":2,"mode":"whole",
           "driver_version":"550.54.15","stack":{"cuda":"12.4"}}]},
 {"name":"mi","cpus":64,"memory_gib":512,
  "gpus":[{"model":"MI300X","vendor":"amd","memory_gib":192,"count":1,"mode":"whole",
           "driver_version":"6.8.5","stack":{"rocm":"6.2.0"}},
          {"model":"MI300X","vendor":"amd","memory_gib":192,"count":1,"mode":"mig","mig":[$CPX],
           "driver_version":"6.8.5","stack":{"rocm":"6.2.0"}}]},
 {"name":"ga","cpus":64,"memory_gib":512,
  "gpus":[{"model":"HL-225","vendor":"intel","memory_gib":96,"count":2,"mode":"whole",
           "driver_version":"1.18.0","stack":{"synapse":"1.18.0"}}]}]}
EOF

# ---------------------------------------------------------------- helpers

# a gpu's field by node and index: gpu NODE IDX JQ ("" if the call failed)
gpu_of() {
    gp -o json gpu list
    [ "$RC" == 0 ] && jout "[.items[] | select(.node == \"$1\" and .index == $2)][0] | $3"
}
gpu_field() {
    gp -o json gpu show "$1"
    [ "$RC" == 0 ] && jout "$2"
}
health_is() { [ "$(gpu_field "$1" .health)" == "$2" ]; }

# sub NAME ARGS...: `job submit NAME ARGS` as red's project-user; JID = its id
sub() {
    as "$RU" -o json job submit --tenant red --project train "$@"
    assert_rc 0
    JID=$(jout .id)
    assert_match "$JID" '^[0-9a-f]{16,}$' "id of job $1"
}
jf() {
    as "$RU" -o json job show "$1" --tenant red --project train
    [ "$RC" == 0 ] && jout "$2"
}
state_in() { [[ "$(jf "$1" .state)" =~ ^($2)$ ]]; }
wait_state() {
    poll "${3:-30}" state_in "$1" "$2" ||
        fail "job $1 did not become $2 within ${3:-30} s (state '$(jf "$1" .state)', reason '$(jf "$1" .reason)')"
    _pass
}
# wait_reason JOB: until the scheduler has looked at a waiting job (it has a reason)
has_reason() { [ -n "$(jf "$1" .reason)" ]; }
wait_reason() {
    poll 30 has_reason "$1" || fail "job $1 got no reason within 30 s (state '$(jf "$1" .state)')"
    _pass
}
# the vendors of the cards a job was bound to, distinct, comma-separated
job_vendors() {
    local uuid vs=()
    gp -o json binding list --job "$1"
    for uuid in $(jout '.items[].gpu'); do vs+=("$(gpu_field "$uuid" .vendor)"); done
    printf '%s\n' "${vs[@]}" | sort -u | paste -sd, -
}
# env_of JOB: the environment file its workload wrote (waits for it)
env_file() { [ -s "$ENVD/$1.env" ]; }
wait_env() {
    poll 30 env_file "$1" || fail "job $1 wrote no environment (state '$(jf "$1" .state)', reason '$(jf "$1" .reason)')"
    _pass
}
# assert_line FILE LINE / assert_no_var FILE VAR
assert_line() {
    if grep -qxF -- "$2" "$1"; then _pass; return 0; fi
    _show "$(basename "$1")" "$1"
    fail "$(basename "$1"): no line '$2'"
}
assert_no_var() {
    if grep -q "^$2" "$1"; then
        _show "$(basename "$1")" "$1"
        fail "$(basename "$1"): has $2"
    fi
    _pass
}
# args_of JOB: the file of the argument list the container runtime got for it ("" if none)
args_of() {
    local f
    for f in "$RT"/gpupool-"$1"*.args; do [ -f "$f" ] && echo "$f" && return; done
}
# assert_clean FILE: an agent's stderr holds no sanitizer report
assert_clean() {
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$1"; then
        grep -E -A30 'Sanitizer|runtime error:' "$1" | head -n 60 | sed 's/^/    | /' >&2
        fail "$(basename "$1"): sanitizer report"
    fi
    _pass
}
# a workload that writes its environment, then holds its cards a while
ENVCMD="env > $ENVD/\$GPUPOOL_JOB_ID.env; exec $BIN/vsleep 300"

# ---------------------------------------------------------------- the fleet
start_server --health-interval 1
note "server at $URL"
gp member grant admin ops-engineer
assert_rc 0
gp -o json jointoken create --ttl 3600 --uses 5 # nv, mi, ga; hw-mi, hw-ga
assert_rc 0
JT=$(jout .token)
AGENT_ERR=$E2E_TMP/agent.err
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --inventory "$E2E_TMP/fleet.json" \
    --state-dir "$E2E_TMP/state" --interval 1 --grace 1 --runtime "$BIN/fake-podman" \
    >"$E2E_TMP/agent.out" 2>"$AGENT_ERR" </dev/null &
AGENT_PID=$!
E2E_PIDS+=("$AGENT_PID")
fleet_ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 3 ]
}
poll 30 fleet_ready || { _show "agent stderr" "$AGENT_ERR"; fail "the fleet did not register within 30 s"; }
_pass

note "the cards say their vendor, driver and stack"
NV0=$(gpu_of nv 0 .uuid)
MI0=$(gpu_of mi 0 .uuid)
MI1=$(gpu_of mi 1 .uuid)
GA0=$(gpu_of ga 0 .uuid)
GA1=$(gpu_of ga 1 .uuid)
assert_match "$NV0/$MI0/$MI1/$GA0/$GA1" '^[^/]+/[^/]+/[^/]+/[^/]+/[^/]+$' "cards of the fleet"
assert_eq "$(gpu_field "$NV0" .vendor)/$(gpu_field "$MI0" .vendor)/$(gpu_field "$GA0" .vendor)" \
    "nvidia/amd/intel" "vendors of the cards"
assert_eq "$(gpu_field "$MI0" .driver_version)" "6.8.5" "driver of the AMD card"
assert_eq "$(gpu_field "$MI0" '.stack.rocm')" "6.2.0" "stack of the AMD card"
assert_eq "$(gpu_field "$GA0" '.stack.synapse')" "1.18.0" "stack of the Gaudi card"
assert_eq "$(gpu_field "$MI1" '.slices | length')" 8 "CPX partitions of the second MI300X"
assert_eq "$(gpu_field "$MI1" '[.slices[].profile] | unique | join(",")')" "cpx.24gb" "their profile"

note "classes across vendors and per vendor"
# one class, three vendors: the scheduler picks by the job's stack
gp class create big.1x --form whole --models H100-80GB,MI300X,HL-225 --cpus 1 --memory 1
assert_rc 0
gp class create rocm.1x --form whole --models MI300X --vendors amd --stack rocm:6.1 --min-driver amd:6.8 --cpus 1 --memory 1
assert_rc 0
gp class create cpx.1x --form mig:cpx.24gb --models MI300X --cpus 1 --memory 1
assert_rc 0
gp class create gaudi.1x --form whole --models HL-225 --vendors intel --stack synapse:1.17 --cpus 1 --memory 1
assert_rc 0
# classes no card could ever satisfy are refused at create, saying why: MI300X cards never
# offer CUDA; H100 cards are never AMD's
gp class create cudami --form whole --models MI300X --stack cuda:12 --cpus 1 --memory 1
assert_rc 1
assert_one_line_error "no GPU could ever satisfy"
gp class create nvamd --form whole --models H100-80GB --vendors amd --cpus 1 --memory 1
assert_rc 1
assert_one_line_error "no GPU could ever satisfy"
gp class create badv --form whole --models MI300X --vendors amd,cerebras --cpus 1 --memory 1
assert_rc 1
assert_one_line_error "field 'vendors[1]' ('cerebras') must be one of: nvidia, amd, intel"
gp tenant create red
assert_rc 0
gp project create train --tenant red
assert_rc 0
printf 'ru-Secret-9\n' >"$E2E_TMP/pw.ru"
run_in "$E2E_TMP/pw.ru" --server "$URL" --token "$TOKEN" user create ru
assert_rc 0
gp member grant ru project-user --tenant red --project train
assert_rc 0
run_in "$E2E_TMP/pw.ru" --server "$URL" login ru
assert_rc 0
RU=$(head -n 1 "$OUT_FILE")

# ---------------------------------------------------------------- placement and variables
note "placement by stack; the variables each vendor's workload sees"
sub on-rocm --class big.1x --stack 'rocm>=6.1' -- sh -c "$ENVCMD"
J_AMD=$JID
sub on-synapse --class big.1x --stack 'synapse>=1.18' -- sh -c "$ENVCMD"
J_GA=$JID
sub on-cuda --class big.1x --stack 'cuda>=12.0' -- sh -c "$ENVCMD"
J_NV=$JID
sub on-cpx --class cpx.1x --units 2 -- sh -c "$ENVCMD"
J_CPX=$JID
sub rocm-none --class big.1x --stack 'rocm>=6.3' -- sh -c "$ENVCMD"
J_NONE=$JID
for j in "$J_AMD" "$J_GA" "$J_NV" "$J_CPX"; do wait_env "$j"; done

# AMD: ROCR_VISIBLE_DEVICES is the card's index; HIP/ROCclr count in what ROCr exposes
assert_eq "$(job_vendors "$J_AMD")" amd "the rocm job's cards"
gp -o json binding list --job "$J_AMD"
AMD_GPU=$(jout '.items[0].gpu')
AMD_IDX=$(gpu_field "$AMD_GPU" .index)
F=$ENVD/$J_AMD.env
assert_line "$F" "GPUPOOL_VENDOR=amd"
assert_line "$F" "ROCR_VISIBLE_DEVICES=$AMD_IDX"
assert_line "$F" "HIP_VISIBLE_DEVICES=0"
assert_line "$F" "GPU_DEVICE_ORDINAL=0"
assert_no_var "$F" CUDA_
assert_no_var "$F" NVIDIA_
assert_no_var "$F" HABANA_

# Gaudi: the module ids (a declared card's is its index; discovered ones below)
assert_eq "$(job_vendors "$J_GA")" intel "the synapse job's cards"
gp -o json binding list --job "$J_GA"
GA_IDX=$(gpu_field "$(jout '.items[0].gpu')" .index)
F=$ENVD/$J_GA.env
assert_line "$F" "GPUPOOL_VENDOR=intel"
assert_line "$F" "HABANA_VISIBLE_MODULES=$GA_IDX"
assert_line "$F" "HABANA_VISIBLE_DEVICES=$GA_IDX"
assert_no_var "$F" CUDA_
assert_no_var "$F" NVIDIA_
assert_no_var "$F" ROCR_

# NVIDIA: the card's UUID, as ever; nothing of the others'
assert_eq "$(job_vendors "$J_NV")" nvidia "the cuda job's cards"
gp -o json binding list --job "$J_NV"
NV_GPU=$(jout '.items[0].gpu')
F=$ENVD/$J_NV.env
assert_line "$F" "GPUPOOL_VENDOR=nvidia"
assert_line "$F" "CUDA_VISIBLE_DEVICES=$NV_GPU"
assert_line "$F" "NVIDIA_VISIBLE_DEVICES=$NV_GPU"
assert_no_var "$F" ROCR_
assert_no_var "$F" HIP_
assert_no_var "$F" HABANA_

# CPX: two partitions of the second MI300X, each a device of its own for ROCm: the node's
# devices in ROCm's order are the whole MI300X (0), then the 8 partitions (1..8)
# rocm_numbers JOB: the ROCm numbers of a job's partitions of MI1 (1 + place on the card)
rocm_numbers() {
    local sl n=() slices
    gp -o json gpu show "$MI1"
    slices=$(jout '[.slices[].uuid] | join(" ")')
    as "$RU" -o json job show "$1" --tenant red --project train
    for sl in $(jout '.bindings[].slice'); do
        n+=("$(echo "$slices" | tr ' ' '\n' | grep -nxF -- "$sl" | cut -d: -f1)")
    done
    (IFS=,; echo "${n[*]}")
}
gp -o json binding list --job "$J_CPX"
assert_eq "$(jout '.items | length')" 2 "bindings of the CPX job"
assert_eq "$(jout '[.items[].gpu] | unique | join(",")')" "$MI1" "the CPX job's card"
CPX_NUMS=$(rocm_numbers "$J_CPX")
assert_match "$CPX_NUMS" '^[1-8],[1-8]$' "the CPX job's partitions"
F=$ENVD/$J_CPX.env
assert_line "$F" "GPUPOOL_VENDOR=amd"
assert_line "$F" "ROCR_VISIBLE_DEVICES=$CPX_NUMS"
assert_line "$F" "HIP_VISIBLE_DEVICES=0,1"
assert_line "$F" "GPU_DEVICE_ORDINAL=0,1"
assert_no_var "$F" CUDA_
assert_no_var "$F" NVIDIA_

# a stack no card offers: pending, and it says why
wait_reason "$J_NONE"
assert_match "$(jf "$J_NONE" .state)" '^(pending|admitted)$' "the rocm 6.3 job"
assert_contains "$(jf "$J_NONE" .reason)" "rocm >= 6.3" "its reason"
as "$RU" -o json job explain "$J_NONE" --tenant red --project train
assert_rc 0
assert_contains "$(cat "$OUT_FILE")" "rocm >= 6.3" "job explain of the rocm 6.3 job"
as "$RU" job cancel "$J_NONE" --tenant red --project train
assert_rc 0

note "one job's units never mix vendors"
# one H100 is left free, and the Gaudi node's second card: a 2-unit job of the cross-vendor
# class may take two H100s or two Gaudis, never one of each
sub two --class big.1x --units 2 -- "$BIN/vsleep" 300
J_TWO=$JID
wait_reason "$J_TWO"
assert_match "$(jf "$J_TWO" .state)" '^(pending|admitted)$' "a 2-unit job that one vendor cannot hold waits"
gp -o json binding list --job "$J_TWO"
assert_eq "$(jout '.items | length')" 0 "no card bound to it"
as "$RU" job cancel "$J_TWO" --tenant red --project train
assert_rc 0

note "containers: each vendor's CDI names"
sub ctr-amd --class rocm.1x --image rocm/pytorch:latest -- sh -c 'env | sort; exit 0'
J_CA=$JID
# the AMD whole card is the rocm job's: this one waits until it ends
as "$RU" job cancel "$J_AMD" --tenant red --project train
assert_rc 0
wait_state "$J_CA" succeeded
A=$(args_of "$J_CA")
assert_ne "$A" "" "the AMD container's argument list"
assert_line "$A" "amd.com/gpu=$AMD_IDX"
assert_file_lacks "$A" "nvidia.com/gpu"
assert_line "$A" "ROCR_VISIBLE_DEVICES=0"
# a CPX partition in a container: its own CDI device, numbered 0 inside
sub ctr-cpx --class cpx.1x --image rocm/pytorch:latest -- sh -c 'exit 0'
J_CX=$JID
wait_state "$J_CX" succeeded
A=$(args_of "$J_CX")
assert_line "$A" "amd.com/gpu=$(rocm_numbers "$J_CX")"
assert_line "$A" "ROCR_VISIBLE_DEVICES=0"
assert_file_lacks "$A" "CUDA_VISIBLE_DEVICES"
sub ctr-gaudi --class gaudi.1x --image vault.habana.ai/gaudi-docker/pt:latest -- sh -c 'exit 0'
J_CG=$JID
wait_state "$J_CG" succeeded
gp -o json binding list --job "$J_CG"
CG_IDX=$(gpu_field "$(jout '.items[0].gpu')" .index)
A=$(args_of "$J_CG")
assert_line "$A" "habana.ai/gaudi=$CG_IDX"
assert_line "$A" "HABANA_VISIBLE_DEVICES=$CG_IDX"
assert_file_lacks "$A" "CUDA_VISIBLE_DEVICES"

# ---------------------------------------------------------------- health per vendor
note "a health fault per vendor gates allocation"
run_cli agent inject --state-dir "$E2E_TMP/state" --node mi --gpu "$MI0" --xid 79
assert_rc 1
assert_one_line_error
run_cli agent inject --state-dir "$E2E_TMP/state" --node nv --gpu "$NV0" --critical 3
assert_rc 1
assert_one_line_error
run_cli agent inject --state-dir "$E2E_TMP/state" --node ga --gpu "$GA0" --bad-pages 4
assert_rc 1
assert_one_line_error
# AMD: an uncorrectable ECC error fails the card
free_is() {
    gp -o json class list
    [ "$(jout ".items[] | select(.name == \"$1\") | .capacity.free")" == "$2" ]
}
poll 20 free_is rocm.1x 1 || fail "rocm.1x has no free card before the fault"
_pass
run_cli agent inject --state-dir "$E2E_TMP/state" --node mi --gpu "$MI0" --dbe 1
assert_rc 0
poll 20 health_is "$MI0" failed || fail "the AMD card did not fail on a DBE (health '$(gpu_field "$MI0" .health)')"
_pass
assert_eq "$(gpu_field "$MI0" .allocatable)" false "the failed AMD card is not allocatable"
poll 20 free_is rocm.1x 0 || fail "rocm.1x still counts the failed card free"
_pass
sub after-dbe --class rocm.1x -- "$BIN/vsleep" 300
J_AD=$JID
wait_reason "$J_AD"
assert_match "$(jf "$J_AD" .state)" '^(pending|admitted)$' "a job for the failed AMD card waits"
as "$RU" job cancel "$J_AD" --tenant red --project train
assert_rc 0
# Intel Gaudi: critical events fail the card; the other one still takes work
as "$RU" job cancel "$J_GA" --tenant red --project train
assert_rc 0
wait_state "$J_GA" cancelled
poll 20 free_is gaudi.1x 2 || fail "gaudi.1x has not both cards free before the fault"
_pass
run_cli agent inject --state-dir "$E2E_TMP/state" --node ga --gpu "$GA0" --critical 2
assert_rc 0
poll 20 health_is "$GA0" failed || fail "the Gaudi card did not fail on critical events (health '$(gpu_field "$GA0" .health)')"
_pass
assert_eq "$(gpu_field "$GA0" .allocatable)" false "the failed Gaudi card is not allocatable"
poll 20 free_is gaudi.1x 1 || fail "gaudi.1x still counts the failed card free"
_pass
sub crit-two --class gaudi.1x --units 2 -- "$BIN/vsleep" 300
J_AC=$JID
wait_reason "$J_AC"
assert_match "$(jf "$J_AC" .state)" '^(pending|admitted)$' "two Gaudi units wait: one card is failed"
as "$RU" job cancel "$J_AC" --tenant red --project train
assert_rc 0
sub crit-one --class gaudi.1x -- "$BIN/vsleep" 300
J_C1=$JID
wait_state "$J_C1" running
gp -o json binding list --job "$J_C1"
assert_eq "$(jout '.items[0].gpu')" "$GA1" "one Gaudi unit runs on the healthy card"

# ---------------------------------------------------------------- discovered nodes
# Two more agents discover their cards through the fake AMD SMI and HLML libraries (built by
# the tests: tests/fake_amdsmi, tests/fake_hlml): an MI300X in CPX mode (8 partitions,
# processors 0..7) and one in SPX (processor 8); two Gaudi 3 cards whose module ids (3, 0)
# are not their indexes (0, 1).  The agent gives each workload the numbers the vendor's
# software uses, which the server does not keep.
if [ -n "${FAKE_AMDSMI_PATH:-}" ] && [ -n "${FAKE_HLML_PATH:-}" ]; then
    note "discovered nodes: ROCm's order with partitions, Gaudi module ids"
    GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --vendor amd --amdsmi-library "$FAKE_AMDSMI_PATH" \
        --node-name hw-mi --state-dir "$E2E_TMP/state-mi" --interval 1 --grace 1 \
        >"$E2E_TMP/agent-mi.out" 2>"$E2E_TMP/agent-mi.err" </dev/null &
    HWMI_PID=$!
    E2E_PIDS+=("$HWMI_PID")
    GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" --server "$URL" agent --vendor intel --hlml-library "$FAKE_HLML_PATH" \
        --node-name hw-ga --state-dir "$E2E_TMP/state-ga" --interval 1 --grace 1 \
        >"$E2E_TMP/agent-ga.out" 2>"$E2E_TMP/agent-ga.err" </dev/null &
    HWGA_PID=$!
    E2E_PIDS+=("$HWGA_PID")
    five_ready() {
        gp -o json node list
        [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 5 ]
    }
    poll 30 five_ready || { _show "agent-mi stderr" "$E2E_TMP/agent-mi.err"; _show "agent-ga stderr" "$E2E_TMP/agent-ga.err"; fail "the discovered nodes did not register"; }
    _pass
    HW_CPX=$(gpu_of hw-mi 0 .uuid)
    assert_eq "$(gpu_field "$HW_CPX" '.slices | length')" 8 "partitions of the discovered CPX card"
    # a discovered node has this machine's CPUs and memory: the classes ask for none
    gp class create hw.mi --form whole --models "AMD Instinct MI300X" --cpus 0 --memory 0
    assert_rc 0
    gp class create hw.cpx --form mig:cpx.24gb --models "AMD Instinct MI300X" --cpus 0 --memory 0
    assert_rc 0
    gp class create hw.gaudi --form whole --models HL-325L --cpus 0 --memory 0
    assert_rc 0
    sub hw-spx --class hw.mi -- sh -c "$ENVCMD"
    J_HS=$JID
    sub hw-cpx --class hw.cpx --units 2 -- sh -c "$ENVCMD"
    J_HC=$JID
    sub hw-gaudi --class hw.gaudi --units 2 -- sh -c "$ENVCMD"
    J_HG=$JID
    for j in "$J_HS" "$J_HC" "$J_HG"; do wait_env "$j"; done
    # the SPX card comes after the CPX card's 8 partitions: ROCm's device 8
    F=$ENVD/$J_HS.env
    assert_line "$F" "ROCR_VISIBLE_DEVICES=8"
    assert_line "$F" "HIP_VISIBLE_DEVICES=0"
    assert_no_var "$F" CUDA_
    # the partitions: their processor index (their place on the card here)
    gp -o json gpu show "$HW_CPX"
    cp "$OUT_FILE" "$E2E_TMP/hwcpx.json"
    as "$RU" -o json job show "$J_HC" --tenant red --project train
    want=$(jq -r --slurpfile c "$E2E_TMP/hwcpx.json" \
        '[.bindings | sort_by(.unit)[] | .slice as $s | $c[0].slices | map(.uuid) | index($s) | tostring] | join(",")' "$OUT_FILE")
    assert_match "$want" '^[0-7],[0-7]$' "the discovered CPX job's partitions"
    assert_line "$ENVD/$J_HC.env" "ROCR_VISIBLE_DEVICES=$want"
    # Gaudi: module ids for SynapseAI (card 0 is module 3, card 1 module 0), indexes for the hook
    as "$RU" -o json job show "$J_HG" --tenant red --project train
    mods=() idxs=()
    for uuid in $(jout '.bindings | sort_by(.unit)[] | .gpu'); do
        i=$(gpu_field "$uuid" .index)
        idxs+=("$i")
        mods+=("$([ "$i" == 0 ] && echo 3 || echo 0)")
    done
    F=$ENVD/$J_HG.env
    assert_line "$F" "HABANA_VISIBLE_MODULES=$(IFS=,; echo "${mods[*]}")"
    assert_line "$F" "HABANA_VISIBLE_DEVICES=$(IFS=,; echo "${idxs[*]}")"
    assert_no_var "$F" CUDA_
    for j in "$J_HS" "$J_HC" "$J_HG"; do
        as "$RU" job cancel "$j" --tenant red --project train
        assert_rc 0
    done
    for pid in "$HWMI_PID" "$HWGA_PID"; do
        kill -TERM "$pid" 2>/dev/null
        _wait_exit "$pid" 10 || fail "a discovering agent did not stop within 10 s of SIGTERM"
        _forget_pid "$pid"
        assert_eq "$_EXIT" 0 "exit code of a discovering agent after SIGTERM"
    done
    assert_clean "$E2E_TMP/agent-mi.err"
    assert_clean "$E2E_TMP/agent-ga.err"
else
    note "FAKE_AMDSMI_PATH/FAKE_HLML_PATH not set: the discovered nodes are not checked"
fi

# ---------------------------------------------------------------- usage by vendor
note "card-hours split by vendor"
for j in "$J_C1" "$J_NV" "$J_CPX"; do
    as "$RU" job cancel "$j" --tenant red --project train
    assert_rc 0
done
for j in "$J_C1" "$J_NV" "$J_CPX"; do wait_state "$j" cancelled; done
gp -o json usage report --month "$(date -u +%Y-%m)" --group-by vendor
assert_rc 0
cp "$OUT_FILE" "$E2E_TMP/usage.json"
for v in nvidia amd intel; do
    assert_match "$(jq -r "[.rows[] | select(.vendor == \"$v\") | .card_hours] | add" "$E2E_TMP/usage.json")" \
        '^[0-9.e-]+$' "card-hours of $v"
    awk -v h="$(jq -r "[.rows[] | select(.vendor == \"$v\") | .card_hours] | add" "$E2E_TMP/usage.json")" \
        'BEGIN { exit !(h > 0) }' || fail "no card-hours on $v cards"
    _pass
done
gp -o json usage report --month "$(date -u +%Y-%m)" --group-by vendor --vendor amd
assert_rc 0
assert_eq "$(jout '[.rows[] | select(.vendor != null and .vendor != "amd")] | length')" 0 "--vendor amd keeps AMD usage only"
gp usage report --group-by vendor --vendor cerebras
assert_rc 2
assert_one_line_error

kill -TERM "$AGENT_PID" 2>/dev/null
_wait_exit "$AGENT_PID" 10 || fail "the agent did not stop within 10 s of SIGTERM"
_forget_pid "$AGENT_PID"
assert_eq "$_EXIT" 0 "exit code of the agent after SIGTERM"
assert_clean "$AGENT_ERR"
stop_server
done_testing
