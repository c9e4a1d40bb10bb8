#!/usr/bin/env bash
# api_pipeline.sh - the request pipeline is written once (issue 34, docs/request-path.md):
# no handler file (src/api/h_*.c) opens, commits or rolls back a transaction, ties it to a
# tenant or authorises a route by hand (dispatch, src/api/api.c, does it for every declared
# row), and the route table (src/api/routes.c) has no row in the legacy shape but the
# gateway's /v1 ones, whose pipeline is the gateway's own.  A failure names the lines.
set -euo pipefail
cd "$(dirname "$0")/.."
# files that may still do so, each with its reason (empty when the work is done)
allowed='' # (none left: the gateway's pipeline is src/gateway/request.c)
fail=0
for f in src/api/h_*.c; do
  case " $allowed " in *" $f "*) continue ;; esac
  if grep -nE '\b(api_begin|api_authorize|store_begin|store_commit|store_rollback|store_set_tenant)\(' "$f"; then
    echo "api_pipeline: $f does a step of dispatch's pipeline itself (above)" >&2
    fail=1
  fi
done
# a legacy row starts with a brace; every one must be a /v1 (gateway) route
if grep -nE '^[[:space:]]*\{"[A-Z]+",' src/api/routes.c | grep -v '"/v1/'; then
  echo "api_pipeline: a route row in the legacy shape (above): declare it (DECLARED...)" >&2
  fail=1
fi
legacy=$(grep -cE '^[[:space:]]*\{"[A-Z]+", "/v1/' src/api/routes.c || true)
declared=$(grep -cE '^[[:space:]]*DECLARED' src/api/routes.c || true)
echo "api_pipeline: $declared declared rows, $legacy gateway rows in the legacy shape"
[ "$declared" -ge 150 ] || { echo "api_pipeline: only $declared declared rows?" >&2; fail=1; }
exit $fail
