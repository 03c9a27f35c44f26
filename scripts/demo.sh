#!/usr/bin/env bash
# The demo: builds only what it runs (the runtime, the CPU plugin, keel-info
# and keel-hello) into build/, the build directory every other command of the
# README uses, through ccache when it is installed; then runs keel-info and
# keel-hello on cpu:0 and says what to try next. The build's output goes to
# build/demo-build.log (progress on one line on a terminal). Extra arguments
# go to keel-hello (--device NAME, --count N).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
scripts/deps.sh

launchers=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD  # cache hits whatever the clone's path
  export CCACHE_NOHASHDIR=1   # ... with -g too (ccache otherwise hashes the build directory)
  launchers=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
             -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
mkdir -p build
log=build/demo-build.log
echo "keel: configuring and building keel-info, keel-hello and the CPU plugin into build/ (log: $log)"
# The configuration scripts/test.sh uses, in batches (a unity build): from an
# empty cache that halves the compile time, since the runtime's sources share
# their headers.
if ! cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
     "${launchers[@]}" >"$log" 2>&1; then
  tail -n 30 "$log"; echo "keel: configuring failed; the whole output is in $log"; exit 1
fi
cmake --build build -j "$(nproc)" --target keel-info keel-hello keel_plugin_cpu >>"$log" 2>&1 &
build=$!
while kill -0 "$build" 2>/dev/null; do
  if [ -t 1 ]; then
    printf '\r  %s ' "$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" | tail -n 1)"
  fi
  sleep 1
done
if ! wait "$build"; then
  [ -t 1 ] && echo
  tail -n 30 "$log"; echo "keel: the build failed; the whole output is in $log"; exit 1
fi
[ -t 1 ] && printf '\r'
warnings=$(grep -c 'warning:' "$log" || true)
echo "keel: built in $((SECONDS - started)) s, ${warnings} compiler warning(s)"
echo

echo "\$ build/tools/keel-info/keel-info"
build/tools/keel-info/keel-info
echo
echo "\$ build/samples/hello/keel-hello $*"
build/samples/hello/keel-hello "$@"
echo
cat <<EOF
keel: the demo ran keel-info (settings, plugins, devices) and keel-hello (axpy on a device,
verified on the host) in $((SECONDS - started)) s. Next:
  build/samples/hello/keel-hello --device cuda:0        another device (keel-info lists them)
  KEEL_CHECK=1 build/samples/hello/keel-hello           the CPU checker: asynchronous lifetime bugs fail
  cmake --build build -j && ctest --test-dir build      everything, then the tests (or scripts/test.sh)
  build/bin/keel-launch -n 2 -- build/bin/keel-pipeline --mode hold
                                                        two ranks (after the full build)
  PYTHONPATH=build/python /usr/bin/python3 -c 'import torch, keel_torch; print(torch.ones(2).to(keel_torch.device(0)))'
                                                        keel as a PyTorch device (after the full build)
EOF
