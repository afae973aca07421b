#!/usr/bin/env bash
# bench/redis_side_by_side.sh: expiring-server against Debian's redis-server, in one run.
#
#   bench/redis_side_by_side.sh [BUILD_DIR]
#
# BUILD_DIR is a Release build of this project (default: build-release) that contains
# server/expiring-server. Needs redis-server, redis-benchmark and redis-cli (Debian: redis-server,
# redis-tools). Prints a markdown table:
#   * throughput: redis-benchmark, 50 clients, SET key:<rand> val EX 100 and GET key:<rand>,
#     without and with -P 16 pipelining; the two servers alternate run by run;
#   * memory, measured first on the fresh servers: 1e6 keys with a TTL loaded into each
#     (redis-cli --pipe); INFO used_memory (Redis: its allocator's count; expiring-server: the
#     store's memory_usage()), its growth per key over the empty server, and the RSS growth.
# Environment: N_P1 / N_P16 requests per throughput run, KEYS keys for the memory part.
set -euo pipefail

BUILD_DIR=${1:-build-release}
RESP_SERVER="$BUILD_DIR/server/expiring-server"
N_P1=${N_P1:-200000}
N_P16=${N_P16:-1000000}
KEYS=${KEYS:-1000000}
CLIENTS=50
RANGE=1000000

need() { command -v "$1" >/dev/null 2>&1 || { echo "redis_side_by_side: $1 not found" >&2; exit 2; }; }
need redis-server
need redis-benchmark
need redis-cli
[ -x "$RESP_SERVER" ] || { echo "redis_side_by_side: $RESP_SERVER not built (configure with -DCMAKE_BUILD_TYPE=Release)" >&2; exit 2; }

WORK=$(mktemp -d)
REDIS_PID=""
OURS_PID=""
cleanup() {
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null || true
  [ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# expiring-server picks a free port itself and prints it.
"$RESP_SERVER" --port 0 >"$WORK/ours.out" 2>"$WORK/ours.err" &
OURS_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/ours.out" 2>/dev/null && break; sleep 0.05; done
OURS_PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/ours.out" | head -1)
[ -n "$OURS_PORT" ] || { echo "expiring-server did not start" >&2; exit 1; }

# redis-server on a free port (retry on a clash), no persistence.
for _ in $(seq 20); do
  REDIS_PORT=$((20000 + RANDOM % 20000))
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
    --daemonize no --logfile "$WORK/redis.log" &
  REDIS_PID=$!
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" PING >/dev/null 2>&1 && break; sleep 0.05; done
  redis-cli -p "$REDIS_PORT" PING >/dev/null 2>&1 && break
  kill "$REDIS_PID" 2>/dev/null || true
  REDIS_PID=""
done
[ -n "$REDIS_PID" ] || { echo "redis-server did not start" >&2; exit 1; }

REDIS_VERSION=$(redis-cli -p "$REDIS_PORT" INFO server | tr -d '\r' | sed -n 's/^redis_version://p')

# ---- memory first, on fresh servers: KEYS keys with a TTL ----
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
used_memory() { redis-cli -p "$1" INFO memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
gen_keys() {
  awk -v n="$KEYS" 'BEGIN {
    for (i = 0; i < n; i++) {
      k = sprintf("key:%012d", i); v = sprintf("v%09d", i);
      printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$6\r\n100000\r\n", length(k), k, length(v), v
    }
  }'
}
gen_keys >"$WORK/load.resp"
declare -A MEM
for side in redis ours; do
  port=$REDIS_PORT
  pid=$REDIS_PID
  [ "$side" = ours ] && port=$OURS_PORT && pid=$OURS_PID
  MEM[$side,used0]=$(used_memory "$port")
  MEM[$side,rss0]=$(rss_kb "$pid")
  redis-cli -p "$port" --pipe <"$WORK/load.resp" >/dev/null
  MEM[$side,keys]=$(redis-cli -p "$port" DBSIZE)
  MEM[$side,used1]=$(used_memory "$port")
  MEM[$side,rss1]=$(rss_kb "$pid")
done
for side in redis ours; do
  port=$REDIS_PORT
  [ "$side" = ours ] && port=$OURS_PORT
  redis-cli -p "$port" FLUSHALL >/dev/null
done

# rps of one redis-benchmark run (its CSV: "test","rps",...)
bench() {  # port pipeline n args...
  local port=$1 p=$2 n=$3
  shift 3
  redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$n" -r "$RANGE" -P "$p" --csv "$@" 2>/dev/null |
    tail -1 | cut -d, -f2 | tr -d '"'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'; }

declare -A RPS
for p in 1 16; do
  n=$N_P1
  [ "$p" = 16 ] && n=$N_P16
  for w in set get; do
    for side in redis ours; do
      port=$REDIS_PORT
      [ "$side" = ours ] && port=$OURS_PORT
      if [ "$w" = set ]; then
        RPS[$side,$w,$p]=$(bench "$port" "$p" "$n" SET key:__rand_int__ val EX 100)
      else
        RPS[$side,$w,$p]=$(bench "$port" "$p" "$n" GET key:__rand_int__)
      fi
    done
  done
done

per_key() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (b - a) / n }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "Machine: $(nproc) CPUs, ${CPU:-unknown CPU}; redis-server $REDIS_VERSION and expiring-server ($BUILD_DIR) on"
echo "127.0.0.1, redis-benchmark with $CLIENTS clients on the same machine; key space $RANGE."
echo
echo "| workload | redis-server $REDIS_VERSION | expiring-server | expiring-server / redis |"
echo "|---|---:|---:|---:|"
for p in 1 16; do
  for w in set get; do
    label="GET key:rand"
    [ "$w" = set ] && label="SET key:rand val EX 100"
    [ "$p" = 16 ] && label="$label, -P 16"
    r=${RPS[redis,$w,$p]:-0}
    o=${RPS[ours,$w,$p]:-0}
    echo "| $label (requests/s) | $r | $o | $(ratio "$r" "$o") |"
  done
done
echo "| $KEYS keys with TTL: DBSIZE | ${MEM[redis,keys]} | ${MEM[ours,keys]} | |"
echo "| INFO used_memory | $(mib "${MEM[redis,used1]}") | $(mib "${MEM[ours,used1]}") | $(ratio "${MEM[redis,used1]}" "${MEM[ours,used1]}") |"
r_pk=$(per_key "${MEM[redis,used0]}" "${MEM[redis,used1]}" "$KEYS")
o_pk=$(per_key "${MEM[ours,used0]}" "${MEM[ours,used1]}" "$KEYS")
echo "| used_memory growth per key (bytes) | $r_pk | $o_pk | $(ratio "$r_pk" "$o_pk") |"
r_rss=$(per_key "$((MEM[redis,rss0] * 1024))" "$((MEM[redis,rss1] * 1024))" "$KEYS")
o_rss=$(per_key "$((MEM[ours,rss0] * 1024))" "$((MEM[ours,rss1] * 1024))" "$KEYS")
echo "| RSS growth per key (bytes) | $r_rss | $o_rss | $(ratio "$r_rss" "$o_rss") |"
