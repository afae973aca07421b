#!/usr/bin/env python3
"""scripts/plot_concurrent.py: draws bench_concurrent's throughput against thread count.

    python3 scripts/plot_concurrent.py RESULTS_DIR/concurrent.csv [docs/bench/concurrent.svg]

Reads concurrent.csv (mix,keys,threads,contender,rep,mops) and, if it is beside it,
concurrent_meta.csv (key,value: mode, clock, hardware_concurrency, ...) for the caption. One
panel per (mix, keys), one line per contender through the median Mops/s over the repetitions
at each thread count; the unlocked store, measured at 1 thread only, is drawn as a dashed
horizontal line at its value (the baseline of the goals), and a grey vertical line marks the
hardware thread count (beyond it the threads are oversubscribed). The "loop" contender (the
thread loop with no map, tens of times faster) is left out of the plot: it is in the table.
Standard library only; the SVG helpers are bench_report.py's.
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import COLORS, in_out_args, panel, size_label, svg  # noqa: E402

ORDER = ["concurrent", "locked", "mutex", "tbb", "cuckoo", "unlocked"]
LABEL = {
    "concurrent": "ConcurrentStore",
    "locked": "ConcurrentStore, reads locked",
    "mutex": "std::mutex + Store",
    "tbb": "tbb::concurrent_hash_map (no TTL)",
    "cuckoo": "libcuckoo cuckoohash_map (no TTL)",
    "unlocked": "Store, no lock, 1 thread",
}
MIX_ORDER = ["95/5", "50/50"]


def load(path):
    med = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            med[(r["mix"], int(r["keys"]), int(r["threads"]), r["contender"])].append(float(r["mops"]))
    return {k: statistics.median(v) for k, v in med.items()}


def load_meta(path):
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                meta[r["key"]] = r["value"]
    return meta


def main():
    args = in_out_args(__doc__, os.path.join("docs", "bench", "concurrent.svg"))
    if args is None:
        return 2
    src, dst = args
    data = load(src)
    meta = load_meta(os.path.join(os.path.dirname(src), "concurrent_meta.csv"))
    hw = int(meta.get("hardware_concurrency", "0") or 0)

    mixes = sorted({k[0] for k in data}, key=lambda m: (MIX_ORDER.index(m) if m in MIX_ORDER else 99, m))
    sizes = sorted({k[1] for k in data})
    pw, ph = 570, 360
    e = []
    for row, mix in enumerate(mixes):
        for col, n in enumerate(sizes):
            threads = sorted({k[2] for k in data if k[0] == mix and k[1] == n})
            if not threads:
                continue
            x_lo, x_hi = threads[0], threads[-1]
            series = []
            for i, c in enumerate(ORDER):
                pts = [(t, data[(mix, n, t, c)]) for t in threads if (mix, n, t, c) in data]
                if not pts:
                    continue
                color = COLORS[i % len(COLORS)]
                if c == "unlocked":
                    y = pts[0][1]
                    series.append((LABEL[c], color, True, [(x_lo, y), (x_hi, y)]))
                else:
                    series.append((LABEL[c], color, False, pts))
            title = "%s get/set, %s keys (u64)" % (mix, size_label(n))
            els = panel(col * pw, row * ph, pw, ph, title, series, xlabel="threads", ylabel="Mops/s (total)",
                        ymin=0, legend="tr")
            e += els
            if hw and x_lo < hw < x_hi:
                # panel()'s geometry: margins L=62, R=12, T=28, B=44; linear x.
                L, R, T, B = 62, 12, 28, 44
                x = col * pw + L + (hw - x_lo) / (x_hi - x_lo) * (pw - L - R)
                e.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999" stroke-dasharray="3,3"/>'
                         % (x, x, row * ph + T, row * ph + ph - B))
                e.append('<text x="%.1f" y="%d" font-size="10" fill="#777">%d hw threads</text>'
                         % (x + 3, row * ph + ph - B - 4, hw))
    caption = "bench_concurrent, %s mode; clock %s; %s hardware threads; median of %s repetition(s) of %s s" % (
        meta.get("mode", "?"), meta.get("clock", "?"), meta.get("hardware_concurrency", "?"),
        meta.get("reps", "?"), meta.get("seconds", "?"))
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    with open(dst, "w") as f:
        f.write(svg(pw * max(1, len(sizes)), ph * max(1, len(mixes)), e, caption))
    print("wrote %s" % dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
