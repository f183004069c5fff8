#!/usr/bin/env bash
# Installs everything citeforge needs on a fresh Debian machine and builds it into build/.
#
#   scripts/setup.sh            install missing dependencies, configure, build
#   CITEFORGE_CUDA=ON scripts/setup.sh   also build the CUDA kernels (needs nvcc)
#
# Expensive things live in a cache outside the clone, keyed by version, so a second run is a
# no-op apart from an incremental build: $CITEFORGE_CACHE (default ~/.cache/citeforge) holds
# the LibTorch virtual environment, pip's wheel cache and ccache's objects.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=deps.env
source "$repo/scripts/deps.env"
cache="${CITEFORGE_CACHE:-$HOME/.cache/citeforge}"
build_dir="${CITEFORGE_BUILD_DIR:-$repo/build}"
mkdir -p "$cache"

say() { printf '[setup] %s\n' "$*" >&2; }
die() {
  printf '[setup] error: %s\n' "$*" >&2
  exit 1
}

install_debian_packages() {
  local missing=()
  for pkg in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "Debian packages: all present"
    return
  fi
  say "Debian packages to install: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to apt-get install: ${missing[*]}"
    sudo="sudo"
  fi
  $sudo apt-get update -q || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    die "apt-get install failed for: ${missing[*]}"
}

# LibTorch from the PyPI wheel. Only the wheel itself is installed (--no-deps): the C++ CPU build
# links libtorch_cpu and libc10, which need none of the CUDA wheels the package depends on.
install_libtorch() {
  local pyver venv
  command -v python3 >/dev/null || die "python3 is required to install LibTorch from PyPI"
  pyver="$(python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')"
  venv="$cache/torch-$TORCH_VERSION-py$pyver"
  if [ -f "$venv/.complete" ]; then
    say "LibTorch $TORCH_VERSION: cached in $venv"
  else
    say "LibTorch $TORCH_VERSION: installing torch==$TORCH_VERSION from PyPI into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || die "python3 -m venv failed (install python3-venv)"
    PIP_CACHE_DIR="$cache/pip" "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
      "torch==$TORCH_VERSION" || die "pip install torch==$TORCH_VERSION failed"
    touch "$venv/.complete"
  fi
  # The same directory torch.utils.cmake_prefix_path names; computed without importing torch,
  # because the CUDA wheel's Python module wants the CUDA runtime wheels we skip.
  torch_prefix="$(ls -d "$venv"/lib/python*/site-packages/torch/share/cmake)" ||
    die "no torch/share/cmake in $venv"
}

configure_and_build() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  export CCACHE_DIR="$cache/ccache"
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    say "configuring $build_dir"
    cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix" -DCITEFORGE_CUDA="${CITEFORGE_CUDA:-OFF}" ||
      die "cmake configure failed"
  fi
  say "building (this takes several minutes on a cold 2-core machine)"
  cmake --build "$build_dir" -j "$(nproc)" || die "build failed"
  say "built $build_dir/citeforge"
}

install_debian_packages
install_libtorch
configure_and_build
