#!/usr/bin/env bash
#
# gateway_scaleout.sh - issue 39, item 4: `gpupool gateway` processes on one PostgreSQL
# store, two at once against one alone, and how long a revoked key goes on being served.
# A bench, not a CI test (bench/README.md).
#
#   bash bench/gateway_scaleout.sh [SECONDS]             # default 5 s per run
#   CONNS=8 ROUNDS=3 REVOKES=5 bash bench/gateway_scaleout.sh 5
#   PG=postgresql://gpupool@127.0.0.1:PORT bash bench/gateway_scaleout.sh   # an existing
#       cluster (a new database is made on it); by default a throw-away one (scripts/pg-cluster.sh)
#   BASE_BIN=/path/to/older/gpupool bash bench/gateway_scaleout.sh   # the same runs with
#       another binary's gateways too, on the same store, in the same run (before/after)
#   # last line: one_rps=N two_rps=N two_vs_one=X revoke_p50_ms=N revoke_max_ms=N check=ok
#
# One upstream (bench/portkey/upstream.js: answers a chat completion with usage at once),
# one `gpupool server` on a fresh PostgreSQL database (tenant, project, model "bench" on the
# upstream, a key with a monthly quota of 10^11 tokens, so requests take the lease path and
# every gateway writes usage batches, rate rows and lease growths), and two `gpupool
# gateway` processes (G1, G2) on the same store.  The load is `gpupool-bench drive`
# (libcurl, keep-alive, a non-streaming chat each time): CONNS clients on G1 alone, then
# CONNS/2 on each of G1 and G2 at once (the same offered concurrency), ROUNDS times
# interleaved, each figure the median.  Any answer that is not a 200 fails the run.
# Then REVOKES times: a fresh key served by both gateways (cached), revoked through the
# server's API, and the time until both refuse it (`gpupool-bench revoke`, asking every
# millisecond).  Finally every request must have been metered: the usage report counts
# them all (the upstream's 12 + 9 tokens each).  Every process, the cluster it started and
# its temporary folder go on exit.
# shellcheck disable=SC2154  # new_one, new_two, base_one, base_two: set by measure (printf -v)
set -euo pipefail
SECONDS_EACH=${1:-5}
CONNS=${CONNS:-8}
ROUNDS=${ROUNDS:-1}
REVOKES=${REVOKES:-5}
[[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ && "$CONNS" =~ ^[1-9][0-9]*$ && "$ROUNDS" =~ ^[1-9][0-9]*$ &&
    "$REVOKES" =~ ^[1-9][0-9]*$ ]] ||
    { echo "usage: $0 [SECONDS]  (CONNS, ROUNDS, REVOKES: whole numbers >= 1)" >&2; exit 2; }
[ "$CONNS" -ge 2 ] || CONNS=2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${GPUPOOL_BIN:-$ROOT/build/gpupool}
BENCH=${GPUPOOL_BENCH:-$ROOT/build/gpupool-bench}
for b in "$BIN" "$BENCH" ${BASE_BIN:+"$BASE_BIN"}; do
    [ -x "$b" ] || { echo "$0: $b is not built (cmake --build build)" >&2; exit 2; }
done
for c in node curl jq awk psql; do
    command -v "$c" >/dev/null || { echo "$0: needs '$c' on PATH" >&2; exit 2; }
done
export NO_PROXY='*' no_proxy='*'
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy GPUPOOL_SERVER GPUPOOL_TOKEN GPUPOOL_TOKEN_FILE

T=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-scaleout.XXXXXX")
PIDS=()
PG_STARTED=""
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -z "$PG_STARTED" ] || "$ROOT/scripts/pg-cluster.sh" stop "$T/pg" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() {
    echo "gateway_scaleout: $*" >&2
    exit 1
}
# wait_file FILE WHAT ERRFILE: until FILE exists and is not empty (30 s at most)
wait_file() {
    local i
    for ((i = 0; i < 300; i++)); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    die "$2 did not start: $(tail -c 2000 "$3" 2>/dev/null)"
}

# ---------------------------------------------------------------- the store
if [ -z "${PG:-}" ]; then
    PG=$("$ROOT/scripts/pg-cluster.sh" start "$T/pg" | sed -n 's/^GP_TEST_PG=//p')
    PG_STARTED=1
    [ -n "$PG" ] || die "the throw-away PostgreSQL cluster did not start"
