#!/usr/bin/env bash
# Proves on this CPU machine that the dependency folder of scripts/gpu_deps.sh is complete, as
# the GPU machine (no network, none of these Debian packages) will need it: in a private mount
# namespace, /dev/null is bind-mounted over every file that the folder's packages installed on
# this system, then
#   1. citeforge's own CMake configuration runs against the folder alone (every find_package
#      and pkg-config module of CMakeLists.txt, LibTorch from the usual cache), and
#   2. a probe program that calls every library links against the folder and runs, with ldd
#      showing each of those libraries loaded from the folder.
# Ends with one line: complete, or what was missing.
#
#   scripts/check_gpu_deps.sh          (after scripts/gpu_deps.sh and scripts/setup.sh)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$repo/.gpu-deps"
[ -d "$deps/root/usr" ] || { echo "[gpu-deps-check] no $deps/root: run scripts/gpu_deps.sh" >&2; exit 1; }

if [ "${1:-}" != "--inside" ]; then
  command -v unshare >/dev/null || { echo "[gpu-deps-check] needs unshare (util-linux)" >&2; exit 1; }
  exec unshare -m "$0" --inside
fi

# Inside the namespace: hide the system's copies of every package the folder holds. The list is
# made first: dpkg itself loads some of these libraries (libzstd).
files=()
for deb in "$deps"/debs/*.deb; do
  pkg="$(dpkg-deb -f "$deb" Package)"
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
  while IFS= read -r path; do
    [ -f "$path" ] && [ ! -L "$path" ] && files+=("$path")
  done < <(dpkg -L "$pkg")
done
# From here on every program (mount, cmake, the compiler) loads these libraries from the folder.
# shellcheck source=scripts/deps.env
source "$repo/scripts/deps.env"
TORCH_PREFIX="$(ls -d "${CITEFORGE_CACHE:-$HOME/.cache/citeforge}"/torch-"$TORCH_VERSION"-py*/lib/python*/site-packages/torch/share/cmake | head -n 1)"
# shellcheck source=scripts/gpu_env.sh
source "$repo/scripts/gpu_env.sh" "$deps/root"
hidden=0
for path in "${files[@]}"; do
  mount --bind /dev/null "$path"
  hidden=$((hidden + 1))
done
echo "[gpu-deps-check] hid $hidden installed files of the folder's packages"

work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

echo "[gpu-deps-check] 1. configuring citeforge against the folder"
if ! cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${GPU_DEPS_CMAKE_ARGS[@]}" >"$work/configure.log" 2>&1; then
  tail -n 30 "$work/configure.log"
  echo "[gpu-deps-check] INCOMPLETE: citeforge does not configure against the folder alone"
  exit 1
fi
# Configure must have found each dependency inside the folder, not somewhere else.
if grep -E "^(pkgcfg_lib_|HDF5_|yaml-cpp_DIR|nlohmann_json_DIR|Catch2_DIR|CITEFORGE_GLOO)" \
    "$work/build/CMakeCache.txt" | grep -E "=/usr/(lib|include|share)"; then
  echo "[gpu-deps-check] INCOMPLETE: a dependency was found outside the folder (above)"
  exit 1
fi

echo "[gpu-deps-check] 2. building and running the probe against the folder"
# shellcheck disable=SC2046
if ! g++ -std=c++20 "$repo/scripts/gpu_deps_probe.cpp" -o "$work/probe" \
    $("$GPU_DEPS_PKG_CONFIG" --cflags --libs sentencepiece libpcre2-8 libutf8proc yaml-cpp zlib) \
    -lhdf5_serial >"$work/probe.log" 2>&1; then
  tail -n 30 "$work/probe.log"
  echo "[gpu-deps-check] INCOMPLETE: the probe does not build against the folder alone"
  exit 1
fi
outside="$(ldd "$work/probe" | grep -E "sentencepiece|pcre2|utf8proc|yaml|hdf5|curl|ssl|crypto|sz|aec" \
  | grep -v "$deps/root" || true)"
if [ -n "$outside" ] || ldd "$work/probe" | grep -q "not found"; then
  ldd "$work/probe"
  echo "[gpu-deps-check] INCOMPLETE: the probe loads a library from outside the folder or misses one"
  exit 1
fi
if ! "$work/probe" "$work/probe.h5" >"$work/run.log" 2>&1; then
  tail -n 20 "$work/run.log"
  echo "[gpu-deps-check] INCOMPLETE: the probe fails with the folder's libraries"
  exit 1
fi
tail -n 1 "$work/run.log"
echo "[gpu-deps-check] complete: $(du -sm "$deps/root" | cut -f1) MiB, configures and links with the system's copies hidden"
