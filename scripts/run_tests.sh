#!/usr/bin/env bash
# scripts/run_tests.sh: build and test expiring in the CI configurations (offline).
#
#   bash scripts/run_tests.sh                   all three: cxx17, cxx20, asan
#   EXPIRING_CONFIGS=cxx17 bash scripts/run_tests.sh      a subset (space or comma separated)
#
# Stops at the first failure. Last line: "tests: N passed, 0 failed, K skipped" (summed over
# configurations; a skipped test said why in its output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ---- Debian packages ------------------------------------------------------------------------
# libpoco-dev: POCO's UniqueExpireCache, a contender of bench_engine (its smoke run is a test).
# tcl: tclsh runs Redis's own test suite (from Debian's redis source package) against
# expiring-server (tests/redis/units/run_units.sh).
# ninja-build: every configuration is generated for Ninja (faster to schedule than Make, and
# its .ninja_log gives each translation unit's time, printed after each build).
# clang and libclang-rt-14-dev (libclang_rt.fuzzer and the sanitizer runtimes of Debian 12's
# clang-14, which clang does not pull in): the sanitizer configuration and its fuzz targets.
# doxygen: the reference documentation, built by the test docs.reference (scripts/reference.sh).
packages=(cmake ninja-build g++ make pkg-config python3 libabsl-dev libxxhash-dev catch2 libbenchmark-dev
          redis-server redis-tools libhiredis-dev libtbb-dev libcuckoo-dev clang libclang-rt-14-dev
          libpoco-dev tcl lld doxygen)
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
all_configs=(cxx17 cxx20 asan)
requested="${EXPIRING_CONFIGS:-${all_configs[*]}}"
requested="${requested//,/ }"
configs=()
for c in $requested; do
  case "$c" in
    cxx17|cxx20|asan) configs+=("$c") ;;
    *) echo "run_tests.sh: unknown configuration '$c' (known: ${all_configs[*]})" >&2; exit 2 ;;
  esac
