#!/usr/bin/env bash
# Runs ctest tests again and again while busy-loop processes keep every core
# busy, and counts the failures per test: timing assumptions that hold on an
# idle machine (a thread that runs "right after" another) fail here.
#
#   scripts/under-load.sh [-n RUNS] [-b BUSY] [-d BUILD_DIR] [-j JOBS] [REGEX]
#
#   -n RUNS   how many times to run the selection (default 10)
#   -b BUSY   busy-loop processes (default: one per core)
#   -d DIR    the build directory (default build)
#   -j JOBS   ctest's parallel jobs (default 2)
#   REGEX     ctest -R selection (default: every test but the long lerp shapes)
#
# Prints one line per run and a table of the tests that failed, with counts.
# Exit status 1 when any run failed. The busy loops run at the tests' own
# priority and end with the script (also on Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10 busy=$(nproc) dir=build jobs=2
while getopts "n:b:d:j:" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    b) busy=$OPTARG ;;
    d) dir=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
select=(-E 'LargeShapes')
[ $# -gt 0 ] && select=(-R "$1")

loops=()
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null || true; }
trap stop_loops EXIT
for _ in $(seq "$busy"); do
  sh -c 'while :; do :; done' &
  loops+=($!)
done

log=$(mktemp)
declare -A failures=()
failed_runs=0
for run in $(seq "$runs"); do
  started=$SECONDS
  if ctest --test-dir "$dir" -j "$jobs" "${select[@]}" --output-on-failure >"$log" 2>&1; then
    echo "run $run/$runs: passed ($((SECONDS - started)) s, $busy busy loops)"
  else
    failed_runs=$((failed_runs + 1))
    # ctest's summary: "  123 - Suite.Test/param (Failed)".
    names=$(sed -n '/The following tests FAILED:/,$p' "$log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p')
    echo "run $run/$runs: FAILED ($((SECONDS - started)) s): $(echo "$names" | tr '\n' ' ')"
    for n in $names; do failures[$n]=$(( ${failures[$n]:-0} + 1 )); done
    cp "$log" "$dir/under-load-run-$run.log"
  fi
done
rm -f "$log"

echo
echo "under load ($busy busy loops on $(nproc) cores, ctest -j $jobs): $((runs - failed_runs)) of $runs runs passed"
for n in "${!failures[@]}"; do echo "  ${failures[$n]}/$runs  $n"; done | sort -rn
[ "$failed_runs" -eq 0 ] || echo "logs of the failed runs: $dir/under-load-run-*.log"
[ "$failed_runs" -eq 0 ]
