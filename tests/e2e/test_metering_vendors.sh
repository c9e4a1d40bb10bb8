#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2317  # start_server takes optional flags; poll calls helpers indirectly
#
# test_metering_vendors.sh - usage and cost reports split by accelerator
# vendor, end to end: an NVIDIA node and an AMD node join through the API as
# agents do (POST /api/v1/agent/register with a report whose gpus name their
# vendor, then a heartbeat), jobs of two tenants hold cards of both, a rate
# card prices the vendors differently, and the reports by vendor give each
# vendor's card-hours (against the bindings' own start and end times) and
# cost (hours x that vendor's price).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_metering_vendors.sh
#
# Checked: rate cards by vendor and model (most specific wins), refused with
# an unknown vendor, a negative or an absurd price (nothing stored); reports
# grouped by vendor, by tenant and vendor, by vendor and accelerator, and
# narrowed by ?vendor= / ?accelerator=; idle capacity split by vendor
# (allocated + idle = capacity); CSV with a vendor column (API and `gpupool
# report cost -o csv`); the tenant overview's holdings and card-hours by
# vendor; isolation: a tenant-admin grouping by vendor sees only its tenant's
# rows (another tenant's 404, no tenant 403), and a vendor filter never
# widens a scope; bad vendor / group_by refused (400, one-line CLI error).
# The arithmetic of specificity and grouping is in tests/unit/test_meter_vendor.c.
. "$(dirname "$0")/lib.sh"

# nodes only go silent after 10 minutes: the test's heartbeats are its own calls
start_server --node-timeout 600
ADMIN=$TOKEN
gp member grant admin ops-engineer
assert_rc 0

# ---------------------------------------------------------------- two vendors join
note "an NVIDIA node and an AMD node register as agents do"
# register NODE GPUS_JSON DRIVER: the agent's register call; NODE_TOKEN: the node's credential
register() {
    gp -o json jointoken create --ttl 600
    assert_rc 0
    local jt
    jt=$(jout .token)
    AUTH_HEADER='' api POST /api/v1/agent/register \
        "{\"join_token\":\"$jt\",\"node\":{\"name\":\"$1\",\"cpus\":32,\"memory_gib\":256,\"driver_version\":\"$3\",\"gpus\":$2}}"
    assert_status 201
    NODE_TOKEN=$(jq -r .token "$BODY_FILE")
}
NV_GPUS='[{"uuid":"GPU-nv-0","index":0,"model":"NVIDIA H100 80GB HBM3","memory_mib":81920,"vendor":"nvidia","driver_version":"550.54.15","stack":{"cuda":"12.4"}},
          {"uuid":"GPU-nv-1","index":1,"model":"NVIDIA H100 80GB HBM3","memory_mib":81920,"vendor":"nvidia","driver_version":"550.54.15","stack":{"cuda":"12.4"}}]'
AMD_GPUS='[{"uuid":"GPU-amd-0","index":0,"model":"AMD Instinct MI300X","memory_mib":196608,"vendor":"amd","driver_version":"6.8.5","stack":{"rocm":"6.2.0"}},
           {"uuid":"GPU-amd-1","index":1,"model":"AMD Instinct MI300X","memory_mib":196608,"vendor":"amd","driver_version":"6.8.5","stack":{"rocm":"6.2.0"}}]'
register nv-1 "$NV_GPUS" 550.54.15
NV_TOKEN=$NODE_TOKEN
register amd-1 "$AMD_GPUS" 6.8.5
AMD_TOKEN=$NODE_TOKEN
if [ -z "$NV_TOKEN" ] || [ -z "$AMD_TOKEN" ]; then fail "no node credential"; fi
beat() {
    AUTH_HEADER="Authorization: Bearer $2" api POST /api/v1/agent/heartbeat \
        "{\"node\":\"$1\",\"gpus\":[{\"uuid\":\"$3\",\"signals\":{}},{\"uuid\":\"$4\",\"signals\":{}}]}"
    assert_status 200
}
beat nv-1 "$NV_TOKEN" GPU-nv-0 GPU-nv-1
beat amd-1 "$AMD_TOKEN" GPU-amd-0 GPU-amd-1
ready() {
    gp -o json node list
    [ "$(jout '[.items[] | select(.state == "ready")] | length')" == 2 ]
}
poll 10 ready || fail "the nodes are not ready: $(cat "$OUT_FILE")"
_pass
gp -o json gpu list
assert_rc 0
assert_json '[.items[] | "\(.node):\(.vendor)"] | unique | join(",")' "amd-1:amd,nv-1:nvidia" "$OUT_FILE"

