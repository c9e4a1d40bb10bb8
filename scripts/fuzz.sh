#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer harnesses (tests/fuzz, docs/fuzzing.md) with
# clang + ASan + UBSan in build-fuzz/, and run each for FUZZ_SECONDS over a
# temporary copy of its seed corpus (the repo's corpus is never written).
# Fails on any crash, leak, timeout or sanitizer report; prints each
# target's executions (libFuzzer's stat::number_of_executed_units).
#
#   scripts/fuzz.sh                       every target, 10 s each
#   FUZZ_SECONDS=3600 scripts/fuzz.sh json   one target for an hour
#   FUZZ_JOBS=1 scripts/fuzz.sh           one target at a time (default: nproc at once)
#
# Crashing inputs are kept in build-fuzz/artifacts/<target>/ (FUZZ_ARTIFACTS
# to change); the run's log is printed when a target fails.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(json router inventory csv sse auth)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL[@]}")
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "fuzz: no target '$t' (${ALL[*]})" >&2; exit 2; }
done
secs=${FUZZ_SECONDS:-10}
jobs=${FUZZ_JOBS:-$(nproc)}
build=build-fuzz
artifacts=${FUZZ_ARTIFACTS:-$PWD/$build/artifacts}

# clang and libFuzzer's runtime, as scripts/bootstrap.sh installs packages
PKGS=(clang libclang-rt-14-dev)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "fuzz: missing ${missing[*]}, not root, no sudo" >&2; exit 1; }
    SUDO="sudo"
  fi
  echo "fuzz: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== build (clang, libFuzzer + ASan + UBSan) =="
# Debug keeps assert() on (the harnesses' invariants); -O1 for speed.
CC=clang cmake -S . -B "$build" -DGP_FUZZ=ON -DGP_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzzers

work=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One target: its log in $work/<t>.log, status in $work/<t>.rc.
run_one() {
  local t=$1 corpus="$work/corpus-$t" dict=()
  mkdir -p "$corpus" "$artifacts/$t"
  cp -R "tests/fuzz/corpus/$t/." "$corpus/"
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="tests/fuzz/dict/$t.dict")
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "${dict[@]}" -artifact_prefix="$artifacts/$t/" "$corpus" \
      >"$work/$t.log" 2>&1 || rc=$?
  # a report the sanitizers printed without stopping the run still fails it
  if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:" "$work/$t.log"; then
    [ "$rc" -ne 0 ] || rc=1
  fi
  echo "$rc" >"$work/$t.rc"
}

echo "== fuzz: ${targets[*]}, ${secs} s each, ${jobs} at a time =="
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=()
for t in "${targets[@]}"; do
  rc=$(cat "$work/$t.rc" 2>/dev/null || echo 99)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  printf 'fuzz_%-10s executions=%-10s %s\n' "$t" "${execs:-?}" "$([ "$rc" = 0 ] && echo ok || echo FAILED)"
  if [ "$rc" != 0 ]; then
    failed+=("$t")
    echo "---- fuzz_$t log (last 80 lines); inputs in $artifacts/$t/ ----"
    tail -80 "$work/$t.log"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "== fuzz: all targets clean =="
