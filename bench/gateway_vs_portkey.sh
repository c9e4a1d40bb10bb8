#!/usr/bin/env bash
#
# gateway_vs_portkey.sh - gpupool's /v1 gateway against the real peer, Portkey's
# AI gateway (npm @portkey-ai/gateway, pinned by bench/portkey/package-lock.json),
# and against the upstream reached directly, in one run, as ratios (issue 22).
# A bench, not a CI test (bench/README.md).
#
#   bash bench/gateway_vs_portkey.sh [SECONDS]          # default 10 s per run
#   GPUPOOL_BIN=build-rel/gpupool CONNS=16 THREADS=2 bash bench/gateway_vs_portkey.sh 10
#   ROUNDS=3 bash bench/gateway_vs_portkey.sh 10        # interleaved rounds, the median
#   NO_PORTKEY=1 bash bench/gateway_vs_portkey.sh 5     # direct vs gpupool only
#   # last line: direct_rps=N gpupool_rps=N portkey_rps=N gpupool_vs_portkey=X
#   #            gpupool_vs_direct=X added_p50_us=N added_p99_us=N ... check=ok
#
# One upstream (bench/portkey/upstream.js: Node, answers a chat completion with a
# usage block at once), one gpupool server (all-in-one, fresh SQLite store in a
# temporary folder; tenant, project, model "bench" on the upstream, a key with a
# monthly quota of 10^11 tokens, so the admission path with leases runs) and
# Portkey's gateway (its documented node start, build/start-server.js, headless,
# routed to the same upstream by the headers x-portkey-provider: openai and
# x-portkey-custom-host).  Everything listens on free loopback ports.
#
# The same client (wrk, one Lua script: the same POST body; every answer's status
# is checked by it) drives each target for SECONDS at CONNS connections (req/s,
# p50, p99), then at 1 connection (the latency a gateway adds over direct), after
# a 1-second warm-up of each; ROUNDS (default 1) repeats that sequence, interleaved,
# and each figure is then from the round of median req/s (a shared machine drifts).  Checked, or the script exits 1: every answer was a
# 200 and no socket error; every request the upstream answered through gpupool
# was metered by gpupool (the usage API, GET /api/v1/usage, counts the same
# requests and 21 tokens each: the upstream's own figures); wrk's counts agree
# with the upstream's.  Every process and the temporary folder go on exit.
set -euo pipefail
SECONDS_EACH=${1:-10}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
NO_PORTKEY=${NO_PORTKEY:-0}
ROUNDS=${ROUNDS:-1}
[[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [SECONDS]  (a whole number >= 1)" >&2; exit 2; }
[[ "$CONNS" =~ ^[1-9][0-9]*$ && "$THREADS" =~ ^[1-9][0-9]*$ && "$ROUNDS" =~ ^[1-9][0-9]*$ ]] ||
    { echo "$0: CONNS, THREADS and ROUNDS must be whole numbers >= 1" >&2; exit 2; }
[ "$THREADS" -le "$CONNS" ] || THREADS=$CONNS
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PK=$ROOT/bench/portkey
BIN=${GPUPOOL_BIN:-$ROOT/build/gpupool}
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "$0: $BIN is not built (cmake --build build), or set GPUPOOL_BIN" >&2; exit 2; }
for c in node npm curl jq awk; do
    command -v "$c" >/dev/null || { echo "$0: needs '$c' on PATH (scripts/bootstrap.sh, scripts/npm-deps.sh)" >&2; exit 2; }
done
export NO_PROXY='*' no_proxy='*'
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy GPUPOOL_SERVER GPUPOOL_TOKEN GPUPOOL_TOKEN_FILE

# ---------------------------------------------------------------- the client: wrk
# Debian's wrk is a bench-only tool: scripts/bootstrap.sh has no bench list, so it is
# installed here, once, when missing.
if ! command -v wrk >/dev/null; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "gateway_vs_portkey: needs wrk: run 'apt-get install wrk' as root" >&2; exit 2; }
        SUDO=sudo
    fi
    echo "gateway_vs_portkey: wrk (the load generator) is missing: installing Debian's wrk package" >&2
    $SUDO apt-get update -qq >&2 || true
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >&2 ||
        { echo "gateway_vs_portkey: cannot install wrk (apt-get install wrk)" >&2; exit 2; }
