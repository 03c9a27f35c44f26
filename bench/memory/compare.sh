#!/usr/bin/env bash
# Runs keel-memory-bench (tables 2 and 6 by default) of this tree beside the
# same bench source built over a baseline commit, alternating the two, so
# that both are measured in one session on one machine.
#   bench/memory/compare.sh BASE_COMMIT [RUNS] [bench arguments...]
# e.g. bench/memory/compare.sh c23dcc2 3 --sections 26
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:?usage: $0 BASE_COMMIT [RUNS] [bench arguments...]}
runs=${2:-3}
shift $(($# < 2 ? $# : 2))
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--sections 26)
jobs=$(nproc)
configure=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_ENABLE_CUDA=OFF)
if command -v ccache >/dev/null; then
  configure+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

tree=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-base.XXXXXX")
trap 'rm -rf "$tree"' EXIT
git archive "$base" | tar -x -C "$tree"
cp bench/memory/*.cpp bench/memory/*.hpp bench/memory/CMakeLists.txt \
   "$tree/bench/memory/"
cmake -S "$tree" -B "$tree/build" "${configure[@]}" >/dev/null
cmake --build "$tree/build" -j "$jobs" --target keel-memory-bench
cmake -S . -B build "${configure[@]}" >/dev/null
cmake --build build -j "$jobs" --target keel-memory-bench

for ((run = 1; run <= runs; ++run)); do
  echo "=== run $run: baseline $base"
  "$tree/build/bench/memory/keel-memory-bench" "${args[@]}"
  echo "=== run $run: this tree ($(git rev-parse --short HEAD))"
  build/bench/memory/keel-memory-bench "${args[@]}"
done