gp class create h100.1x --form whole --models H100 --cpus 1 --memory 1
assert_rc 0
gp class create mi300x.1x --form whole --models MI300X --cpus 1 --memory 1
assert_rc 0
for t in red blue; do
    gp tenant create $t
    assert_rc 0
    gp project create p --tenant $t
    assert_rc 0
done
for u in ta bu; do printf '%s-Secret-9\n' "$u" >"$E2E_TMP/pw.$u"; done
for u in ta bu; do
    run_in "$E2E_TMP/pw.$u" --server "$URL" --token "$ADMIN" user create "$u"
    assert_rc 0
done
gp member grant ta tenant-admin --tenant red
assert_rc 0
gp member grant bu tenant-admin --tenant blue
assert_rc 0
login() {
    run_in "$E2E_TMP/pw.$1" --server "$URL" login "$1"
    assert_rc 0
    head -n 1 "$OUT_FILE"
}
TA=$(login ta)
BU=$(login bu)

# ---------------------------------------------------------------- rate cards by vendor
note "rate cards price the vendors differently; bad ones are refused"
NOW_S=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
EFF=$(iso $((NOW_S - 3600)))
cat >"$E2E_TMP/card.json" <<EOF
{"effective_from":"$EFF","currency":"EUR",
 "card_hour":[{"vendor":"nvidia","price":2000},{"vendor":"amd","price":3000},
              {"model":"MI300X","vendor":"amd","price":5000},{"price":1000}]}
EOF
for bad in '{"vendor":"AMD","price":3}' '{"vendor":"arm","price":3}' '{"vendor":"amd","price":-1}' \
    '{"vendor":"amd","price":5000000}' '{"vendor":"amd","price":"3"}'; do
    echo "{\"effective_from\":\"$EFF\",\"currency\":\"EUR\",\"card_hour\":[$bad]}" >"$E2E_TMP/bad.json"
    gp ratecard create "$E2E_TMP/bad.json"
    assert_rc 1
    assert_one_line_error
    api POST /api/v1/rate-cards "@$E2E_TMP/bad.json"
    assert_status 400
done
gp -o json ratecard list
assert_json '.items | length' 0 "$OUT_FILE"
gp -o json ratecard create "$E2E_TMP/card.json"
assert_rc 0
assert_json '.version' 1 "$OUT_FILE"
assert_json '[.card_hour[] | "\(.vendor // "*")/\(.model)=\(.price)"] | join(",")' \
    "nvidia/*=2000,amd/*=3000,amd/MI300X=5000,*/*=1000" "$OUT_FILE"

# ---------------------------------------------------------------- jobs on both vendors
note "jobs of red and blue hold an H100 and an MI300X each"
submit() { # TOKEN TENANT NAME CLASS -> JOB_ID
    as "$1" -o json job submit "$3" --tenant "$2" --project p --class "$4" -- sleep 300
    assert_rc 0
    JOB_ID=$(jout .id)
}
submit "$TA" red red-nv h100.1x
RN=$JOB_ID
submit "$TA" red red-amd mi300x.1x
RA=$JOB_ID
submit "$BU" blue blue-nv h100.1x
BN=$JOB_ID
submit "$BU" blue blue-amd mi300x.1x
BA=$JOB_ID
running2() { # TENANT: both of its jobs run
    gp -o json job list --tenant "$1" --project p
    [ "$(jout '[.items[] | select(.state == "running")] | length')" == 2 ]
}
for t in red blue; do
    poll 15 running2 $t || fail "not every job of $t runs: $(jq -c '[.items[] | {name, state, reason}]' "$OUT_FILE")"
    _pass
