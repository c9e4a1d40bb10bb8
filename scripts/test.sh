#!/usr/bin/env bash
# test.sh - README command 2: install what is missing, build, and run the
# whole test suite under ctest twice: a normal build, then one with
# AddressSanitizer + UndefinedBehaviorSanitizer; then each libFuzzer target
# for 10 s (scripts/fuzz.sh).  Warnings are errors.
#
#   scripts/test.sh                 both builds
#   GP_TEST_SKIP_SAN=1 scripts/test.sh   normal build only (quick local runs)
#   GP_TEST_SKIP_FUZZ=1 scripts/test.sh  without the short libFuzzer runs (scripts/fuzz.sh)
#   GP_TEST_SKIP_VALGRIND=1 scripts/test.sh  without the valgrind subset (scripts/valgrind.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
scripts/npm-deps.sh   # node and the official openai client, for the gateway's tests
jobs=$(nproc)

echo "== build (RelWithDebInfo, -Werror) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGP_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
echo "== tests =="
ctest --test-dir build --output-on-failure -j"$jobs"
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
fi
if [ "${GP_TEST_SKIP_FUZZ:-0}" != "1" ]; then
  # every libFuzzer target briefly (docs/fuzzing.md); FUZZ_SECONDS for longer
  FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh
fi
echo "== all tests passed =="
