#!/usr/bin/env bash
# test.sh - README command 2: install what is missing, build, and run the
# whole test suite under ctest: a normal build on the SQLite store, the same
# build again on PostgreSQL (a throw-away cluster from Debian's packages in a
# temporary folder on a free port, scripts/pg-cluster.sh, removed after),
# then a build with AddressSanitizer + UndefinedBehaviorSanitizer (SQLite,
# and the store/HA tests on PostgreSQL); then each libFuzzer target for 10 s
# (scripts/fuzz.sh), the Release binary with gcc and with clang (-O3, warnings
# are errors there too), and a ThreadSanitizer build running the tests whose
# server is busiest on many threads at once.  Warnings are errors.
#
#   scripts/test.sh                 both builds
#   GP_TEST_SKIP_SAN=1 scripts/test.sh   normal build only (quick local runs)
#   GP_TEST_SKIP_FUZZ=1 scripts/test.sh  without the short libFuzzer runs (scripts/fuzz.sh)
#   GP_TEST_SKIP_VALGRIND=1 scripts/test.sh  without the valgrind subset (scripts/valgrind.sh)
#   GP_TEST_SKIP_PG=1 scripts/test.sh    without the PostgreSQL passes
#   GP_TEST_SKIP_TSAN=1 scripts/test.sh  without the ThreadSanitizer pass over the threaded tests
set -euo pipefail
cd "$(dirname "$0")/.."

PGDIR=""
stop_pg() {
  if [ -n "$PGDIR" ]; then
    scripts/pg-cluster.sh stop "$PGDIR" || true
    PGDIR=""
  fi
}
trap stop_pg EXIT

scripts/bootstrap.sh
scripts/npm-deps.sh   # node and the official openai client, for the gateway's tests
jobs=$(nproc)

echo "== build (RelWithDebInfo, -Werror) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGP_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
echo "== Release builds, -Werror, gcc and clang (the binary only) =="
for cc in gcc clang; do
  cmake -S . -B "build-release-$cc" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DGP_WERROR=ON >/dev/null
  cmake --build "build-release-$cc" -j"$jobs" --target gpupool
done
echo "== tests =="
ctest --test-dir build --output-on-failure -j"$jobs"
if [ "${GP_TEST_SKIP_PG:-0}" != "1" ]; then
  echo "== tests on PostgreSQL =="
  PGDIR=$(mktemp -d /tmp/gpupool-pg.XXXXXX)
  pgenv=$(scripts/pg-cluster.sh start "$PGDIR")
  export "${pgenv?}"   # GP_TEST_PG=postgresql://gpupool@127.0.0.1:PORT
  ctest --test-dir build --output-on-failure -j"$jobs"
  unset GP_TEST_PG
fi
if [ "${GP_TEST_SKIP_VALGRIND:-0}" != "1" ]; then
  echo "== valgrind (a subset: scripts/valgrind.sh) =="
  scripts/valgrind.sh
fi

if [ "${GP_TEST_SKIP_SAN:-0}" != "1" ]; then
  echo "== build (ASan + UBSan) =="
  cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DGP_SANITIZE=ON -DGP_WERROR=ON >/dev/null
  cmake --build build-san -j"$jobs"
  echo "== tests (ASan + UBSan) =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-san --output-on-failure -j"$jobs"
  if [ -n "$PGDIR" ]; then
    echo "== tests (ASan + UBSan) on PostgreSQL: the store, the API, several servers =="
    export "${pgenv?}"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-san --output-on-failure -j"$jobs" \
      -R 'unit_store|unit_api|unit_check|e2e_test_ha|e2e_test_api|e2e_test_crash'
    unset GP_TEST_PG
  fi
fi
if [ "${GP_TEST_SKIP_TSAN:-0}" != "1" ]; then
  # the server's threads (connections, scheduler, leader loops, gateway batches) under load
  echo "== build (ThreadSanitizer) =="
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGP_TSAN=ON -DGP_WERROR=ON >/dev/null
  cmake --build build-tsan -j"$jobs"
  echo "== tests (ThreadSanitizer): the threaded paths =="
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" \
    -R 'load_mixed|unit_throttle|unit_schedloop|unit_sched_round|unit_store|e2e_test_server|e2e_test_gateway$|e2e_test_jobs|security_test_http|e2e_test_sched_events'
fi
stop_pg
if [ "${GP_TEST_SKIP_FUZZ:-0}" != "1" ]; then
  # every libFuzzer target briefly (docs/fuzzing.md); FUZZ_SECONDS for longer
  FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh
fi
echo "== all tests passed =="
