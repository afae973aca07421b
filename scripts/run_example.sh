#!/usr/bin/env bash
# scripts/run_example.sh: build and run examples/quickstart.cpp (executable `quickstart`).
# Arguments are passed on to the program.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(cmake g++ make pkg-config libabsl-dev libxxhash-dev)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" -eq 0 ]]; then
    echo "run_example.sh: installing missing packages: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "run_example.sh: missing Debian packages: ${missing[*]}" >&2
    echo "install them with:" >&2
    echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

dir=build/example
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DEXPIRING_BUILD_EXAMPLES=ON -DEXPIRING_BUILD_TESTS=OFF -DEXPIRING_BUILD_BENCH=OFF \
  -DEXPIRING_WERROR=OFF
cmake --build "$dir" --target quickstart -j2
exec "$dir/examples/quickstart" "$@"
