#!/usr/bin/env bash
# Builds keel and runs every test: the full suite in a normal build, the full
# suite again under ASan+UBSan, and the concurrency tests under TSan.
# KEEL_TEST_SANITIZERS=0 skips the sanitizer builds (quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

run_suite() {  # name, ctest filter args, cmake args...
  local dir=$1 filter=$2; shift 2
  echo "=== keel: $dir ($*)"
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" $filter
}

run_suite build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${KEEL_TEST_SANITIZERS:-1}" != 0 ]; then
  # The CUDA plugin is left out of sanitizer builds: the CUDA runtime is not
  # instrumented, and there is no GPU on CI for it to touch anyway.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # The large lerp shapes on level_zero:0 run the fake driver's host copies
  # of the kernels for minutes under ASan; the normal build runs them.
  run_suite build-asan "-E LargeShapes.*level_zero" -DCMAKE_BUILD_TYPE=Debug -DKEEL_SANITIZE=address \
            -DKEEL_ENABLE_CUDA=OFF -DKEEL_BUILD_BENCHMARKS=OFF
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
  run_suite build-tsan "-L concurrency" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_SANITIZE=thread \
            -DKEEL_ENABLE_CUDA=OFF -DKEEL_BUILD_BENCHMARKS=OFF
fi
echo "=== keel: all test runs passed"