fi
DB=scaleout_$(date +%s)_$$
psql -X -q -v ON_ERROR_STOP=1 -d "$PG/postgres" -c "CREATE DATABASE \"$DB\"" >/dev/null ||
    die "cannot make database $DB on $PG"
STORE=$PG/$DB

# ---------------------------------------------------------------- upstream, server, gateways
node "$ROOT/bench/portkey/upstream.js" --port 0 >"$T/up.out" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do grep -q '^listening ' "$T/up.out" && break; sleep 0.1; done
UP_PORT=$(awk '/^listening /{print $2; exit}' "$T/up.out")
[ -n "$UP_PORT" ] || die "the upstream did not start: $(cat "$T/up.out")"
UP=http://127.0.0.1:$UP_PORT

"$BIN" server --data "$T/data" --store "$STORE" --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 \
    --health-interval 3600 --log-level warn >"$T/srv.out" 2>"$T/srv.err" </dev/null &
PIDS+=($!)
wait_file "$T/data/server.url" "gpupool server" "$T/srv.err"
API=$(head -n 1 "$T/data/server.url")
for ((i = 0; i < 300; i++)); do [ -s "$T/data/admin.token" ] && curl -sf "$API/healthz" >/dev/null && break; sleep 0.1; done
ADMIN=$(head -n 1 "$T/data/admin.token")
gp() { "$BIN" --server "$API" --token "$ADMIN" "$@"; }
gp tenant create bench >/dev/null
gp member grant admin tenant-admin --tenant bench >/dev/null
gp project create p --tenant bench >/dev/null
gp model create bench --tenant bench >/dev/null
gp endpoint add --tenant bench --model bench --url "$UP/v1" --accelerator H100-80GB >/dev/null
KEY=$(gp -o json key create bench-key --tenant bench --project p --tokens-month 100000000000 | jq -r .key)
[[ "$KEY" == sk-* ]] || die "no API key made"

# start_gateways BIN: G1 and G2 of that binary on the store -> G[1], G[2], GPID[1], GPID[2]
declare -a G GPID
start_gateways() {
    local n
    for n in 1 2; do
        rm -rf "$T/g$n"
        "$1" gateway --data "$T/g$n" --store "$STORE" --listen 127.0.0.1:0 --endpoint-allow 127.0.0.0/8 \
            --health-interval 3600 --log-level warn >"$T/g$n.out" 2>"$T/g$n.err" </dev/null &
        GPID[n]=$!
        PIDS+=("${GPID[$n]}")
    done
    for n in 1 2; do
        wait_file "$T/g$n/gateway.url" "gateway G$n" "$T/g$n.err"
        G[n]=$(head -n 1 "$T/g$n/gateway.url")
        for ((i = 0; i < 100; i++)); do curl -sf "${G[$n]}/healthz" >/dev/null && break; sleep 0.1; done
    done
}
stop_gateways() {
    local n
    for n in 1 2; do kill -TERM "${GPID[$n]}" 2>/dev/null || true; done
    for n in 1 2; do wait "${GPID[$n]}" 2>/dev/null || true; done
}

