#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on a GPU machine, on this (Debian 12)
# machine, into one git-ignored folder, .gpu-bundle/:
#   build/     the Release build tree for sm_90 with CUDA on (tests, samples,
#              benchmarks), without object files, binaries stripped;
#   lib/       every shared library the binaries need that a machine without
#              Debian's -dev packages may lack (spdlog, fmt, benchmark ...;
#              not glibc, not the NVIDIA driver);
#   lib-fallback/  the C++ runtime (libstdc++, libgcc_s), used by gpu-check
#              only where the machine's own is missing or older;
#   root       the absolute path the build tree was configured at (see below);
#   manifest   what was bundled, from which commit, and what it needs.
#
# The build tree holds absolute paths (ctest files, test plugin paths). It is
# configured at a fixed path, $KEEL_GPU_ROOT (default /tmp/keel-gpu-bundle),
# whose src/ and build/ are symbolic links; gpu-check.sh points them at the
# repository and the bundle wherever those are, so nothing is rewritten.
#
#   KEEL_GPU_ARCH   CUDA architectures (default 90-real: H100 and H200)
#   KEEL_GPU_ROOT   the fixed path above
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bundle=$repo/.gpu-bundle
work=$repo/.gpu-bundle-build   # the full build tree (object files): not carried
root=${KEEL_GPU_ROOT:-/tmp/keel-gpu-bundle}
arch=${KEEL_GPU_ARCH:-90-real}
limit_mib=64

scripts/deps.sh
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
command -v nvcc >/dev/null || { echo "gpu-bundle: nvcc not found (the CUDA Toolkit is needed)" >&2; exit 1; }

mkdir -p "$root" "$work"
ln -sfn "$repo" "$root/src"
ln -sfn "$work" "$root/build"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# keel_torch is left out: it links Debian's libtorch (far past the bundle's
# size), which the GPU machine's own PyTorch would not match.
echo "=== gpu-bundle: Release build for CUDA architectures $arch at $root/build"
cmake -S "$root/src" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEL_ENABLE_CUDA=ON \
      -DKEEL_CUDA_ARCHITECTURES="$arch" -DKEEL_BUILD_TESTS=ON -DKEEL_BUILD_SAMPLES=ON \
      -DKEEL_BUILD_BENCHMARKS=ON -DKEEL_SANITIZE= -DKEEL_ENABLE_TORCH=OFF "${launcher[@]}" >/dev/null
grep -q "KEEL_ENABLE_CUDA:BOOL=ON" "$work/CMakeCache.txt" || { echo "gpu-bundle: CUDA is off in the build" >&2; exit 1; }
cmake --build "$root/build" -j "$(nproc)"

echo "=== gpu-bundle: gathering $bundle"
rm -rf "$bundle"
mkdir -p "$bundle/build" "$bundle/lib" "$bundle/lib-fallback"
# What running needs: executables, shared libraries (links resolved into
# files: a copied folder may not keep links), ctest files and test data.
tar -C "$work" -h --exclude=CMakeFiles --exclude='*.o' --exclude='*.a' --exclude='.ninja_*' \
    --exclude=build.ninja --exclude=CMakeCache.txt --exclude=cmake_install.cmake --exclude=Testing \
    --exclude=compile_commands.json -cf - . | tar -C "$bundle/build" -xf -

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = "177ELF" ]; }
mapfile -t elves < <(find "$bundle/build" -type f | while read -r f; do is_elf "$f" && echo "$f"; done)
for f in "${elves[@]}"; do strip --strip-unneeded "$f" 2>/dev/null || true; done

# Shared libraries outside the build tree, except glibc's and the driver's.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libcuda|libnvidia)[.-]'
keel_dirs=$(printf '%s\n' "${elves[@]}" | grep '\.so' | xargs -r -n1 dirname | sort -u | paste -sd:)
declare -A needed=()
for f in "${elves[@]}"; do
  while read -r name _ path _; do
    [ -n "${path:-}" ] && [ -f "$path" ] || continue
    [[ $name =~ $system ]] && continue
    case "$path" in "$bundle"/*|"$work"/*) continue ;; esac
    needed[$name]=$path
  done < <(LD_LIBRARY_PATH="$keel_dirs" ldd "$f" 2>/dev/null | grep '=> /')
done
# Libraries the plugins open at run time, which ldd does not list: the Level
# Zero loader (the Level Zero tests run on the fake driver in the build tree).
for name in libze_loader.so.1; do
  path=$(ldconfig -p | awk -v n="$name" '!p && $1 == n && /x86-64/ {p = $NF} END {print p}')
  [ -n "$path" ] && needed[$name]=$path
done
for name in "${!needed[@]}"; do
  dir=lib
  case "$name" in libstdc++*|libgcc_s*) dir=lib-fallback ;; esac
  cp -L "${needed[$name]}" "$bundle/$dir/$name"
  strip --strip-unneeded "$bundle/$dir/$name" 2>/dev/null || true
done

versions=$(for f in "${elves[@]}" "$bundle"/lib/*; do objdump -T "$f" 2>/dev/null; done)
glibc=$(grep -o 'GLIBC_[0-9.]*' <<<"$versions" | sort -uV | tail -1)
glibcxx=$(grep -o 'GLIBCXX_[0-9.]*' <<<"$versions" | sort -uV | tail -1)
echo "$root" > "$bundle/root"
{
  echo "keel GPU bundle"
  echo "commit:        $(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "built on:      $(. /etc/os-release && echo "$PRETTY_NAME"), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "CUDA:          $(nvcc --version | grep -o 'release [0-9.]*'), architectures $arch"
  echo "root:          $root"
  echo "needs:         ${glibc:-GLIBC_?} or newer, the NVIDIA driver (libcuda.so.1)"
  echo "libstdc++:     ${glibcxx:-GLIBCXX_?}"
  # Tools the ctest files name by absolute path (gpu-check links them).
  sed -n 's/^\(CMAKE_COMMAND\|_\{0,1\}Python3_EXECUTABLE\):[A-Z]*=//p' "$work/CMakeCache.txt" | sed 's/^/tool:          /'
  echo "bundled libs:  $(cd "$bundle/lib" && ls | paste -sd' ') (fallback: $(cd "$bundle/lib-fallback" && ls | paste -sd' '))"
} > "$bundle/manifest"

size_mib=$(( $(du -sb "$bundle" | cut -f1) / 1048576 ))
cat "$bundle/manifest"
echo "size:          ${size_mib} MiB (limit ${limit_mib} MiB)"
if [ "$size_mib" -ge "$limit_mib" ]; then
  echo "gpu-bundle: the bundle is ${size_mib} MiB, over the ${limit_mib} MiB a GPU machine takes" >&2
  exit 1
fi
echo "=== gpu-bundle: ready. On the GPU machine, from the repository root: bash scripts/gpu-check.sh"