fi

# ---------------------------------------------------------------- Portkey, from the lock file
PORTKEY_WHY=""
if [ "$NO_PORTKEY" != 0 ]; then
    PORTKEY_WHY="NO_PORTKEY=$NO_PORTKEY"
else
    stamp=$PK/node_modules/.package-lock.json
    if [ ! -f "$stamp" ] || [ "$PK/package-lock.json" -nt "$stamp" ] || [ "$PK/package.json" -nt "$stamp" ]; then
        echo "gateway_vs_portkey: npm ci in bench/portkey (Portkey's gateway, as locked)" >&2
        if ! (cd "$PK" && npm ci --no-audit --no-fund --loglevel=error) >&2; then
            PORTKEY_WHY="npm ci in bench/portkey failed (above)"
        fi
    fi
    PK_START=$PK/node_modules/@portkey-ai/gateway/build/start-server.js
    [ -n "$PORTKEY_WHY" ] || [ -f "$PK_START" ] || PORTKEY_WHY="$PK_START is missing after npm ci"
fi

# ---------------------------------------------------------------- processes, cleaned up on exit
T=$(mktemp -d /tmp/gpupool-vs-portkey.XXXXXX)
PIDS=()
WRK_PID="" # the wrk run in progress
cleanup() {
    local p
    for p in $WRK_PID "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() {
    echo "gateway_vs_portkey: $*" >&2
    exit 1
}
# wait_for FILE WHAT: until FILE exists and is not empty (30 s at most)
wait_for() {
    local i
    for ((i = 0; i < 300; i++)); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    die "$2 did not start; its output: $(tail -c 2000 "$3" 2>/dev/null)"
}

# the upstream
node "$PK/upstream.js" --port 0 >"$T/up.out" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do grep -q '^listening ' "$T/up.out" && break; sleep 0.1; done
UP_PORT=$(awk '/^listening /{print $2; exit}' "$T/up.out")
[ -n "$UP_PORT" ] || die "the upstream did not start: $(cat "$T/up.out")"
UP=http://127.0.0.1:$UP_PORT
up_chats() { curl -sf "$UP/_stats" | jq -r .chat; }

# gpupool, all in one, on a fresh store
"$BIN" server --data "$T/data" --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 \
    --log-level warn >"$T/gp.out" 2>"$T/gp.err" </dev/null &
PIDS+=($!)
wait_for "$T/data/server.url" "gpupool server" "$T/gp.err"
GP=$(head -n 1 "$T/data/server.url")
for ((i = 0; i < 300; i++)); do [ -s "$T/data/admin.token" ] && curl -sf "$GP/healthz" >/dev/null && break; sleep 0.1; done
ADMIN=$(head -n 1 "$T/data/admin.token")
gp() { "$BIN" --server "$GP" --token "$ADMIN" "$@"; }
gp tenant create bench >/dev/null
gp member grant admin tenant-admin --tenant bench >/dev/null
gp project create p --tenant bench >/dev/null
gp model create bench --tenant bench >/dev/null
gp endpoint add --tenant bench --model bench --url "$UP/v1" --accelerator H100-80GB >/dev/null
KEY=$(gp -o json key create bench-key --tenant bench --project p --tokens-month 100000000000 | jq -r .key)
[[ "$KEY" == sk-* ]] || die "no API key made"

# Portkey's gateway, on a free loopback port (bench/portkey/loopback.cjs)
if [ -z "$PORTKEY_WHY" ]; then
    (cd "$PK" && PORTKEY_PORT_FILE="$T/portkey.port" exec node --require "$PK/loopback.cjs" \
        "$PK_START" --headless) >"$T/portkey.out" 2>&1 </dev/null &
    PIDS+=($!)
    for ((i = 0; i < 300; i++)); do [ -s "$T/portkey.port" ] && break; sleep 0.1; done
    if [ -s "$T/portkey.port" ]; then
        PORTKEY=http://127.0.0.1:$(cat "$T/portkey.port")
        for ((i = 0; i < 100; i++)); do curl -sf "$PORTKEY/" >/dev/null && break; sleep 0.1; done
    else
        PORTKEY_WHY="Portkey's gateway did not start: $(tail -c 1500 "$T/portkey.out")"
    fi
