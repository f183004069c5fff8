#!/usr/bin/env bash
# Prepares what a GPU machine without network access needs to build and run citeforge: the
# Debian packages' files (headers, shared libraries, pkg-config and CMake configs, and pkgconf
# itself) of yaml-cpp, sentencepiece, PCRE2, utf8proc, HDF5, gloo's headers, Catch2, nlohmann-json, and
# every runtime library they pull in, downloaded with apt-get and unpacked (not installed) into
# .gpu-deps/root. The GPU machine brings its own CUDA toolkit, compiler and PyTorch (LibTorch);
# this folder travels with the tree on every call, so it is trimmed (no documentation, no static
# library, no HDF5 C++ or Fortran API) and must stay under 30 MiB.
# scripts/gpu_env.sh points a build at it; scripts/check_gpu_deps.sh proves it complete here,
# with the system's own copies hidden.
#
#   scripts/gpu_deps.sh            # on a networked Debian machine, once (again after a change)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/.gpu-deps"
limit_mib=30
# What the build compiles and links against, then what those libraries need at run time that
# the GPU machine's image may lack (libhdf5 -> libcurl4 -> TLS, Kerberos, LDAP, ...).
build_packages="libyaml-cpp-dev libyaml-cpp0.7 libsentencepiece-dev libsentencepiece0 libpcre2-dev
  libpcre2-8-0 libpcre2-posix3 libutf8proc-dev libutf8proc2 libhdf5-dev libhdf5-103-1
  libhdf5-hl-100 libsz2 libaec0 libaec-dev libgloo-dev catch2 nlohmann-json3-dev zlib1g-dev
  libjpeg62-turbo-dev pkgconf pkgconf-bin libpkgconf3"
runtime_packages="libcurl4 libnghttp2-14 librtmp1 libssh2-1 libpsl5 libldap-2.5-0 libsasl2-2
  libsasl2-modules-db libbrotli1 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0
  libkeyutils1 libssl3 libidn2-0 libunistring2 libgnutls30 libzstd1 libcom-err2 libgmp10
  libhogweed6 libnettle8 libp11-kit0 libtasn1-6 libffi8"

rm -rf "$out/root" && mkdir -p "$out/debs" "$out/root"
exclude="$(git -C "$repo" rev-parse --git-path info/exclude)"
grep -qx '/.gpu-deps/' "$exclude" 2>/dev/null || echo '/.gpu-deps/' >>"$exclude"
# shellcheck disable=SC2086
(cd "$out/debs" && apt-get download $build_packages $runtime_packages)
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$out/root"; done
# Trim what a build never reads.
rm -rf "$out/root/usr/share/doc" "$out/root/usr/share/man" "$out/root/usr/share/info" \
  "$out/root/usr/share/lintian" "$out/root/usr/share/bug" "$out/root/usr/share/locale"
find "$out/root" -name '*.a' -delete
# Catch2's CMake config refuses to load when its Catch2WithMain archive is missing; the tests
# have their own main and link the header-only target, so an empty archive stands in.
printf '!<arch>\n' >"$out/root/usr/lib/libCatch2WithMain.a"
# HDF5's C++ and Fortran APIs, OpenSSL's loadable engines: citeforge uses none of them (PCRE2's
# 16- and 32-bit libraries are not downloaded for the same reason: it matches UTF-8 only).
find "$out/root" \( -name '*.mod' -o -name 'H5f90*.h' \) -delete
grep -l -r "namespace H5" "$out/root/usr/include/hdf5" | xargs -r rm -f
rm -rf "$out/root/usr/lib/x86_64-linux-gnu/engines-3" "$out/root/usr/lib/x86_64-linux-gnu/ossl-modules"
size_kib="$(du -sk "$out/root" | cut -f1)"
echo "[gpu-deps] unpacked $(ls "$out"/debs | wc -l) packages into $out/root: $((size_kib / 1024)) MiB"
if [ "$size_kib" -gt $((limit_mib * 1024)) ]; then
  echo "[gpu-deps] error: the folder is over $limit_mib MiB; a device call carries 64 MiB with the tree" >&2
  exit 1
fi
