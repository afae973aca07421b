#!/usr/bin/env bash
# scripts/bench.sh: build the benchmarks in Release, run them all, and regenerate every page and
# plot of docs/bench/, each stamped with the machine, the commit and the time of this run.
#
#   bash scripts/bench.sh            quick mode: 1e4 and 1e6 keys (about seven minutes on 2 cores,
#                                    bench_engine about two of them)
#   bash scripts/bench.sh --full     full mode: adds 1e7 keys and repetitions (about 30 minutes,
#                                    bench_engine about 16 of them; needs ~12 GB of free memory)
#
# Writes the raw results to build/bench/results/ (ops.json from Google Benchmark; memory.csv,
# memory_summary.csv, reclaim_summary.csv, reclaim_series.csv; get_cost.csv; cache.txt;
# engine.csv, engine_memory.csv, engine_ticks.csv; machine.txt) and the report to
# docs/bench/: table.md (goal, target, measured, pass/fail), reclaim.svg (stale keys left
# against ticks, per policy and preset), memory.svg (bytes per key against table size),
# engine.md (E1-E6: goal, target, measured, pass/fail) and engine_memory.svg (E3: bytes per key
# over the raw map against table size); then concurrent.md and concurrent.svg (bench_concurrent
# on the cached clock: throughput against threads), hash_fields.md (bench_hash_fields and
# bench_concurrent_hashes), concurrent_log.md (bench_concurrent_log), durability.md
# (bench_durability), vs_redis.md (bench_vs_redis: GET and SET PX in the store and on
# redis-server over loopback), and replica.md with replica.svg (bench_replica: the lag of
# an in-process replica of redis-server against the write rate); last, README.md's performance
# tables (scripts/bench_readme.py, from bench_engine and bench_vs_redis). Every page is written
# whole by this script: regenerate it, do not edit its figures.
# Needs cmake, a C++17 compiler, Abseil, xxHash, Google Benchmark, hiredis, redis-server and
# python3 (standard library only). Timing is real: run it on a quiet machine, and read the
# ratios, not the ns.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=quick
for arg in "$@"; do
  case "$arg" in
    --full) mode=full ;;
    --quick) mode=quick ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$arg' (use --quick or --full)" >&2; exit 2 ;;
  esac
done

build=build/bench
results="$build/results"
docs=docs/bench
jobs="${EXPIRING_BENCH_JOBS:-2}"
start=$(date +%s)

echo "=== bench.sh: configure and build (Release) in $build ==="
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEXPIRING_BUILD_BENCH=ON -DEXPIRING_REDIS=ON \
  -DEXPIRING_BUILD_TESTS=OFF -DEXPIRING_BUILD_EXAMPLES=OFF -DEXPIRING_INSTALL=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target bench_ops bench_memory bench_reclaim bench_cache \
  bench_get_cost bench_engine bench_concurrent bench_concurrent_log bench_hash_fields \
  bench_concurrent_hashes bench_durability bench_vs_redis bench_replica

