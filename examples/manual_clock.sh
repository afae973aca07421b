#!/bin/sh
# examples/manual_clock.sh: test a one-hour TTL in milliseconds, from a shell, with redis-cli.
#
# expiring-server --clock manual keeps the keys' time still until DEBUG SET-TIME <unix-ms> or
# DEBUG ADVANCE-TIME <ms> moves it (an extension of this server). With Redis's exact expiry
# rules otherwise, a test of TTL logic in any language needs no sleep: here a session key with
# an hour's TTL is checked at its last live millisecond and one millisecond after.
#
#   examples/manual_clock.sh [path/to/expiring-server]     (redis-cli from Debian's redis-tools)
#
# It starts its own server on a free loopback port and stops it on the way out; every wait
# is bounded. Exit status 0 when every check holds.
set -eu

server=${1:-expiring-server}
command -v redis-cli >/dev/null || { echo "manual_clock: SKIPPED: no redis-cli (Debian: redis-tools)"; exit 77; }

dir=$(mktemp -d)
out="$dir/server.out"
"$server" --port 0 --clock manual --dir "$dir" 2>/dev/null >"$out" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

port=""
tries=0
while [ -z "$port" ] && [ "$tries" -lt 500 ]; do  # at most 5 s
  port=$(sed -n 's/^expiring-server: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] || { tries=$((tries + 1)); sleep 0.01; }
done
[ -n "$port" ] || { echo "manual_clock: the server did not start" >&2; exit 1; }

# One redis-cli run, one connection: the commands and, below, the reply each must get.
start=$(date +%s%N)
replies=$(redis-cli -p "$port" <<'EOF'
DEBUG SET-TIME 1800000000000
SET session:alice token EX 3600
PTTL session:alice
DEBUG ADVANCE-TIME 3600000
GET session:alice
DEBUG ADVANCE-TIME 1
GET session:alice
EXISTS session:alice
EOF
)
elapsed_us=$(( ($(date +%s%N) - start) / 1000 ))

# 2027-01-15, any time will do; an hour's TTL; an hour later, at the deadline, the key is
# still there; one millisecond past it, it is gone.
wanted="1800000000000
OK
3600000
1800003600000
token
1800003600001

0"
if [ "$replies" != "$wanted" ]; then
  printf 'manual_clock: got\n%s\nwanted\n%s\n' "$replies" "$wanted" >&2
  exit 1
fi
echo "manual_clock: an hour's TTL checked in ${elapsed_us} us of wall time (one redis-cli run, 8 commands)"