done
if ((${#configs[@]} == 0)); then
  echo "run_tests.sh: no configuration selected" >&2
  exit 2
fi

# -g1 (line tables only) instead of -g: enough for sanitizer and debugger backtraces, and
# much faster to compile and link for this template-heavy suite on two cores. LLVM's linker
# (lld) for every program, with GCC and with clang: an ASan test program linked in 0.4 s
# against 1.2 s with GNU ld, and the suites are about 150 programs.
common=(-G Ninja -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DEXPIRING_REDIS=ON -DCMAKE_CXX_STANDARD_REQUIRED=ON
        -DCMAKE_CXX_EXTENSIONS=OFF "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1"
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
total_passed=0
total_skipped=0
# The configuration-independent checks (consumers and packaging, README/docs blocks and
# references, compile-fail): in the cxx17 configuration alone.
no_config_checks=(-DEXPIRING_TEST_CONSUMERS=OFF -DEXPIRING_TEST_DOCS=OFF -DEXPIRING_TEST_COMPILE_FAIL=OFF)
# The README/docs code blocks are programs that run: they run once, in `asan`, under ASan and
# UBSan as before; their compile-only checks (references, fences) go with them.

# run_config <name> [cmake args...]: configure, build and test one configuration.
run_config() {
  local name="$1"; shift
  local dir="build/ci-$name"
  local log="$dir/ctest.log"
  echo
  echo "=== [$name] configure ($dir) ==="
  # A build directory generated for another generator (Make, before Ninja) cannot be reused.
  if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    echo "run_tests.sh: [$name] $dir was not generated for Ninja: removing it"
    rm -rf "$dir"
  fi
  local t0 t1 t2
  t0=$SECONDS
  cmake -S . -B "$dir" "${common[@]}" "$@"
  echo "=== [$name] build ==="
  cmake --build "$dir" -j"$jobs"
  t1=$SECONDS
  echo "=== [$name] slowest translation units ==="
  python3 scripts/slowest_tus.py "$dir" -n 10 || true
  echo "=== [$name] test ==="
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 600 --no-tests=error \
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
  # The unit suites' one-entry-per-program tests (EXPIRING_TEST_PER_CASE=OFF) are counted as
  # the test cases they ran, and the cases that skipped inside them as skipped.
  local programs cases case_skips
  local counted
  counted="$(python3 scripts/count_cases.py "$dir")" || { echo "run_tests.sh: [$name] cannot count the cases" >&2; exit 1; }
  read -r programs cases case_skips <<<"$counted"
  total_passed=$((total_passed + total - skipped - programs + cases - case_skips))
  total_skipped=$((total_skipped + skipped + case_skips))
  t2=$SECONDS
  echo "=== [$name] configure+build $((t1 - t0)) s, test $((t2 - t1)) s ==="
}

for c in "${configs[@]}"; do
  case "$c" in
    cxx17)
      # The configuration-independent checks, and only those: the CMake consumers and the
      # packaging tests, the compile-fail tests (the README/docs code blocks run in `asan`).
      # They run here once per CI run, not in every configuration (each is the same check
      # whatever the build type or sanitizer). The examples are built and run here, and in
      # cxx20 and asan too (the server the live suites start is one of them).
      #
      # The Catch2 suites are not built here (EXPIRING_TEST_SUITES=OFF): this configuration
      # (C++17, -O0, the default expiry policy) was a subset of `asan` below, which builds
      # and runs every one of those suites with the same standard, optimisation level and
      # warning set (-Werror), under ASan and UBSan (with clang;
      # GCC compiles them in cxx20, and the library and examples at C++17 -O0 here). The
      # few assertions that only hold without ASan (peak RSS of the server, whose quarantine
      # keeps memory: tests/robustness/test_server_limits.cpp and test_server_hostile.cpp)
      # run in `cxx20`, which is not sanitized. Building and running the suites here too cost
      # about 8 of the 49 minutes on two cores (7:14 to build with Ninja, 1:26 of ctest), for
      # no check the other two lack.
      #
      # The benchmarks are built and run once (bench_smoke_*: each for a moment, to show that
      # it runs) here, at -O0: CI checks that they work, not how fast (docs/bench/README.md).
      run_config cxx17 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_STANDARD=17 \
        -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=OFF -DEXPIRING_BUILD_BENCH=ON \
        -DEXPIRING_TEST_SUITES=OFF -DEXPIRING_TEST_CONSUMERS=ON -DEXPIRING_TEST_DOCS=OFF \
        -DEXPIRING_TEST_COMPILE_FAIL=ON
      ;;
    cxx20)
      # RelWithDebInfo (-O2), warnings are errors here too (-Wnull-dereference, whose -O2
      # false positives made this configuration lenient once, is not in the warning set).
      # C++20 and optimised code; the one configuration of the suites without a sanitizer (the
      # RSS assertions and Redis's own units run here). The examples are built and run in cxx17
      # and asan, the benchmarks in cxx17 (each was half a minute of this build on two cores). The unit suite is
      # built here over TimeOrderedExpiry, and in `asan` over SampledExpiry (the default) plus
      # TimeOrderedExpiry for the files whose subject is the expiry index: every test runs
      # over both policies, and under both compilers, and each policy's own code runs under
      # the sanitizers. (Both policies in both configurations cost 4 of 34 minutes: about 200
      # s of the sanitizer build and 100 s of its ctest for the second policy alone.)
      # The configuration-independent checks run in cxx17 alone.
      # The command layer's unit tests and the backends' conformance suite are built in `asan`
      # alone (with GCC -O2 they were 227 s of this build's 1067 s of CPU, and check nothing
      # there the sanitized build does not); the live and robustness suites, whose subject is
      # the server (built at -O2 here), are compiled at -Og (their 197 s of CPU, halved). Each unit-suite program is one ctest entry here
      # and in `asan` (EXPIRING_TEST_PER_CASE=OFF: scripts/count_cases.py counts its cases).
      # Here and in `asan` the test files are compiled twelve to a translation unit
      # (EXPIRING_TEST_BATCH=12, tests/CMakeLists.txt): the library code they share is
      # instantiated and optimised once per twelve files (the unit suite's 551 s of GCC -O2 CPU
      # became 367 s in batches of six, the robustness suite's 62 s at -Og 25 s; twelve unit
      # files took 91 s of CPU together against 118 s as two batches of six).
      run_config cxx20 -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=20 \
        -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=OFF -DEXPIRING_BUILD_BENCH=OFF -DEXPIRING_BUILD_EXAMPLES=OFF \
        -DEXPIRING_TEST_POLICIES=time-ordered -DEXPIRING_TEST_COMMANDS=OFF -DEXPIRING_TEST_BACKENDS=OFF \
        -DEXPIRING_TEST_PER_CASE=OFF -DEXPIRING_TEST_BATCH=12 \
        "-DEXPIRING_TEST_SERVER_SUITES_OPTIONS=-Og;-DXXH_NO_INLINE_HINTS=1" \
        "${no_config_checks[@]}"
      ;;
    asan)
      (
        export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
        # Every Catch2 suite, ASan+UBSan (the expiry policies: see cxx20); the ThreadSanitizer suites;
        # the libFuzzer targets of tests/fuzz (ASan+UBSan too, at -O1 for more inputs a second),
        # each seeded with a corpus the library writes and run for 8 s by ctest (label fuzz): a
        # failed property or a sanitizer report fails the run. (They had a configuration of their
        # own, which built them a second time: 2.5 of 33 minutes.)
        # The examples and the README/docs code blocks run here, under the sanitizers; the
        # other configuration-independent checks run in cxx17 alone.
        #
        # Built with clang (Debian 12's clang-14 and its sanitizer runtimes): the same checks
        # (ASan, UBSan, TSan, LeakSanitizer) over the same code, and a quarter of GCC 12's
        # build time here. GCC's instrumented -O0 build of these suites took 814 s of the
        # 1576 s CI run (a test file about 2.5x clang's time: tests/test_set.cpp 21.6 s
        # against 8.7 s), and its programs ran ctest in 209 s against 112 s. Clang's ASan
        # also keeps its use-after-scope checks in the TimeOrderedExpiry build (GCC's doubled
        # that build's time, so it went without them). GCC builds the suites in cxx20 (-O2,
        # C++20, -Werror, the one unsanitized run), and the library and examples at C++17
        # -O0 in cxx17, so both compilers' warnings still stop a change.
        run_config asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_STANDARD=17 \
          -DEXPIRING_WERROR=ON -DEXPIRING_SANITIZE=ON -DEXPIRING_BUILD_BENCH=OFF \
          -DEXPIRING_TEST_CONSUMERS=OFF -DEXPIRING_TEST_COMPILE_FAIL=OFF -DEXPIRING_TEST_DOCS=ON \
          -DEXPIRING_TEST_REDIS_UNITS=OFF "-DEXPIRING_TEST_POLICIES=sampled;time-ordered-index" \
          -DEXPIRING_TEST_PER_CASE=OFF -DEXPIRING_TEST_BATCH=12
        echo "$total_passed $total_skipped" > "build/ci-asan/.passed"
      )
      read -r total_passed total_skipped < "build/ci-asan/.passed"
      ;;
  esac
done

echo "tests: ${total_passed} passed, 0 failed, ${total_skipped} skipped"