# measure TAG: ROUNDS of (G1 alone, CONNS clients; G1 + G2, CONNS/2 each) -> TAG_one, TAG_two (medians)
measure() {
    local tag=$1 r one=() two=() out
    "$BENCH" drive --target "${G[1]}" "$KEY" --target "${G[2]}" "$KEY" --seconds 1 \
        --concurrency 2 >/dev/null || die "warm-up failed"
    for ((r = 1; r <= ROUNDS; r++)); do
        out=$("$BENCH" drive --target "${G[1]}" "$KEY" --seconds "$SECONDS_EACH" --concurrency "$CONNS") ||
            die "$tag, one gateway: $out"
        echo "$out" | sed "s/^/# $tag round $r, one: /" >&2
        one+=("$(echo "$out" | sed -n 's/^total_rps=\([0-9]*\).*/\1/p')")
        out=$("$BENCH" drive --target "${G[1]}" "$KEY" --target "${G[2]}" "$KEY" --seconds "$SECONDS_EACH" \
            --concurrency $((CONNS / 2))) || die "$tag, two gateways: $out"
        echo "$out" | sed "s/^/# $tag round $r, two: /" >&2
        two+=("$(echo "$out" | sed -n 's/^total_rps=\([0-9]*\).*/\1/p')")
    done
    printf -v "${tag}_one" '%s' "$(printf '%s\n' "${one[@]}" | sort -n | awk -v m=$(((ROUNDS + 1) / 2)) 'NR == m')"
    printf -v "${tag}_two" '%s' "$(printf '%s\n' "${two[@]}" | sort -n | awk -v m=$(((ROUNDS + 1) / 2)) 'NR == m')"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# writes TAG: the gateways' store write transactions (/metrics), summed
write_tx() {
    local n s=0 v
    for n in 1 2; do
        v=$(curl -sf "${G[$n]}/metrics" | awk '$1 == "gpupool_store_write_tx_total" {print $2}')
        s=$((s + ${v:-0}))
    done
    echo "$s"
}

echo "# ${SECONDS_EACH}s per run, $CONNS clients in all, $ROUNDS round(s); store $STORE; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start_gateways "$BIN"
W0=$(write_tx)
measure new
W1=$(write_tx)
# ---------------------------------------------------------------- revocation
REV=()
for ((r = 1; r <= REVOKES; r++)); do
    out=$(gp -o json key create "rev-$r" --tenant bench --project p --tokens-month 1000000000)
    k=$(jq -r .key <<<"$out")
    id=$(jq -r .id <<<"$out")
    out=$("$BENCH" revoke --api "$API" --token "$ADMIN" --key "$k" --target "${G[1]}" --target "${G[2]}" \
        --key-path "/api/v1/tenants/bench/projects/p/keys/$id") || die "revocation $r: $out"
    echo "$out" | sed "s/^/# revocation $r: /" >&2
    REV+=("$(echo "$out" | sed -n 's/^revoke_all_ms=//p')")
done
stop_gateways
if [ -n "${BASE_BIN:-}" ]; then
    start_gateways "$BASE_BIN"
    measure base
    stop_gateways
fi

# ---------------------------------------------------------------- metering: nothing lost
UP_CHATS=$(curl -sf "$UP/_stats" | jq -r .chat)
METERED=0
for ((i = 0; i < 150; i++)); do
    METERED=$(gp -o json usage report --tenant bench --project p | jq -r '.totals.requests')
    [ "$METERED" -ge "$UP_CHATS" ] && break
    sleep 0.2
done
CHECK=ok
[ "$METERED" == "$UP_CHATS" ] || CHECK=FAILED
TOKENS=$(gp -o json usage report --tenant bench --project p | jq -c '.totals | [.prompt_tokens, .completion_tokens]')
[ "$TOKENS" == "[$((12 * UP_CHATS)),$((9 * UP_CHATS))]" ] || CHECK=FAILED

REV_SORTED=$(printf '%s\n' "${REV[@]}" | sort -g)
REV_P50=$(echo "$REV_SORTED" | awk -v m=$(((REVOKES + 1) / 2)) 'NR == m')
REV_MAX=$(echo "$REV_SORTED" | tail -n 1)
{
    echo
    printf '%-28s %10s\n' "gateways (this binary)" "req/s"
    printf '%-28s %10s\n' "one, $CONNS clients" "$new_one"
    printf '%-28s %10s\n' "two, $((CONNS / 2)) clients each" "$new_two"
    echo "two / one: $(ratio "$new_two" "$new_one")"
    echo "store write transactions of both gateways during the runs: $((W1 - W0))"
    if [ -n "${BASE_BIN:-}" ]; then
        echo "base binary ($BASE_BIN): one $base_one req/s, two $base_two req/s, two / one $(ratio "$base_two" "$base_one")"
    fi
    echo "revoked key refused by both gateways after (ms, $REVOKES tries): $(echo "$REV_SORTED" | tr '\n' ' ')"
    echo "metering: the upstream answered $UP_CHATS chats, the usage report counts $METERED, tokens $TOKENS: $CHECK"
    echo "machine: $(nproc) CPUs shared, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
}
SUMMARY="one_rps=$new_one two_rps=$new_two two_vs_one=$(ratio "$new_two" "$new_one")"
[ -z "${BASE_BIN:-}" ] || SUMMARY+=" base_one_rps=$base_one base_two_rps=$base_two base_two_vs_one=$(ratio "$base_two" "$base_one")"
SUMMARY+=" revoke_p50_ms=$REV_P50 revoke_max_ms=$REV_MAX check=$CHECK"
echo "$SUMMARY"
[ "$CHECK" == ok ]