mkdir -p "$results"
rm -f "$results"/*.json "$results"/*.csv "$results"/*.txt

{
  model="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)"
  mem="$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || true)"
  echo "${model:-unknown CPU}, $(nproc) cores, ${mem:-? GiB} RAM, Linux $(uname -r), $(c++ --version | head -n 1)"
  dirty=""
  if ! git diff --quiet HEAD -- include 2>/dev/null; then dirty=" + uncommitted include/ changes"; fi
  echo "mode: $mode; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$dirty; $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$results/machine.txt"
cat "$results/machine.txt"

if [[ "$mode" == full ]]; then
  min_time=0.2
else
  min_time=0.05
fi

echo "=== bench_memory ($mode) ==="
"$build/bench/bench_memory" --"$mode" --out="$results"
echo "=== bench_reclaim ($mode) ==="
"$build/bench/bench_reclaim" --"$mode" --out="$results"
echo "=== bench_ops ($mode) ==="
"$build/bench/bench_ops" --"$mode" --benchmark_min_time="$min_time" \
  --benchmark_out="$results/ops.json" --benchmark_out_format=json

echo "=== bench_get_cost ($mode): get() with the cache features unused and used ==="
"$build/bench/bench_get_cost" --"$mode" | tee "$results/get_cost.csv"
echo "=== bench_cache ($mode) ==="
"$build/bench/bench_cache" --"$mode" | tee "$results/cache.txt"

echo "=== bench_engine ($mode): engine goals E1-E7 ==="
"$build/bench/bench_engine" --"$mode" --out="$results"

echo "=== report ==="
python3 scripts/bench_report.py "$results" "$docs"

# page TITLE FILE SOURCE COMMAND...: runs COMMAND, keeps its output in $results/FILE.txt and
# writes $docs/FILE.md: the title, what made it, the machine line, the output as text.
page() {
  local title="$1" file="$2" source="$3"
  shift 3
  echo "=== $file: $* ==="
  "$@" | tee "$results/$file.txt"
  {
    echo "<!-- written by scripts/bench.sh from $source; regenerate, do not edit -->"
    echo "# $title"
    echo
    echo "$(sed -n 1p "$results/machine.txt"); $(sed -n 2p "$results/machine.txt")"
    echo
    echo '```text'
    cat "$results/$file.txt"
    echo '```'
  } > "$docs/$file.md"
}

# plot_page TITLE FILE SOURCE ALT BODY: writes $docs/FILE.md: the title, what made it, the
# machine line, the plot $docs/FILE's svg (ALT its text), then BODY, a Markdown file.
plot_page() {
  local title="$1" file="$2" source="$3" alt="$4" body="$5"
  {
    echo "<!-- written by scripts/bench.sh from $source; regenerate, do not edit -->"
    echo "# $title"
    echo
    echo "$(sed -n 1p "$results/machine.txt"); $(sed -n 2p "$results/machine.txt")"
    echo
    echo "![$alt]($file.svg)"
    echo
    cat "$body"
  } > "$docs/$file.md"
}

echo "=== bench_concurrent ($mode, cached clock) ==="
mkdir -p "$results/concurrent"
"$build/bench/bench_concurrent" --"$mode" --clock=cached --out="$results/concurrent"
python3 scripts/plot_concurrent.py "$results/concurrent/concurrent.csv" "$docs/concurrent.svg"
plot_page "ConcurrentStore throughput (bench_concurrent)" concurrent \
  "bench/bench_concurrent --$mode --clock=cached and scripts/plot_concurrent.py" "throughput against threads" \
  "$results/concurrent/concurrent_table.md"

page "Hash fields against nested maps, and on ConcurrentStore" hash_fields \
  "bench/bench_hash_fields and bench/bench_concurrent_hashes" \
  sh -c "'$build/bench/bench_hash_fields' && echo && '$build/bench/bench_concurrent_hashes'"
page "The append-only log's cost on ConcurrentStore (bench_concurrent_log)" concurrent_log \
  "bench/bench_concurrent_log --$mode --clock=cached" \
  "$build/bench/bench_concurrent_log" --"$mode" --clock=cached
page "Snapshots, the log and Redis's RDB against redis-server (bench_durability)" durability \
  "bench/bench_durability" "$build/bench/bench_durability"
page "The store against redis-server doing the same work (bench_vs_redis)" vs_redis \
  "bench/bench_vs_redis --$mode" "$build/bench/bench_vs_redis" --"$mode" --out="$results"
echo "=== bench_replica ($mode): replication lag ==="
mkdir -p "$results/replica"
"$build/bench/bench_replica" --"$mode" --out="$results/replica" | tee "$results/replica.txt"
python3 scripts/plot_replica.py "$results/replica/replica_lag.csv" "$docs/replica.svg"
{ echo '```text'; cat "$results/replica.txt"; echo '```'; } > "$results/replica_body.md"
plot_page "An in-process replica of redis-server (bench_replica)" replica \
  "bench/bench_replica --$mode and scripts/plot_replica.py" "replication lag against the write rate" \
  "$results/replica_body.md"
echo "=== README.md: the performance tables ==="
python3 scripts/bench_readme.py "$results" README.md
echo "bench.sh: $mode run took $(( $(date +%s) - start )) s; results in $results, report in $docs/"
