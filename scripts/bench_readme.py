#!/usr/bin/env python3
"""scripts/bench_readme.py: writes README.md's performance tables from one run of scripts/bench.sh.

    python3 scripts/bench_readme.py RESULTS_DIR [README.md]

Reads RESULTS_DIR/engine.csv (bench_engine: E1 get hit, E2 get miss, E4u set and pexpire of an
existing key, E4n set of new keys; each contender's time over the raw map's, as the median of
the per-repetition ratios), RESULTS_DIR/vs_redis.csv (bench_vs_redis: the store and
redis-server over loopback) and RESULTS_DIR/machine.txt, and replaces what README.md holds
between the lines

    <!-- performance: written by scripts/bench.sh ... -->
    <!-- end of performance -->

with the run's stamp (date, machine, commit) and the two tables. Nothing else in the README
changes; a README without the markers is an error. Standard library only.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import Paired, in_out_args, load_engine, sci  # noqa: E402

BEGIN = "<!-- performance: written by scripts/bench.sh (scripts/bench_readme.py); regenerate, do not edit -->"
END = "<!-- end of performance -->"
KEYS = [("u64", "u64"), ("str", "string")]
SIZES = [10000, 1000000]
# (operation, goal, the store's contender, the peer's, POCO's, whether the raw map's time is shown)
ROWS = [
    ("`get()` hit of a key with a TTL", "E1", "store", "peer", "poco", True),
    ("`get()` miss", "E2", "store", "peer", None, True),
    ("`set()` with a TTL, existing key", "E4u", "store_set", "peer", "poco_update", True),
    ("`pexpire()`, existing key (against the raw update above)", "E4u", "store_pexpire", None, None, False),
    ("`set()` of new keys into an empty store", "E4n", "store", "peer", None, True),
]


def cells(d, goal, key, contender, raw_ns=False):
    """'a / b' over SIZES: the contender's ratio to the raw map, or the raw map's ns."""
    out = []
    for n in SIZES:
        p = Paired(d, goal, key, n)
        if "raw" not in p or (contender is not None and contender not in p):
            return ""
        if raw_ns:
            out.append("%.1f" % p.ns("raw"))
        else:
            r = p.ratio(contender, "raw")
            out.append(("%.2fx" if r < 10 else "%.1fx") % r)
    return " / ".join(out) + (" ns" if raw_ns else "")


def engine_table(d):
    lines = ["| operation | keys (1e4 / 1e6) | raw map | store | two-map peer | POCO |", "|---|---|---|---|---|---|"]
    for label, goal, store, peer, poco, show_raw in ROWS:
        first = True
        for key, key_label in KEYS:
            row = [label if first else "", key_label,
                   cells(d, goal, key, None, raw_ns=True) if show_raw else "",
                   cells(d, goal, key, store),
                   cells(d, goal, key, peer) if peer else "",
                   cells(d, goal, key, poco) if poco else ""]
            if row[3] == "":
                raise SystemExit("bench_readme.py: engine.csv has no %s %s for %s keys" % (goal, store, key))
            lines.append("| " + " | ".join(row) + " |")
            first = False
    return lines


def redis_table(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit("bench_readme.py: %s has no rows" % path)
    names = {"get": "`get()` hit / GET", "set_px": "`set()` with PX, existing key / SET PX"}
    lines = ["| operation | keys | store | redis-server, 64 commands pipelined | redis-server, a round trip each |",
             "|---|---|---|---|---|"]
    for op in ("get", "set_px"):
        first = True
        for r in sorted((r for r in rows if r["op"] == op), key=lambda r: int(r["keys"])):
            store = float(r["store_ns"])
            lines.append("| %s | %s | %.0f ns | %.0fx | %.0fx |" % (
                names[op] if first else "", sci(int(r["keys"])), store, float(r["pipelined_ns"]) / store,
                float(r["round_trip_ns"]) / store))
            first = False
    return lines


def section(res):
    with open(os.path.join(res, "machine.txt")) as f:
        machine = [line.rstrip("\n") for line in f]
    d, meta = load_engine(res)
    reps = meta.get(("settings", "reps"), "?")
    stamp = machine[1] if len(machine) > 1 else "?"
    out = [BEGIN,
           "One run of `bash scripts/bench.sh`, which wrote these tables:",
           "",
           "- machine: %s" % (machine[0] if machine else "?"),
           "- run: %s" % stamp,
           "",
           "Each figure is the operation's time over the raw map's in the same run (`bench_engine`):",
           "`absl::flat_hash_map<K, V>` with the same hash and no expiry at all. The peer is the design a",
           "C++ developer writes by hand (one map of values, one of deadlines, the deadline checked on",
           "read); POCO is `Poco::UniqueExpireCache` (Debian's libpoco-dev). Keys are u64, or strings of",
           "16-24 bytes; medians of %s repetitions, every contender measured in rotation over the same" % reps,
           "random keys. The store runs on a clock that is a plain load (`CachedClock`); `bench_clock`",
           "shows what a timestamp read costs on the machine.",
           ""]
    out += engine_table(d)
    out += ["",
            "The same operations on redis-server over loopback (`bench_vs_redis`, same run: string keys,",
            "16-byte values, each with a TTL; hiredis on one connection), as multiples of the store's own",
            "time in that program:",
            ""]
    out += redis_table(os.path.join(res, "vs_redis.csv"))
    out.append(END)
    return out


def main():
    args = in_out_args(__doc__, "README.md")
    if args is None:
        return 2
    res, readme = args
    with open(readme) as f:
        lines = f.read().split("\n")
    try:
        b = next(i for i, l in enumerate(lines) if l.startswith("<!-- performance: written by scripts/bench.sh"))
        e = lines.index(END, b)
    except (StopIteration, ValueError):
        sys.stderr.write("bench_readme.py: %s has no performance markers\n" % readme)
        return 1
    lines[b:e + 1] = section(res)
    with open(readme, "w") as f:
        f.write("\n".join(lines))
    print("bench_readme.py: wrote the performance tables of %s" % readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
