#!/usr/bin/env bash
# load_mixed.sh BENCH - ctest's load_mixed: `gpupool-bench load` for 3 s with 12
# clients, failing on any error that is not the client's (bench/README.md).  With
# GP_TEST_PG set (scripts/pg-cluster.sh) it runs on a new PostgreSQL database.
set -euo pipefail
bench=$1
if [ -n "${GP_TEST_PG:-}" ]; then
  psql=$(command -v psql || ls -d /usr/lib/postgresql/*/bin/psql | sort -V | tail -n 1)
  name="load_$$_$RANDOM"
  "$psql" -X -q -d "$GP_TEST_PG/postgres" -c "CREATE DATABASE \"$name\"" >/dev/null
  exec "$bench" load --seconds 3 --clients 12 --store "$GP_TEST_PG/$name"
fi
exec "$bench" load --seconds 3 --clients 12
