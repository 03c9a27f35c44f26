#!/usr/bin/env bash
# Builds keel (without tests) and runs the demo on the default device:
# keel-info, then keel-hello. Extra arguments go to keel-hello (--device NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-demo -j "$(nproc)"
./build-demo/samples/keel-info/keel-info
echo
./build-demo/samples/hello/keel-hello "$@"