fi
[ -z "$PORTKEY_WHY" ] || echo "gateway_vs_portkey: without Portkey: $PORTKEY_WHY" >&2

# ---------------------------------------------------------------- the load
BODY='{"model":"bench","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
# the same body for every target; wrk counts answers that are not 200 (non200)
cat >"$T/load.lua" <<EOF
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) non200 = 0 end
function response(status, headers, body)
    if status ~= 200 then
        non200 = non200 + 1
        if non200 == 1 then io.stderr:write("first non-200: " .. status .. " " .. body:sub(1, 300) .. "\n") end
    end
end
function done(summary, latency, requests)
    local bad = 0
    for _, t in ipairs(threads) do bad = bad + t:get("non200") end
    local e = summary.errors
    io.write(string.format('RESULT {"requests":%d,"duration_us":%d,"non200":%d,"socket_errors":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
        summary.requests, summary.duration, bad, e.connect + e.read + e.write + e.timeout,
        latency:percentile(50), latency:percentile(99), latency.mean))
end
EOF
# target NAME -> the URL and headers wrk sends for it
declare -A URLS HDRS
URLS[direct]=$UP/v1/chat/completions
HDRS[direct]=""
URLS[gpupool]=$GP/v1/chat/completions
HDRS[gpupool]="Authorization: Bearer $KEY"
if [ -z "$PORTKEY_WHY" ]; then
    URLS[portkey]=$PORTKEY/v1/chat/completions
    # provider openai with a custom host: Portkey's documented way to an OpenAI-compatible server
    HDRS[portkey]="x-portkey-provider: openai|x-portkey-custom-host: $UP/v1|Authorization: Bearer sk-unused"
    TARGETS=(direct gpupool portkey)
else
    TARGETS=(direct gpupool)