done
# each job sits on its own vendor's cards (the class names the model)
for j in "$RN" "$BN"; do
    gp -o json binding list --job "$j"
    assert_json '.items[0].node' nv-1 "$OUT_FILE"
done
for j in "$RA" "$BA"; do
    gp -o json binding list --job "$j"
    assert_json '.items[0].node' amd-1 "$OUT_FILE"
done

# the tenant overview while they hold: what red holds, by vendor and form
AUTH_HEADER="Authorization: Bearer $TA" api GET /api/v1/tenants/red/overview
assert_status 200
assert_json '[.accelerators[] | "\(.vendor):\(.form):\(.gpus):\(.cards)"] | join(",")' \
    "amd:whole:1:1,nvidia:whole:1:1"
assert_json '[.usage.by_vendor[].vendor] | join(",")' "amd,nvidia"
as "$TA" tenant overview red
assert_rc 0
assert_file_contains "$OUT_FILE" "held now, by vendor:"
assert_file_contains "$OUT_FILE" "AMD Instinct MI300X"

sleep 3
for j in "$RN" "$RA"; do
    as "$TA" job cancel "$j" --tenant red --project p
    assert_rc 0
done
for j in "$BN" "$BA"; do
    as "$BU" job cancel "$j" --tenant blue --project p
    assert_rc 0
done
ended() {
    gp -o json binding list
    [ "$(jout '[.items[] | select(.end == null)] | length')" == 0 ]
}
poll 10 ended || fail "bindings still open: $(cat "$OUT_FILE")"
_pass

# held HOURS of job J from its bindings' own start and end
held() {
    gp -o json binding list --job "$1"
    jq '[.items[] | ((.end | sub("\\.[0-9]+Z$";"Z") | fromdate) - (.start | sub("\\.[0-9]+Z$";"Z") | fromdate))] | add / 3600' "$OUT_FILE"
}
H_RN=$(held "$RN")
H_RA=$(held "$RA")
H_BN=$(held "$BN")
H_BA=$(held "$BA")
# near A B: within 0.0015 card-hours (the bindings' times are listed to the second)
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d < 0.0015 * (b > 1 ? b : 1)) }'; }

# ---------------------------------------------------------------- reports by vendor
note "the platform's report by vendor"
MONTH=$(date -u +%Y-%m)
api GET "/api/v1/usage?month=$MONTH&group_by=vendor"
assert_status 200
cp "$BODY_FILE" "$E2E_TMP/byv.json"
# (the platform's report adds the idle line per vendor: tenant "(idle)")
USED='.rows[] | select(.tenant != "(idle)")'
assert_json "[$USED | .vendor] | join(\",\")" "amd,nvidia" "$E2E_TMP/byv.json"
AMD_H=$(jq "$USED | select(.vendor == \"amd\") | .card_hours" "$E2E_TMP/byv.json")
NV_H=$(jq "$USED | select(.vendor == \"nvidia\") | .card_hours" "$E2E_TMP/byv.json")
AMD_C=$(jq "$USED | select(.vendor == \"amd\") | .card_hour_cost" "$E2E_TMP/byv.json")
NV_C=$(jq "$USED | select(.vendor == \"nvidia\") | .card_hour_cost" "$E2E_TMP/byv.json")
near "$AMD_H" "$(awk -v a="$H_RA" -v b="$H_BA" 'BEGIN { print a + b }')" ||
    fail "amd card-hours $AMD_H, its bindings held $H_RA + $H_BA"
_pass
near "$NV_H" "$(awk -v a="$H_RN" -v b="$H_BN" 'BEGIN { print a + b }')" ||
    fail "nvidia card-hours $NV_H, its bindings held $H_RN + $H_BN"
