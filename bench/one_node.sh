# one_node.sh - sourced by the bench scripts that need one real gpupool
# server (SQLite store, loopback) and one agent simulating one 8-GPU node
# (A100-80GB, whole cards), a class `gpu1` (one card), a tenant `bench` with
# project `p`, and its user `bu` logged in.  Before sourcing: BIN (the
# gpupool binary, absolute), INTERVAL (the agent's heartbeat interval, s).
# After: T (the temp folder, removed at exit), URL, ADMIN and TOK (tokens),
# JOBS (the project's jobs URL), PIDS (server, agent; stopped at exit),
# now_ms.  KEEP=1 keeps the folder.  Not part of CI (bench/README.md).
T=$(mktemp -d /tmp/gpupool-bench.XXXXXX)
chmod 711 "$T" # jobs of an agent run as root get uids of their own: they cross it
PIDS=()
cleanup() {
    # the agent ends its jobs when it stops (--stop-workloads-on-exit): wait for it
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" == 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
export NO_PROXY='*' no_proxy='*'
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
"$BIN" server --data "$T/data" --listen 127.0.0.1:0 >"$T/server.out" 2>"$T/server.err" </dev/null &
PIDS+=($!)
for _ in $(seq 150); do [ -s "$T/data/server.url" ] && break; sleep 0.1; done
URL=$(head -n 1 "$T/data/server.url")
ADMIN=$(head -n 1 "$T/data/admin.token")
gp() { "$BIN" --server "$URL" --token "$ADMIN" "$@" >/dev/null; }
for _ in $(seq 50); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.1; done
gp member grant admin ops-engineer
JT=$("$BIN" --server "$URL" --token "$ADMIN" -o json jointoken create --ttl 3600 | jq -r .token)
cat >"$T/node.json" <<'EOF'
{"nodes":[{"name":"n1","cpus":64,"memory_gib":512,
  "gpus":[{"model":"A100-80GB","memory_gib":80,"count":8,"mode":"whole"}]}]}
EOF
"$BIN" --server "$URL" agent --join-token "$JT" --inventory "$T/node.json" \
    --state-dir "$T/agent" --interval "$INTERVAL" --stop-workloads-on-exit >"$T/agent.out" 2>"$T/agent.err" </dev/null &
PIDS+=($!)
gp class create gpu1 --form whole --models A100-80GB --cpus 1 --memory 1
gp tenant create bench
gp project create p --tenant bench --class development
printf 'bench-Secret-9\n' >"$T/pw"
"$BIN" --server "$URL" --token "$ADMIN" user create bu <"$T/pw" >/dev/null
gp member grant bu project-user --tenant bench --project p
TOK=$("$BIN" --server "$URL" login bu <"$T/pw" | head -n 1)
for _ in $(seq 100); do
    [ "$("$BIN" --server "$URL" --token "$ADMIN" -o json node list | jq '[.items[] | select(.state == "ready")] | length')" == 1 ] && break
    sleep 0.1
done
JOBS="$URL/api/v1/tenants/bench/projects/p/jobs"