fi
THROUGH_GP=0 # chat completions the upstream answered while gpupool was driven
FAILED=()
# settle: until the upstream's count stops moving (requests in flight when wrk stopped)
settle() {
    local a b
    a=$(up_chats)
    while :; do
        sleep 0.2
        b=$(up_chats)
        [ "$a" == "$b" ] && break
        a=$b
    done
    echo "$a"
}
# stages FILE: gpupool's per-stage histograms now (/metrics, gpupool_gateway_stage_seconds)
stages() { curl -sf "$GP/metrics" | grep '^gpupool_gateway_stage_seconds' >"$1" || true; }
# stage_table TAG: per stage, the requests of that run, their mean and the bucket bound of their
# p50 and p99 (µs; docs/gateway.md, "Where a request's time goes")
stage_table() {
    awk 'FNR == NR { v0[$1] = $2; next }
        { d = $2 - v0[$1]; name = $1; st = name; sub(/.*stage="/, "", st); sub(/".*/, "", st)
          if (!(st in seen)) { seen[st] = 1; order[++n] = st }
          if (name ~ /_bucket/) { le = name; sub(/.*le="/, "", le); sub(/".*/, "", le)
              nb[st]++; b[st, nb[st]] = d; bl[st, nb[st]] = le }
          else if (name ~ /_sum/) sum[st] = d; else if (name ~ /_count/) cnt[st] = d }
        END { printf "%-9s %9s %9s %9s %9s\n", "stage", "requests", "mean µs", "p50 ≤µs", "p99 ≤µs"
          for (i = 1; i <= n; i++) { st = order[i]; c = cnt[st]; if (c <= 0) continue
              p50 = p99 = ""
              for (k = 1; k <= nb[st]; k++) {
                  le = bl[st, k] == "+Inf" ? "inf" : sprintf("%d", bl[st, k] * 1e6 + 0.5)
                  if (p50 == "" && b[st, k] >= 0.5 * c) p50 = le
                  if (p99 == "" && b[st, k] >= 0.99 * c) p99 = le }
              printf "%-9s %9d %9.1f %9s %9s\n", st, c, sum[st] * 1e6 / c, p50, p99 } }' \
        "$T/$1.st0" "$T/$1.st1"
}
# drive TARGET CONNS THREADS SECONDS TAG: one wrk run; the figures in $T/TAG.json
drive() {
    local name=$1 c=$2 t=$3 s=$4 tag=$5 args=() h before after n
    IFS='|' read -r -a hs <<<"${HDRS[$name]}"
    for h in "${hs[@]}"; do [ -z "$h" ] || args+=(-H "$h"); done
    before=$(settle)
    [ "$name" != gpupool ] || stages "$T/$tag.st0"
    # in the background, so that a signal stops the run at once (the EXIT trap stops wrk too)
    wrk -t "$t" -c "$c" -d "${s}s" --timeout 10s -s "$T/load.lua" "${args[@]}" "${URLS[$name]}" \
        >"$T/$tag.wrk" 2>"$T/$tag.err" &
    WRK_PID=$!
    wait "$WRK_PID" || { WRK_PID=""; die "wrk on $name failed: $(cat "$T/$tag.err")"; }
    WRK_PID=""
    after=$(settle)
    [ "$name" != gpupool ] || stages "$T/$tag.st1"
    sed -n 's/^RESULT //p' "$T/$tag.wrk" >"$T/$tag.json"
    [ -s "$T/$tag.json" ] || die "wrk on $name printed no result: $(cat "$T/$tag.wrk" "$T/$tag.err")"
    n=$(jq .requests "$T/$tag.json")
    [ "$name" != gpupool ] || THROUGH_GP=$((THROUGH_GP + after - before))
    # every answer wrk counted reached the upstream; at most the c in flight at the stop more
    if [ "$(jq '.non200 + .socket_errors' "$T/$tag.json")" != 0 ]; then
        FAILED+=("$tag: $(jq -c '{non200, socket_errors}' "$T/$tag.json") $(head -c 300 "$T/$tag.err")")
    elif [ $((after - before)) -lt "$n" ] || [ $((after - before)) -gt $((n + c)) ]; then
        FAILED+=("$tag: wrk counted $n answers, the upstream answered $((after - before))")
    fi
}
echo "# ${SECONDS_EACH}s per run, $CONNS connections ($THREADS wrk threads), then 1; $ROUNDS round(s); upstream $UP" >&2
for name in "${TARGETS[@]}"; do drive "$name" "$CONNS" "$THREADS" 1 "warm-$name"; done
for ((r = 1; r <= ROUNDS; r++)); do
    for name in "${TARGETS[@]}"; do
        echo "# round $r: $name, $CONNS connections" >&2
        drive "$name" "$CONNS" "$THREADS" "$SECONDS_EACH" "$name-c$CONNS-r$r"
    done
    for name in "${TARGETS[@]}"; do
        echo "# round $r: $name, 1 connection" >&2
        drive "$name" 1 1 "$SECONDS_EACH" "$name-c1-r$r"
    done
done
declare -A STAGE_ROUND
# per target and connections: the round of median req/s (its latencies with it) -> NAME-cC.json
for name in "${TARGETS[@]}"; do
    for c in "$CONNS" 1; do
        med=$(for ((r = 1; r <= ROUNDS; r++)); do
            echo "$(jq '.requests / (.duration_us / 1e6) | floor' "$T/$name-c$c-r$r.json") $r"
        done | sort -n | awk -v m=$(((ROUNDS + 1) / 2)) 'NR == m {print $2}')
        cp "$T/$name-c$c-r$med.json" "$T/$name-c$c.json"
        [ "$name" != gpupool ] || STAGE_ROUND[$c]=$med
    done
done

