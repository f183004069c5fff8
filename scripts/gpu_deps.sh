#!/usr/bin/env bash
# Prepares what a GPU machine without network access needs to build citeforge: the Debian
# packages' files (headers, libraries, CMake configs) of yaml-cpp, sentencepiece, HDF5, Catch2,
# nlohmann-json and their runtime libraries, downloaded with apt-get and unpacked (not
# installed) into .gpu-deps/root. scripts/gpu_check.sh builds against them; the GPU machine
# brings its own CUDA toolkit and PyTorch (LibTorch) and this directory travels with the tree.
#
#   scripts/gpu_deps.sh            # on a networked Debian machine, once
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/.gpu-deps"
packages="libyaml-cpp-dev libyaml-cpp0.7 libsentencepiece-dev libsentencepiece0 libhdf5-dev
  libhdf5-103-1 libhdf5-hl-100 libsz2 libaec0 libaec-dev libcurl4 catch2 nlohmann-json3-dev
  zlib1g-dev libjpeg62-turbo-dev"
mkdir -p "$out/debs" "$out/root"
grep -qx '/.gpu-deps/' "$repo/.git/info/exclude" 2>/dev/null ||
  echo '/.gpu-deps/' >>"$(git -C "$repo" rev-parse --git-path info/exclude)"
(cd "$out/debs" && apt-get download $packages)
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$out/root"; done
echo "[gpu-deps] unpacked $(ls "$out"/debs | wc -l) packages into $out/root"
