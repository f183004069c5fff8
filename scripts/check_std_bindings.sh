#!/usr/bin/env bash
# Checks that a citeforge binary's calls into the C++ standard library bind to libstdc++ itself
# and not to one of the private libstdc++ copies that the LibTorch wheel's libraries export.
# (libtorch.so exports std::filesystem::remove_all without the internals it calls: a binary bound
# there crashed removing any non-empty folder; CMakeLists.txt links libstdc++ first for that.)
#
#   scripts/check_std_bindings.sh BINARY       (a CTest; scripts/gpu_check.sh runs it too)
#
# The dynamic linker reports every binding when asked to bind all symbols at start-up
# (LD_BIND_NOW), so `BINARY --version` is enough. Each symbol that libstdc++ defines and the
# binary uses must be bound to libstdc++, or to the binary itself (data copied into it at link
# time, or all of libstdc++ where the toolchain links it statically).
set -euo pipefail
export LC_ALL=C
bin="${1:?usage: check_std_bindings.sh BINARY}"
[ -x "$bin" ] || { echo "[std-bindings] $bin: not an executable" >&2; exit 1; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$log" "$bin" --version >/dev/null
# Lines: "PID: binding file BIN [0] to LIB [0]: normal symbol `SYMBOL' [VERSION]".
bindings="$(cat "$log".* | awk -v bin="$bin" '$2 == "binding" && $4 == bin && $5 == "[0]" {
  sym = $0; sub(/.*symbol `/, "", sym); sub(/'"'"'.*/, "", sym); print sym, $7 }')"
rm -f "$log".*
# The process's libstdc++ (LibTorch needs it even where the binary links it statically, as the
# GPU machine's toolchain does: then the binary's own copy must win, and it binds to itself).
libstdcxx="$(ldd "$bin" | awk '$1 ~ /^libstdc\+\+\.so/ { print $3 }')"
[ -f "$libstdcxx" ] || { echo "[std-bindings] FAIL: no libstdc++ among $bin's libraries" >&2; exit 1; }
defined="$(mktemp)"
trap 'rm -f "$log" "$defined"' EXIT
nm -D --defined-only "$libstdcxx" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$defined"
# Standard-library symbols the binary uses, with the library each is bound to.
used="$(printf '%s\n' "$bindings" | sort -u | join - "$defined")"
total="$(printf '%s\n' "$used" | grep -c . || true)"
# The binary itself may hold a symbol: data (vtables, typeinfo) copied into it at link time.
elsewhere="$(printf '%s\n' "$used" | awk -v lib="$libstdcxx" -v bin="$bin" '$2 != lib && $2 != bin' |
  grep . || true)"
if [ -n "$elsewhere" ]; then
  count="$(printf '%s\n' "$elsewhere" | wc -l)"
  echo "[std-bindings] FAIL: $count of $total libstdc++ symbols $bin uses bind elsewhere, e.g.:"
  printf '%s\n' "$elsewhere" | awk 'NR <= 5 { print "  " $0 }'
  exit 1
fi
own="$(printf '%s\n' "$used" | awk -v bin="$bin" '$2 == bin' | grep -c . || true)"
echo "[std-bindings] ok: of the $total libstdc++ symbols $bin binds at start-up, $((total - own))" \
  "bind to $libstdcxx and $own to the binary's own copy"
