#!/usr/bin/env bash
# valgrind.sh - the leak check under valgrind, on a subset where it is not too
# slow: unit tests of the pure modules and the store, and two end-to-end
# scripts whose server and CLI processes all run under valgrind (memcheck,
# definite leaks and memory errors fail).  Uses the normal build in build/.
#
#   scripts/valgrind.sh            after scripts/test.sh built build/
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (scripts/bootstrap.sh)" >&2; exit 1; }
VG=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for t in core router health gateway meter pack sched throttle store audit; do
  bin=build/tests/test_$t
  [ -x "$bin" ] || continue
  if "${VG[@]}" "$bin" >"$tmp/$t.log" 2>&1; then
    echo "valgrind: unit_$t ok"
  else
    echo "valgrind: unit_$t FAILED" >&2
    tail -n 40 "$tmp/$t.log" >&2
    fail=1
  fi
done
# every gpupool process an e2e script starts runs under valgrind; a report fails the process
cat >"$tmp/gpupool" <<WRAP
#!/bin/sh
exec ${VG[*]} --log-file=$tmp/vg.%p.log "$PWD/build/gpupool" "\$@"
WRAP
chmod +x "$tmp/gpupool"
for s in api server; do
  if GPUPOOL_BIN="$tmp/gpupool" bash "tests/e2e/test_$s.sh" >"$tmp/e2e_$s.log" 2>&1; then
    echo "valgrind: e2e_$s ok ($(tail -n 1 "$tmp/e2e_$s.log"))"
  else
    echo "valgrind: e2e_$s FAILED" >&2
    tail -n 30 "$tmp/e2e_$s.log" >&2
    fail=1
  fi
done
if cat "$tmp"/vg.*.log 2>/dev/null | grep -q .; then
  echo "valgrind: reports from gpupool processes:" >&2
  cat "$tmp"/vg.*.log >&2
  fail=1
fi
exit "$fail"
