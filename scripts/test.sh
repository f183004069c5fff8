#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (incrementally) and runs every test
# through CTest. The same command runs in CI (.ci/run).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/setup.sh"
cd "${CITEFORGE_BUILD_DIR:-$repo/build}"
ctest --output-on-failure -j "$(nproc)" "$@"
