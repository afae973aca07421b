#!/usr/bin/env bash
# scripts/run_tests.sh: build and test expiring in the CI configurations (offline).
#
#   bash scripts/run_tests.sh                   all four: cxx17, cxx20, asan, fuzz
#   EXPIRING_CONFIGS=cxx17 bash scripts/run_tests.sh      a subset (space or comma separated)
#
# Stops at the first failure. Last line: "tests: N passed, 0 failed, K skipped" (summed over
# configurations; a skipped test said why in its output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ---- Debian packages ------------------------------------------------------------------------
# clang and libclang-rt-14-dev (libclang_rt.fuzzer and the sanitizer runtimes of Debian 12's
# clang-14, which clang does not pull in): the fuzz configuration.
packages=(cmake g++ make pkg-config libabsl-dev libxxhash-dev catch2 libbenchmark-dev
          redis-server redis-tools libhiredis-dev libtbb-dev libcuckoo-dev clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" -eq 0 ]]; then
    echo "run_tests.sh: installing missing packages: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "run_tests.sh: missing Debian packages: ${missing[*]}" >&2
    echo "install them with:" >&2
    echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

# ---- Configurations -------------------------------------------------------------------------
jobs=2
all_configs=(cxx17 cxx20 asan fuzz)
requested="${EXPIRING_CONFIGS:-${all_configs[*]}}"
requested="${requested//,/ }"
configs=()
for c in $requested; do
  case "$c" in
    cxx17|cxx20|asan|fuzz) configs+=("$c") ;;
    *) echo "run_tests.sh: unknown configuration '$c' (known: ${all_configs[*]})" >&2; exit 2 ;;
  esac
done
if ((${#configs[@]} == 0)); then
  echo "run_tests.sh: no configuration selected" >&2
  exit 2
fi

# -g1 (line tables only) instead of -g: enough for sanitizer and debugger backtraces, and
# much faster to compile and link for this template-heavy suite on two cores.
common=(-DFETCHCONTENT_FULLY_DISCONNECTED=ON -DEXPIRING_REDIS=ON -DCMAKE_CXX_STANDARD_REQUIRED=ON
        -DCMAKE_CXX_EXTENSIONS=OFF "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1"
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
total_passed=0
total_skipped=0

# run_config <name> [cmake args...]; CI_TARGETS (build only these) and CI_LABEL (ctest -L) narrow
# a configuration to part of the suite.
run_config() {
  local name="$1"; shift
  local dir="build/ci-$name"
  local log="$dir/ctest.log"
  local targets=() label=()
  if [[ -n "${CI_TARGETS:-}" ]]; then read -r -a targets <<<"--target ${CI_TARGETS}"; fi
  if [[ -n "${CI_LABEL:-}" ]]; then label=(-L "$CI_LABEL"); fi
  echo
  echo "=== [$name] configure ($dir) ==="
  cmake -S . -B "$dir" "${common[@]}" "$@"
  echo "=== [$name] build ==="
  cmake --build "$dir" -j"$jobs" "${targets[@]}"
  echo "=== [$name] test ==="
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 600 --no-tests=error "${label[@]}" \
    2>&1 | tee "$log"
  # "100% tests passed, 0 tests failed out of 12"
  local line failed total
  line="$(grep -E '[0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)"
  if [[ -z "$line" ]]; then
    echo "run_tests.sh: [$name] could not find ctest's summary line" >&2
    exit 1
  fi
  failed="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")"
  total="$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")"
  if [[ "$failed" -ne 0 ]]; then
    echo "run_tests.sh: [$name] $failed of $total tests failed" >&2
    exit 1
  fi
  # Skipped entries (ctest: "NN - name (Skipped)", from EXPIRING_SKIP in tests/catch.hpp) are
  # in the total but did not pass: reported apart.
  local skipped
  skipped="$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)[[:space:]]*$' "$log" || true)"
  total_passed=$((total_passed + total - skipped))
  total_skipped=$((total_skipped + skipped))
}

for c in "${configs[@]}"; do
  case "$c" in
    cxx17)
      # The default policy only: the sanitizer configuration runs the suite over both expiry
      # policies, under ASan and UBSan (building it a third time here cost 4-5 minutes of the
      # 40 on two cores, for no check the sanitizer build lacks).
      run_config cxx17 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_STANDARD=17 \
        -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=OFF -DEXPIRING_BUILD_BENCH=OFF \
        -DEXPIRING_TEST_BOTH_POLICIES=OFF
      ;;
    cxx20)
      # RelWithDebInfo (-O2), warnings are errors here too (-Wnull-dereference, whose -O2
      # false positives made this configuration lenient once, is not in the warning set).
      # The sanitizer configuration runs the suite over both expiry policies; this one checks
      # C++20 and optimised code over the default policy, and builds the benchmarks.
      run_config cxx20 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=20 \
        -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=OFF -DEXPIRING_BUILD_BENCH=ON \
        -DEXPIRING_TEST_BOTH_POLICIES=OFF
      ;;
    asan)
      (
        export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
        run_config asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_STANDARD=17 \
          -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=ON -DEXPIRING_BUILD_BENCH=OFF
        echo "$total_passed $total_skipped" > "build/ci-asan/.passed"
      )
      read -r total_passed total_skipped < "build/ci-asan/.passed"
      ;;
    fuzz)
      # The four libFuzzer targets of tests/fuzz alone, with clang++ (-O1: more inputs in the
      # same seconds), each seeded with a corpus the library writes and run for 8 s by ctest
      # (label fuzz); a failed property or a sanitizer report fails the run. Only these targets
      # are built: the suite itself under clang would cost more than CI has.
      CI_TARGETS="fuzz_resp_parser fuzz_snapshot_load fuzz_append_log_replay fuzz_replication_stream" \
      CI_LABEL=fuzz \
        run_config fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
          "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DCMAKE_CXX_STANDARD=17 -DEXPIRING_WERROR=ON \
          -DEXPIRING_SANITIZE=OFF -DEXPIRING_BUILD_BENCH=OFF -DEXPIRING_BUILD_EXAMPLES=OFF \
          -DEXPIRING_TEST_CONSUMERS=OFF -DEXPIRING_TEST_BOTH_POLICIES=OFF -DEXPIRING_FUZZ_SECONDS=8
      # Without libFuzzer's runtime the targets are not defined and ctest finds no test
      # (--no-tests=error above): that fails the configuration rather than passing it empty.
      ;;
  esac
done

echo "tests: ${total_passed} passed, 0 failed, ${total_skipped} skipped"
