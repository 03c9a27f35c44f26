#!/usr/bin/env bash
# keel-memory-bench table 6 (one operation of the hot path with threads) on
# cpu:0 with 1, 2, 4, 8 and 16 threads, the CPU device given every core:
# what a 16-core host confirms of the goals a 2-core machine can only
# approach. Read the x1, par and speed-up columns and the goals line under
# the table (the heading of table 6 says what each means).
#
#   bash bench/memory/many_cores.sh [BUILD_DIR] [THREADS] [bench arguments...]
#
# BUILD_DIR: a build tree (default: the Release tree of scripts/gpu-bundle.sh
# in .gpu-bundle/, run with its libraries as scripts/gpu-check.sh does).
# THREADS: the thread counts (default 1,2,4,8,16). The output also goes to
# .gpu-check/memory-bench-threads.log. Under a minute on 16 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
build=${1:-}
threads=${2:-1,2,4,8,16}
shift $(($# < 2 ? $# : 2))
if [ -z "$build" ]; then
  bundle=$repo/.gpu-bundle
  [ -f "$bundle/root" ] || { echo "many_cores: no $bundle: give a build directory or run scripts/gpu-bundle.sh" >&2; exit 2; }
  # The bundle's tree holds absolute paths under its root: point them here.
  root=$(cat "$bundle/root")
  mkdir -p "$root" && ln -sfn "$repo" "$root/src" && ln -sfn "$bundle/build" "$root/build"
  build=$root/build
  # The bench was built against the bundle's libraries (its C++ runtime too).
  export LD_LIBRARY_PATH="$bundle/lib:$bundle/lib-fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export KEEL_PLUGIN_PATH="$build/lib/keel/plugins"
export KEEL_CPU_THREADS=$(nproc)
mkdir -p .gpu-check
echo "many_cores: $(nproc) cores, $(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core," \
     "$(lscpu | sed -n 's/^Model name: *//p')"
"$build/bench/memory/keel-memory-bench" --device cpu:0 --sections 6 --threads "$threads" "$@" |
  tee .gpu-check/memory-bench-threads.log
