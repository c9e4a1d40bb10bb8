#!/usr/bin/env bash
# run.sh - README command 1: install what is missing, build, and run gpupool
# all-in-one on the embedded SQLite store in ./var.
#
#   scripts/run.sh [extra server flags]     e.g. --listen 127.0.0.1:8080
#
# Prints the URL and the path of the admin token file.  Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"

# No node agent exists yet (see the GPU inventory issue): the server runs alone.
echo "starting gpupool (data in ./var); use the token with:"
echo "  export GPUPOOL_TOKEN_FILE=$PWD/var/admin.token"
exec build/gpupool server --data ./var "$@"