_pass
# cost: the MI300X price (the model's 5000, over the vendor's 3000) and NVIDIA's 2000 (over the
# default 1000)
near "$AMD_C" "$(awk -v h="$AMD_H" 'BEGIN { print h * 5000 }')" || fail "amd cost $AMD_C for $AMD_H card-hours at 5000"
_pass
near "$NV_C" "$(awk -v h="$NV_H" 'BEGIN { print h * 2000 }')" || fail "nvidia cost $NV_C for $NV_H card-hours at 2000"
_pass
assert_json '[.rate_cards[].version] | join(",")' 1 "$E2E_TMP/byv.json"
assert_json '.unpriced' false "$E2E_TMP/byv.json"

note "by tenant and vendor, by vendor and accelerator, narrowed by vendor"
api GET "/api/v1/usage?month=$MONTH&group_by=tenant,vendor"
assert_status 200
cp "$BODY_FILE" "$E2E_TMP/tv.json"
assert_json '[.rows[] | "\(.tenant)/\(.vendor)"] | join(",")' "(idle)/amd,(idle)/nvidia,blue/amd,blue/nvidia,red/amd,red/nvidia" "$E2E_TMP/tv.json"
RED_AMD=$(jq '.rows[] | select(.tenant == "red" and .vendor == "amd") | .card_hours' "$E2E_TMP/tv.json")
near "$RED_AMD" "$H_RA" || fail "red/amd $RED_AMD, red's MI300X job held $H_RA"
_pass
api GET "/api/v1/usage?month=$MONTH&group_by=vendor,accelerator"
assert_status 200
assert_json '[.rows[] | select(.tenant == null) | "\(.vendor):\(.accelerator):\(.form)"] | join(",")' \
    "amd:AMD Instinct MI300X:whole,nvidia:NVIDIA H100 80GB HBM3:whole"
assert_json '[.rows[] | select(.tenant == "(idle)") | "\(.vendor):\(.accelerator)"] | join(",")' \
    "amd:AMD Instinct MI300X,nvidia:NVIDIA H100 80GB HBM3"
api GET "/api/v1/usage?month=$MONTH&group_by=tenant&vendor=amd"
assert_status 200
assert_json '.filters.vendor' amd
assert_json '[.rows[].tenant] | join(",")' "(idle),blue,red"
near "$(jq .totals.card_hours "$BODY_FILE")" "$AMD_H" || fail "the amd-only total is not amd's"
_pass
near "$(jq .capacity.allocated "$BODY_FILE")" "$AMD_H" || fail "the amd-only allocation is not amd's"
_pass
api GET "/api/v1/usage?month=$MONTH&group_by=vendor&accelerator=H100"
assert_status 200
assert_json '[.rows[].vendor] | unique | join(",")' nvidia

note "idle capacity split by vendor"
api GET "/api/v1/usage?month=$MONTH&group_by=vendor"
assert_status 200
jq -e '.capacity | (.allocated + .idle - .card_hours) | fabs < 0.00001' "$BODY_FILE" >/dev/null ||
    fail "allocated + idle != capacity: $(jq -c .capacity "$BODY_FILE")"
_pass
assert_json '[.rows[] | select(.tenant == "(idle)") | .vendor] | join(",")' "amd,nvidia"

note "CSV with the vendor column"
api GET "/api/v1/usage?month=$MONTH&group_by=tenant,vendor&format=csv"
assert_status 200
assert_eq "$(head -n 1 "$BODY_FILE" | tr -d '\r')" \
    "tenant,vendor,card_hours,card_hour_cost,cpu_hours,cpu_cost,memory_gib_hours,memory_cost,requests,prompt_tokens,completion_tokens,token_cost,cost,billing" "CSV header"
assert_file_contains "$BODY_FILE" "red,amd,"
assert_file_contains "$BODY_FILE" "blue,nvidia,"
assert_file_contains "$BODY_FILE" "(idle),amd,"
gp -o csv report cost --month "$MONTH" --group-by vendor
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -d '\r')" \
    "tenant,vendor,card_hours,card_hour_cost,cpu_hours,cpu_cost,memory_gib_hours,memory_cost,requests,prompt_tokens,completion_tokens,token_cost,cost" \
    "report cost CSV header (the platform's: with the idle lines' tenant column)"
