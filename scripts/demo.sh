#!/usr/bin/env bash
# Builds keel and runs the demo on the default device: keel-info, then keel-hello.
# Usage: scripts/demo.sh [--device NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target keel-info keel-hello all
./build/samples/keel-info/keel-info
./build/samples/hello/keel-hello "$@"
