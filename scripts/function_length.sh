#!/usr/bin/env bash
# The longest functions of citeforge's library, by lines of code, with lizard (PyPI) installed
# into a cached venv outside the clone. Exits non-zero when a function in the checked folders
# is longer than the limit.
#
#   scripts/function_length.sh [LIMIT] [FOLDER...]   (default 100, trainer/; TOP=20 listed)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
limit="${1:-100}"
shift || true
folders=("${@:-trainer}")
cache="${CITEFORGE_CACHE:-$HOME/.cache/citeforge}"
venv="$cache/lizard-1.17.31"
if [ ! -x "$venv/bin/lizard" ]; then
  python3 -m venv "$venv"
  PIP_CACHE_DIR="$cache/pip" "$venv/bin/pip" install -q --disable-pip-version-check lizard==1.17.31
fi
cd "$repo"
# Every function of the library (tests and benchmarks aside), longest first: lines of code
# (lizard's NLOC: no blank or comment lines), file:line, name.
"$venv/bin/lizard" --csv common models data rewards attribution retrieval trainer 2>/dev/null |
  "$venv/bin/python" -c '
import csv, sys
rows = [(int(r[0]), f"{r[6]}:{r[9]}", r[7]) for r in csv.reader(sys.stdin)]
for nloc, where, name in sorted(rows, reverse=True):
    print(f"{nloc}\t{where}\t{name}")' >/tmp/citeforge-functions.tsv
echo "longest functions of the library (lines of code, file:line, name):"
head -n "${TOP:-20}" /tmp/citeforge-functions.tsv
over=0
for folder in "${folders[@]}"; do
  n="$(awk -F'\t' -v limit="$limit" -v folder="$folder/" \
    '$1 > limit && index($2, folder) == 1' /tmp/citeforge-functions.tsv | wc -l)"
  echo "$folder: $n function(s) over $limit lines"
  over=$((over + n))
done
[ "$over" -eq 0 ]