assert_eq "$(grep -c '^,amd,\|^,nvidia,' "$OUT_FILE")" 2 "one line per vendor"
assert_file_contains "$OUT_FILE" "(idle),amd,"
gp -o json usage report --month "$MONTH" --group-by vendor --vendor nvidia
assert_rc 0
assert_json '[.rows[].vendor] | unique | join(",")' nvidia "$OUT_FILE"
gp usage report --month "$MONTH" --group-by vendor
assert_rc 0
assert_file_contains "$OUT_FILE" "rate cards: v1"

note "GPUs by vendor in /metrics"
api GET /metrics
assert_status 200
assert_file_contains "$BODY_FILE" 'gpupool_gpus_vendor{vendor="amd",model="AMD Instinct MI300X",health="healthy"} 2'
assert_file_contains "$BODY_FILE" 'gpupool_gpus_vendor{vendor="nvidia",model="NVIDIA H100 80GB HBM3",health="healthy"} 2'
AUTH_HEADER='' api GET /metrics
assert_file_lacks "$BODY_FILE" 'gpupool_gpus_vendor'

# ---------------------------------------------------------------- isolation
note "isolation: a tenant grouping by vendor sees only its own rows"
as "$TA" -o json usage report --month "$MONTH" --tenant red --group-by tenant,vendor
assert_rc 0
assert_eq "$(jout '[.rows[].tenant] | unique | join(",")')" red "red sees only red"
assert_eq "$(jout '[.rows[].vendor] | join(",")')" "amd,nvidia" "red's vendors"
near "$(jout .totals.card_hours)" "$(awk -v a="$H_RA" -v b="$H_RN" 'BEGIN { print a + b }')" ||
    fail "red's total is not red's own: $(jout .totals)"
_pass
assert_eq "$(jout '.capacity')" null "no platform capacity for a tenant"
assert_file_lacks "$OUT_FILE" '"blue"'
# the vendor filter narrows red's scope, never widens it
AUTH_HEADER="Authorization: Bearer $TA" api GET "/api/v1/usage?month=$MONTH&tenant=red&group_by=tenant,vendor&vendor=amd"
assert_status 200
assert_json '[.rows[] | "\(.tenant)/\(.vendor)"] | join(",")' "red/amd"
AUTH_HEADER="Authorization: Bearer $TA" api GET "/api/v1/usage?month=$MONTH&group_by=vendor&vendor=amd"
assert_status 403
AUTH_HEADER="Authorization: Bearer $TA" api GET "/api/v1/usage?month=$MONTH&tenant=blue&group_by=vendor"
assert_status 404
assert_file_lacks "$BODY_FILE" "amd"
as "$TA" usage report --month "$MONTH" --tenant blue --group-by vendor --vendor amd
assert_denied 404
as "$BU" -o json usage report --month "$MONTH" --tenant blue --group-by vendor,accelerator
assert_rc 0
assert_eq "$(jout '[.rows[].vendor] | join(",")')" "amd,nvidia" "blue's vendors"
near "$(jout .totals.card_hours)" "$(awk -v a="$H_BA" -v b="$H_BN" 'BEGIN { print a + b }')" ||
    fail "blue's total is not blue's own: $(jout .totals)"
_pass
AUTH_HEADER="Authorization: Bearer $BU" api GET "/api/v1/tenants/red/overview"
assert_status 404

# ---------------------------------------------------------------- bad input
note "bad vendors and groupings are refused"
api GET "/api/v1/usage?month=$MONTH&vendor=arm"
assert_status 400
assert_json '.error.code' invalid_argument
api GET "/api/v1/usage?month=$MONTH&vendor=AMD"
assert_status 400
api GET "/api/v1/usage?month=$MONTH&group_by=vendors"
assert_status 400
gp usage report --vendor gaudi
assert_rc 2
assert_one_line_error
gp usage report --group-by tenant,vendorz
assert_rc 1
assert_one_line_error

stop_server
done_testing
