#!/usr/bin/env python3
"""scripts/plot_replica.py: draws bench_replica's replication lag against the write rate.

    python3 scripts/plot_replica.py RESULTS_DIR/replica_lag.csv [docs/bench/replica.svg]

Reads replica_lag.csv (writes_per_s, seconds, sent, applied, p50_ms, p90_ms, p99_ms, p999_ms,
max_ms: one row per rate), the time from a SET leaving its client for redis-server to the
in-process replica's readers seeing it. One panel, both axes logarithmic: a line per
percentile through the rates, and the goal (p99 <= 10 ms at 50k writes/s) as a dashed line.
Standard library only; the SVG helpers are bench_report.py's.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import COLORS, in_out_args, panel, svg  # noqa: E402

COLUMNS = [("p50_ms", "p50"), ("p90_ms", "p90"), ("p99_ms", "p99"), ("p999_ms", "p99.9"), ("max_ms", "max")]


def main():
    args = in_out_args(__doc__, os.path.join("docs", "bench", "replica.svg"))
    if args is None:
        return 2
    src, dst = args
    with open(src) as f:
        rows = sorted(csv.DictReader(f), key=lambda r: float(r["writes_per_s"]))
    if not rows:
        sys.stderr.write("plot_replica.py: %s has no rows\n" % src)
        return 1
    series = []
    for i, (col, label) in enumerate(COLUMNS):
        series.append((label, COLORS[i % len(COLORS)], False,
                       [(float(r["writes_per_s"]), float(r[col])) for r in rows]))
    rates = [float(r["writes_per_s"]) for r in rows]
    series.append(("goal: p99 <= 10 ms", "#777", True, [(rates[0], 10.0), (rates[-1], 10.0)]))
    w, h = 640, 400
    e = panel(0, 0, w, h, "replication lag: SET on redis-server to the replica's readers", series, xlog=True,
              ylog=True, xlabel="writes per second (one client, pipelined each millisecond)", ylabel="lag, ms",
              legend="tr")
    complete = all(r["applied"] == r["sent"] for r in rows)
    caption = "bench_replica: %s s per rate; SETs applied / sent: %s%s" % (
        rows[0]["seconds"], ", ".join("%s/%s" % (r["applied"], r["sent"]) for r in rows),
        " (all of them)" if complete else "")
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    with open(dst, "w") as f:
        f.write(svg(w, h, e, caption))
    print("wrote %s" % dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
