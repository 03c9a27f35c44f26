#!/usr/bin/env bash
# The kit seen from outside: install keel into a temporary prefix, build a
# framework program with find_package(keel) and one with pkg-config, build
# the C plugin template out of tree (CMake, and plain cc with pkg-config),
# run keel-cts on it and on the CPU plugin, then move the prefix and show
# that the plugins are still found.
#   kit_test.sh <keel source dir> <keel build dir> <C++ compiler> <C compiler>
set -euo pipefail
src=$1 build=$2 cxx=$3 cc=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/keel
step() { echo "=== kit: $*"; }
quiet_cmake() { cmake "$@" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; return 1; }; }

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && ls -d lib* | head -1)
for f in include/keel/keel.h include/keel/keel.hpp include/keel/result.hpp include/keel/plugin/boundary.hpp \
         "$libdir/cmake/keel/keelConfig.cmake" "$libdir/cmake/keel/keelConfigVersion.cmake" \
         "$libdir/cmake/keel/KeelPlugin.cmake" "$libdir/cmake/keel/keel_plugin_exports.map" \
         "$libdir/pkgconfig/keel.pc" "$libdir/pkgconfig/keel-plugin-sdk.pc" "$libdir/libkeel_plugin_support.a" \
         "$libdir/keel/plugins/libkeel_cpu.so" bin/keel-info bin/keel-cts share/doc/keel/kernels.md; do
  [ -e "$prefix/$f" ] || { echo "missing $f"; exit 1; }
done
soname=$(objdump -p "$prefix/$libdir/libkeel_runtime.so" | awk '/SONAME/ {print $2}')
echo "SONAME $soname"
[ -e "$prefix/$libdir/$soname" ] && [[ $soname == libkeel_runtime.so.* ]]
# No path of the build tree in the runtime's data (debug info may name it).
if readelf -p .rodata "$prefix/$libdir/$soname" | grep -qF "$build"; then
  echo "the installed runtime names the build tree $build"; exit 1
fi

step "framework program with find_package(keel)"
quiet_cmake -S "$src/tests/kit/framework_app" -B "$work/app-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release
quiet_cmake --build "$work/app-cmake"
"$work/app-cmake/framework_app"

step "framework program with pkg-config"
if [ -e "$prefix/$libdir/python3/dist-packages/keel_torch/__init__.py" ]; then
  step "keel_torch from the moved install: a tensor on privateuseone:0"
  env -u KEEL_PLUGIN_PATH PYTHONPATH="$prefix/$libdir/python3/dist-packages" /usr/bin/python3 -c "
import torch, keel_torch
assert keel_torch.__file__.startswith('$prefix'), keel_torch.__file__
assert (torch.ones(3).to(keel_torch.device(0)) * 2).sum().item() == 6.0"
fi
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# shellcheck disable=SC2046
"$cxx" -std=c++20 -O1 "$src/tests/kit/framework_app/main.cpp" -o "$work/app-pc" \
  $(pkg-config --cflags --libs keel)
env -u LD_LIBRARY_PATH "$work/app-pc"  # as README's line builds it: starts with no library path

if ls "$build"/lib*/libkeel_comm.so >/dev/null 2>&1; then
  step "keel::comm installed: library, header, package component, pkg-config, keel-launch"
  for f in include/keel/comm.hpp "$libdir/libkeel_comm.so" "$libdir/cmake/keel/keelCommTargets.cmake" \
           "$libdir/pkgconfig/keel-comm.pc" bin/keel-launch; do
    [ -e "$prefix/$f" ] || { echo "missing $f"; exit 1; }
  done
  step "comm program with find_package(keel COMPONENTS comm), 2 ranks by the installed keel-launch"
  quiet_cmake -S "$src/tests/kit/comm_app" -B "$work/comm-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release
  quiet_cmake --build "$work/comm-cmake"
  out=$(env -u KEEL_PLUGIN_PATH "$prefix/bin/keel-launch" -n 2 -- "$work/comm-cmake/comm_app")
  echo "$out"
  [ "$(echo "$out" | grep -c 'all_reduce ok')" = 2 ]
  step "comm program with pkg-config keel-comm, 2 ranks"
  # shellcheck disable=SC2046
  "$cxx" -std=c++20 -O1 "$src/tests/kit/comm_app/main.cpp" -o "$work/comm-pc" \
    $(pkg-config --cflags --libs keel-comm) -Wl,-rpath,"$(pkg-config --variable=libdir keel-comm)"
  env -u KEEL_PLUGIN_PATH "$prefix/bin/keel-launch" -n 2 -- "$work/comm-pc" | grep -c 'all_reduce ok' | grep -qx 2
