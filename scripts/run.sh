#!/usr/bin/env bash
# run.sh - README command 1: install what is missing, build, and run gpupool
# all-in-one on the embedded SQLite store in ./var: the server, plus a node
# agent simulating the GPU nodes of examples/inventory.json (a real NVML
# node is `gpupool agent --join-token-file F` on a machine with NVIDIA GPUs).
#
#   scripts/run.sh [extra server flags]     e.g. --listen 127.0.0.1:8080
#
# Prints the URL and the path of the admin token file.  Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

bin=$PWD/build/gpupool
mkdir -p var
rm -f var/server.url
# the server's log (every request, a line each) goes to var/server.log, so that the banner
# below stays the last thing on the screen; `tail -f var/server.log` follows it
"$bin" server --data ./var "$@" 2>>var/server.log &
server=$!
trap 'kill $server ${agent:-} 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 100); do [ -s var/server.url ] && break; sleep 0.1; done
[ -s var/server.url ] || { echo "run.sh: the server did not start; var/server.log ends:" >&2
                           tail -n 20 var/server.log >&2; exit 1; }
export GPUPOOL_SERVER=$(cat var/server.url)

# A service account for the simulated fleet: an ops-engineer that only makes join tokens.
if [ ! -s var/agent/sim-0.token ]; then
  admin=(env GPUPOOL_TOKEN_FILE="$PWD/var/admin.token" "$bin")
  "${admin[@]}" user create demo-ops --service >/dev/null 2>&1 || true
  "${admin[@]}" member grant demo-ops ops-engineer >/dev/null
  ops_token=$("${admin[@]}" -o json token create --user demo-ops --ttl 3600 --label run.sh | jq -r .token)
  # one use per node of the inventory (a join token is single-use unless made with --uses)
  nodes=$(jq '.nodes | length' examples/inventory.json)
  join_token=$(GPUPOOL_TOKEN=$ops_token "$bin" -o json jointoken create --ttl 600 --uses "$nodes" | jq -r .token)
else
  join_token=""
fi
# the token through the environment: a command line is visible to every local user (ps)
GPUPOOL_JOIN_TOKEN=$join_token "$bin" agent --inventory examples/inventory.json \
  --state-dir ./var/agent --interval 5 2>>var/agent.log &
agent=$!

echo
echo "gpupool is running at $GPUPOOL_SERVER with a simulated fleet (examples/inventory.json)."
echo "Admin token file: $PWD/var/admin.token   (logs: var/server.log, var/agent.log)"
echo "Try:  export GPUPOOL_SERVER=$GPUPOOL_SERVER GPUPOOL_TOKEN_FILE=$PWD/var/admin.token"
echo "      build/gpupool whoami; build/gpupool tenant list"
echo "Ctrl-C stops it."
wait $server
