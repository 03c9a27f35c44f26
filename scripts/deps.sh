#!/usr/bin/env bash
# Installs the Debian 12 packages keel builds against. Idempotent; skips apt
# when everything is already there.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config ccache
          libspdlog-dev libboost-dev libboost-filesystem-dev
          libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
          libdlpack-dev libze-dev libze1 clang-14 llvm-spirv-14
          libgloo-dev redis-server iproute2           # comm/ (iproute2: the two-namespace test)
          libtorch-dev python3-torch python3-pytest    # integrations/torch
          pybind11-dev python3-dev                     # its torch.distributed backend
          python3-matplotlib)                          # tools/keel-trace draw
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "keel: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
