#!/usr/bin/env bash
# Creates the Python venv for scripts/make_model_fixtures.py and scripts/make_qlora_fixtures.py
# in $CITEFORGE_CACHE/pyref-venv (default ~/.cache/citeforge/pyref-venv), outside the repository.
#
# PyPI's Linux torch wheel imports only with its CUDA wheels installed (a few GB), even on a
# CPU-only machine, so they come along. A torch wheel already in $CITEFORGE_CACHE/wheels is
# used instead of downloading it again.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${CITEFORGE_CACHE:-$HOME/.cache/citeforge}"
venv="$cache/pyref-venv"

python3 -m venv "$venv"
PIP_CACHE_DIR="$cache/pip" "$venv/bin/pip" install -q --disable-pip-version-check \
  --find-links "$cache/wheels" -r "$repo/scripts/requirements-reference.txt"
echo "ready: $venv/bin/python $repo/scripts/make_model_fixtures.py (or make_qlora_fixtures.py)"