# ---------------------------------------------------------------- metering: nothing faked
# gpupool writes usage in batches: wait (60 s at most) until its usage report counts every
# request the upstream answered through it, with the upstream's 12 + 9 tokens each
METERED='{}'
for ((i = 0; i < 300; i++)); do
    METERED=$(gp -o json usage report --tenant bench --project p | jq -c '.totals | {requests, prompt_tokens, completion_tokens}')
    [ "$(jq .requests <<<"$METERED")" -ge "$THROUGH_GP" ] && break
    sleep 0.2
done
WANT=$(jq -nc --argjson n "$THROUGH_GP" '{requests: $n, prompt_tokens: (12 * $n), completion_tokens: (9 * $n)}')
if [ "$(jq -S . <<<"$METERED")" == "$(jq -S . <<<"$WANT")" ]; then
    METER_OK=ok
else
    METER_OK=FAILED
    FAILED+=("metering: the upstream answered $WANT through gpupool, gpupool metered $METERED")
fi

# ---------------------------------------------------------------- the table
fig() { jq -r "$2" "$T/$1.json"; }
rps() { jq -r '.requests / (.duration_us / 1e6) | floor' "$T/$1.json"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
    [ "$ROUNDS" == 1 ] || printf '\n(each line: of %s rounds, the one of median req/s)' "$ROUNDS"
    printf '\n%-9s %5s %10s %9s %9s %8s %8s\n' target conns 'req/s' 'p50 µs' 'p99 µs' non-200 errors
    for c in "$CONNS" 1; do
        for name in "${TARGETS[@]}"; do
            tag=$name-c$c
            printf '%-9s %5s %10s %9s %9s %8s %8s\n' "$name" "$c" "$(rps "$tag")" "$(fig "$tag" .p50_us)" \
                "$(fig "$tag" .p99_us)" "$(fig "$tag" .non200)" "$(fig "$tag" .socket_errors)"
        done
    done
    echo
    for c in "$CONNS" 1; do
        echo "gpupool's stages at $c connection(s), round ${STAGE_ROUND[$c]} (/metrics, gpupool_gateway_stage_seconds):"
        stage_table "gpupool-c$c-r${STAGE_ROUND[$c]}"
        echo
    done
}
D=$(rps "direct-c$CONNS")
G=$(rps "gpupool-c$CONNS")
D50=$(fig direct-c1 .p50_us)
D99=$(fig direct-c1 .p99_us)
A50=$(($(fig gpupool-c1 .p50_us) - D50))
A99=$(($(fig gpupool-c1 .p99_us) - D99))
echo "gpupool / direct at $CONNS connections: $(ratio "$G" "$D")"
SUMMARY="direct_rps=$D gpupool_rps=$G"
if [ -z "$PORTKEY_WHY" ]; then
    P=$(rps "portkey-c$CONNS")
    P50=$(($(fig portkey-c1 .p50_us) - D50))
    P99=$(($(fig portkey-c1 .p99_us) - D99))
    echo "gpupool / Portkey at $CONNS connections: $(ratio "$G" "$P")   (Portkey / direct: $(ratio "$P" "$D"))"
    echo "added over direct at 1 connection: gpupool p50 +${A50} µs p99 +${A99} µs; Portkey p50 +${P50} µs p99 +${P99} µs"
    SUMMARY+=" portkey_rps=$P gpupool_vs_portkey=$(ratio "$G" "$P")"
else
    echo "added over direct at 1 connection: gpupool p50 +${A50} µs p99 +${A99} µs   (no Portkey: $PORTKEY_WHY)"
    SUMMARY+=" portkey_rps=n/a"
fi
echo "metering: the upstream answered $THROUGH_GP chats through gpupool; gpupool metered $METERED: $METER_OK"
SUMMARY+=" gpupool_vs_direct=$(ratio "$G" "$D") added_p50_us=$A50 added_p99_us=$A99"
if [ -z "$PORTKEY_WHY" ]; then SUMMARY+=" portkey_added_p50_us=$P50 portkey_added_p99_us=$P99"; fi
if [ ${#FAILED[@]} -gt 0 ]; then
    printf 'FAILED: %s\n' "${FAILED[@]}" >&2
    echo "$SUMMARY check=FAILED"
    exit 1
fi
echo "$SUMMARY check=ok"
