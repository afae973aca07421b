#!/usr/bin/env bash
# scripts/reference.sh: build the reference documentation from the public headers (Doxygen).
#
#   bash scripts/reference.sh                 -> build/reference/html/index.html
#   bash scripts/reference.sh --out DIR       -> DIR/html/index.html
#
# docs/reference/Doxyfile says what is read and how (the headers' `//` comments, through
# scripts/doxygen_filter.py). Doxygen's warnings are printed; any warning (a public member
# without documentation, a comment Doxygen cannot read) makes the exit status 1, which is how
# ctest's docs.reference checks it. Needs doxygen (Debian: doxygen) and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=build/reference
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    *) echo "usage: bash scripts/reference.sh [--out DIR]" >&2; exit 2 ;;
  esac
done
command -v doxygen >/dev/null || { echo "reference.sh: doxygen is not installed (Debian: doxygen)" >&2; exit 1; }
mkdir -p "$out"
log="$out/warnings.txt"
rm -f "$log"
# The Doxyfile with this run's output directory and warning log appended (later lines win).
{ cat docs/reference/Doxyfile; echo "OUTPUT_DIRECTORY = $out"; echo "WARN_LOGFILE = $log"; } | doxygen -
if [[ ! -f "$out/html/index.html" ]]; then
  echo "reference.sh: doxygen wrote no $out/html/index.html" >&2
  exit 1
fi
if [[ -s "$log" ]]; then
  cat "$log" >&2
  echo "reference.sh: $(grep -c 'warning:' "$log") warnings (see above); the reference must build without any" >&2
  exit 1
fi
echo "reference.sh: $out/html/index.html, no warnings ($(find "$out/html" -name '*.html' | wc -l) pages)"