fi

step "C plugin template with find_package(keel) + keel_add_plugin"
quiet_cmake -S "$src/templates/c_plugin" -B "$work/template" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc"
quiet_cmake --build "$work/template"
"$prefix/bin/keel-cts" "$work/template/libkeel_example.so" | tee "$work/cts-template.txt" | tail -3

step "C plugin template with plain cc and pkg-config"
mkdir -p "$work/template-pc"
# shellcheck disable=SC2046
"$cc" -std=c99 -O2 -Wall -Wextra -pedantic -fPIC -shared -fvisibility=hidden \
  "$src/templates/c_plugin/plugin.c" -o "$work/template-pc/libkeel_example.so" \
  $(pkg-config --cflags --libs keel-plugin-sdk) -pthread
"$prefix/bin/keel-cts" "$work/template-pc/libkeel_example.so" | tail -1

step "keel-cts on every installed plugin (the CPU plugin)"
"$prefix/bin/keel-cts" | tee "$work/cts-installed.txt" | tail -1
grep -q "^plugin $prefix/$libdir/keel/plugins/libkeel_cpu.so" "$work/cts-installed.txt"

step "move the prefix: plugins are still found beside the runtime"
mv "$prefix" "$work/moved"
prefix=$work/moved
info=$(env -u KEEL_PLUGIN_PATH "$prefix/bin/keel-info")
echo "$info" | grep -E "^  cpu:0 "
echo "$info" | grep -q "$prefix/$libdir/keel/plugins"
env -u KEEL_PLUGIN_PATH "$prefix/bin/keel-cts" | tail -1
if [ -e "$prefix/$libdir/python3/dist-packages/keel_torch/__init__.py" ]; then
  step "keel_torch from the moved install: a tensor on privateuseone:0"
  env -u KEEL_PLUGIN_PATH PYTHONPATH="$prefix/$libdir/python3/dist-packages" /usr/bin/python3 -c "
import torch, keel_torch
assert keel_torch.__file__.startswith('$prefix'), keel_torch.__file__
assert (torch.ones(3).to(keel_torch.device(0)) * 2).sum().item() == 6.0"
fi
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[ "$(pkg-config --variable=plugindir keel)" -ef "$prefix/$libdir/keel/plugins" ]
if [ -e "$prefix/$libdir/libkeel_comm.so" ]; then
  step "comm from the moved prefix: find_package(keel COMPONENTS comm) and pkg-config, 2 ranks by its keel-launch"
  quiet_cmake -S "$src/tests/kit/comm_app" -B "$work/comm-moved" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release
  quiet_cmake --build "$work/comm-moved"
  env -u KEEL_PLUGIN_PATH "$prefix/bin/keel-launch" -n 2 -- "$work/comm-moved/comm_app" | grep -c 'all_reduce ok' | grep -qx 2
  [ "$(pkg-config --variable=libdir keel-comm)" -ef "$prefix/$libdir" ]
fi
step "a component keel does not have is a CMake error naming it"
mkdir -p "$work/no-such"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(x C)\nfind_package(keel REQUIRED COMPONENTS comm nosuch)\n' \
  >"$work/no-such/CMakeLists.txt"
if cmake -S "$work/no-such" -B "$work/no-such/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/no-such.log" 2>&1; then
  cat "$work/no-such.log"; echo "find_package accepted a component keel does not have"; exit 1
fi
grep -q 'nosuch' "$work/no-such.log" || { cat "$work/no-such.log"; exit 1; }
echo "=== kit: all steps passed"
