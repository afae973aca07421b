#!/usr/bin/env python3
"""scripts/bench_report.py: turns the bench results into one markdown table and two SVG plots.

    python3 scripts/bench_report.py RESULTS_DIR DOCS_DIR

RESULTS_DIR holds what scripts/bench.sh wrote: ops.json (Google Benchmark), memory.csv,
memory_summary.csv, reclaim_summary.csv, reclaim_series.csv, machine.txt. Writes
DOCS_DIR/table.md, DOCS_DIR/reclaim.svg and DOCS_DIR/memory.svg, and prints the table.
Standard library only.
"""
import csv
import json
import math
import os
import statistics
import sys
from collections import defaultdict

POLICIES = ["sampled", "time_ordered"]
POLICY_LABEL = {"sampled": "SampledExpiry", "time_ordered": "TimeOrderedExpiry"}


def size_label(n):
    n = int(n)
    e = int(round(math.log10(n))) if n > 0 else 0
    return "1e%d" % e if 10 ** e == n else str(n)


# ---- inputs -----------------------------------------------------------------------------


def load_ops(path):
    """(op, key, n, policy) -> {contender: median ns per op} from bench_ops's paired benchmarks."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = json.load(f)
    acc = defaultdict(lambda: defaultdict(list))
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        p = b["name"].split("/")
        if len(p) < 4 or not p[0].startswith("pair_"):
            continue
        k = (p[0][5:], p[1], int(p[2]), p[3])
        for field, v in b.items():
            if field.endswith("_ns") and isinstance(v, (int, float)):
                acc[k][field[:-3]].append(float(v))
    return {k: {c: sorted(v)[len(v) // 2] for c, v in d.items()} for k, d in acc.items()}


def load_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


# ---- the table --------------------------------------------------------------------------


class Table:
    def __init__(self):
        self.rows = []

    def add(self, goal, target, measured, ok):
        verdict = "info" if ok is None else ("**pass**" if ok else "**FAIL**")
        self.rows.append((goal, target, measured, verdict))

    def markdown(self):
        lines = ["| Goal | Target | Measured | Result |", "|---|---|---|---|"]
        for r in self.rows:
            lines.append("| " + " | ".join(r) + " |")
        return "\n".join(lines)


def fx(x):
    return "%.2fx" % x


def ops_sizes(ops, op, key, pol):
    return sorted(n for (o, k, n, p) in ops if o == op and k == key and p == pol)


def g1_g2_g7(ops, t):
    keys = [k for k in ("u64", "str") if any(o == "get" and kk == k for (o, kk, n, p) in ops)]
    for key in keys:
        for pol in POLICIES:
            sizes = ops_sizes(ops, "get", key, pol)
            if not sizes:
                continue
            # G1
            parts, sysparts, peerparts, ok = [], [], [], True
            for n in sizes:
                m = ops[("get", key, n, pol)]
                r = m["store"] / m["raw"]
                ok = ok and r <= 1.25
                parts.append("%s: %s (%.1f vs %.1f ns)" % (size_label(n), fx(r), m["store"], m["raw"]))
                sysparts.append(fx(m["store_system"] / m["raw"]))
                peerparts.append(fx(m["peer"] / m["raw"]))
            t.add("G1 get(), %s keys, %s" % (key, POLICY_LABEL[pol]), "≤ 1.25x raw find",
                  " · ".join(parts) + "; with SystemClock: %s; peer: %s" % (" / ".join(sysparts),
                                                                           " / ".join(peerparts)), ok)
            # G2
            for label, op, field, limit, rawname in (
                    ("set() with TTL (new key)", "fill", "store", 1.8, "insert"),
                    ("TTL update (set() on a volatile key)", "update", "store", 1.5, "insert_or_assign"),
                    ("set() without TTL (new key)", "fill", "store_nottl", 1.1, "insert")):
                parts, ok, extra = [], True, []
                for n in ops_sizes(ops, op, key, pol):
                    m = ops[(op, key, n, pol)]
                    r = m[field] / m["raw"]
                    ok = ok and r <= limit
                    parts.append("%s: %s (%.1f vs %.1f ns)" % (size_label(n), fx(r), m[field], m["raw"]))
                    if field == "store":
                        extra.append(fx(m["store_system"] / m["raw"]))
                if not parts:
                    continue
                more = "; with SystemClock: %s" % " / ".join(extra) if extra else ""
                if op == "update":
                    more += "; pexpire() %s; set() without TTL on a persistent key %s" % (
                        " / ".join(fx(ops[(op, key, n, pol)]["pexpire"] / ops[(op, key, n, pol)]["raw"])
                                   for n in ops_sizes(ops, op, key, pol)),
                        " / ".join(fx(ops[(op, key, n, pol)]["overwrite"] / ops[(op, key, n, pol)]["raw"])
                                   for n in ops_sizes(ops, op, key, pol)))
                t.add("G2 %s, %s keys, %s" % (label, key, POLICY_LABEL[pol]),
                      "≤ %.1fx raw %s" % (limit, rawname), " · ".join(parts) + more, ok)
    # G7 (get): ratio of ratios, largest size vs 1e4
    for key in keys:
        for pol in POLICIES:
            sizes = ops_sizes(ops, "get", key, pol)
            if len(sizes) < 2:
                continue
            lo, hi = ops[("get", key, sizes[0], pol)], ops[("get", key, sizes[-1], pol)]
            rr = (hi["store"] / lo["store"]) / (hi["raw"] / lo["raw"])
            t.add("G7 get() %s vs %s, %s keys, %s" % (size_label(sizes[-1]), size_label(sizes[0]), key,
                                                      POLICY_LABEL[pol]),
                  "slowdown ≤ 1.1x the raw map's",
                  "%s (store %.1f→%.1f ns = %s; raw %.1f→%.1f ns = %s)" % (
                      fx(rr), lo["store"], hi["store"], fx(hi["store"] / lo["store"]), lo["raw"], hi["raw"],
                      fx(hi["raw"] / lo["raw"])), rr <= 1.1)


def g3(mem, t):
    for key in ("u64", "str"):
        rows = [r for r in mem if r["key"] == key]
        sizes = sorted({int(r["n"]) for r in rows})
        for pol in POLICIES:
            mine = {int(r["n"]): r for r in rows if r["contender"] == "store" and r["policy"] == pol}
            if not mine:
                continue
            peer = {int(r["n"]): r for r in rows if r["contender"] == "peer"}
            parts, ok1 = [], True
            parts2, ok2 = [], True
            for n in sizes:
                r = mine.get(n)
                if r is None:
                    continue
                e = float(r["expiry_bytes_per_key"])
                emb = float(r.get("embedded_expiry_bytes_per_key") or 0)
                if n == 1000000 or len(sizes) == 1:
                    ok1 = ok1 and e <= 16
                    ok2 = ok2 and float(r["ratio_ttl_vs_raw"]) <= 1.35
                s = "%s: %.1f B" % (size_label(n), e)
                if emb:
                    s += " (+%.1f B of deadline fields every key carries)" % emb
                if n in peer:
                    s += ", peer %.1f B" % float(peer[n]["expiry_bytes_per_key"])
                parts.append(s)
                parts2.append("%s: %s (%.1f vs %.1f B/key; no TTL %s)" % (
                    size_label(n), fx(float(r["ratio_ttl_vs_raw"])), float(r["bytes_per_key_ttl"]),
                    float(r["raw_bytes_per_key"]), fx(float(r["ratio_nottl_vs_raw"]))))
            t.add("G3 expiry bytes per volatile key, %s keys, %s" % (key, POLICY_LABEL[pol]),
                  "≤ 16 B at 1e6 (Redis 7.0.15: 40.4 B)", " · ".join(parts), ok1)
            t.add("G3 total bytes, all keys volatile, %s keys, %s" % (key, POLICY_LABEL[pol]),
                  "≤ 1.35x raw map at 1e6", " · ".join(parts2), ok2)


def reclaim_index(rows):
    d = defaultdict(dict)
    for r in rows:
        d[(r["goal"], r["case"], r["policy"], r["preset"])][r["metric"]] = float(r["value"])
    return d


def g4_to_g7(rec, t):
    d = reclaim_index(rec)
    for pol in POLICIES:
        for (goal, case, p, preset), m in sorted(d.items()):
            if goal != "G4" or p != pol:
                continue
            n = case.split("/")[1]
            t99, bound = m.get("ticks_to_99", 0), m.get("ticks_bound", 0)
            ok = 0 < t99 <= bound
            t.add("G4 mass expiry of %s %s keys, %s: ticks" % (size_label(n), case.split("/")[0], POLICY_LABEL[pol]),
                  "≥ 99%% in ≤ ceil(1.1 N/B) = %d ticks (B = %d keys/tick)" % (bound, m.get("budget_keys_per_tick", 0)),
                  "%d ticks (%.2fx the bound; 100%% at %d)" % (t99, t99 / bound if bound else 0, m.get("ticks_to_100", 0)),
                  ok)
            rn, dn = m.get("reclaim_ns_per_key", 0), m.get("del_ns_per_key", 1)
            t.add("G4 CPU per reclaimed key, %s %s keys, %s" % (size_label(n), case.split("/")[0], POLICY_LABEL[pol]),
                  "≤ 1.5x del()", "%s (%.0f vs %.0f ns)" % (fx(rn / dn), rn, dn), rn / dn <= 1.5)
        for (goal, case, p, preset), m in sorted(d.items(), key=lambda kv: kv[0][3] != "default"):
            if goal != "G5" or p != pol:
                continue
            t99, run = m.get("ticks_to_99", 0), m.get("ticks_run", 0)
            left = m.get("left_fraction", 0)
            if preset == "redis_exact":
                if t99:
                    meas = "99%% after %d tick(s) (%.1f s at hz 10)" % (t99, t99 / 10)
                else:
                    meas = "%.0f%% of the due keys still stored after %d ticks (%.0f min at hz 10)" % (
                        100 * left, run, run / 600)
                t.add("G5 1e4 due among 1e6 not due, %s, Options::redis_exact()" % POLICY_LABEL[pol],
                      "shown beside (Redis leaves them for minutes)", meas, None)
            else:
                bound = m.get("bound_ticks", 100)
                t.add("G5 1e4 due among 1e6 not due, %s, default Options" % POLICY_LABEL[pol],
                      "≥ 99%% within full_pass_ticks = %d ticks" % bound,
                      "%d tick(s) (100%% at %d; %.0f µs per tick)" % (t99, m.get("ticks_to_100", 0),
                                                                m.get("tick_cpu_us_mean", 0)),
                      0 < t99 <= bound)
        # G6
        parts, ok = [], True
        for (goal, case, p, preset), m in sorted(d.items()):
            if goal != "G6a" or p != pol:
                continue
            b, c, w = m["budget_us"], m["max_tick_cpu_us"], m["max_tick_wall_us"]
            lim = 1.1 * b + 50
            ok = ok and c <= lim
            parts.append("%s: %.0f µs of %.0f (limit %.0f; wall %.0f µs; %d of %d ticks over)" % (
                case.split("/")[2], c, b, lim, w, m.get("ticks_over_limit", 0), m.get("ticks", 0)))
        if parts:
            t.add("G6 longest tick() of a 1e6-key drain (thread CPU, best of 3), %s" % POLICY_LABEL[pol],
                  "≤ 1.1x budget + 50 µs", " · ".join(parts), ok)
        for (goal, case, p, preset), m in sorted(d.items()):
            if goal == "G6b" and p == pol:
                s, dr = m["get_p999_steady_ns"], m["get_p999_drain_ns"]
                t.add("G6 p99.9 get() between ticks while 1e6 keys drain, %s" % POLICY_LABEL[pol],
                      "≤ 1.5x steady state", "%s (%.0f vs %.0f ns; p99 %.0f vs %.0f ns; p50 %.0f vs %.0f ns)" % (
                          fx(dr / s), dr, s, m.get("get_p99_drain_ns", 0), m.get("get_p99_steady_ns", 0),
                          m.get("get_p50_drain_ns", 0), m.get("get_p50_steady_ns", 0)),
                      dr / s <= 1.5)
            if goal == "G6c" and p == pol:
                a, nrm = m["max_set_after_drain_us"], m["max_set_normal_us"]
                t.add("G6 largest single set() after a drain, %s" % POLICY_LABEL[pol],
                      "no whole-table rehash: ≤ 1.5x the largest in normal growth",
                      "%s (%.0f vs %.0f µs; store %.0f MB before the drain, %.0f MB after)" % (
                          fx(a / nrm), a, nrm, m.get("store_mb_before_drain", 0), m.get("store_mb_after_drain", 0)),
                      a / nrm <= 1.5)
        # G7 reclaim
        g7 = sorted(((int(case.split("/")[1]), m) for (goal, case, p, preset), m in d.items()
                     if goal == "G7" and p == pol), key=lambda x: x[0])
        if len(g7) >= 2:
            (n0, m0), (n1, m1) = g7[0], g7[-1]
            growth = m1["reclaim_ns_per_key"] / m0["reclaim_ns_per_key"]
            dgrowth = m1["del_ns_per_key"] / m0["del_ns_per_key"]
            series = " → ".join("%.0f" % m["reclaim_ns_per_key"] for _, m in g7)
            dseries = " → ".join("%.0f" % m["del_ns_per_key"] for _, m in g7)
            t.add("G7 reclaim cost per key %s → %s, u64, %s" % (size_label(n0), size_label(n1), POLICY_LABEL[pol]),
                  "flat: growth ≤ 1.1x del()'s growth",
                  "%s (reclaim %s ns = %s; del %s ns = %s)" % (fx(growth / dgrowth), series, fx(growth), dseries,
                                                              fx(dgrowth)),
                  growth / dgrowth <= 1.1)


# ---- SVG ---------------------------------------------------------------------------------

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 2.5, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + step * 1e-9:
        out.append(t)
        t += step
    return out


def fmt_num(v):
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 and a == int(a) and math.log10(a) == int(math.log10(a)):
        return "1e%d" % int(math.log10(a))
    if a >= 1e6:
        return "%gM" % (v / 1e6)
    if a >= 1e4:
        return "%gk" % (v / 1e3)
    return "%g" % v


def panel(x0, y0, w, h, title, series, xlog=False, xlabel="", ylabel="", ymin=None, ymax=None, legend="tr"):
    """series: [(label, color, dashed, [(x, y)])]. Returns SVG elements."""
    pts = [p for s in series for p in s[3]]
    if not pts:
        return []
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    if xlog:
        xs = [x for x in xs if x > 0]
    xmin, xmax = min(xs), max(xs)
    lo = min(ys) if ymin is None else ymin
    hi = max(ys) if ymax is None else ymax
    hi = hi + (hi - lo) * 0.05 if hi > lo else lo + 1
    L, R, T, B = 62, 12, 28, 44  # margins
    pw, ph = w - L - R, h - T - B

    def X(x):
        if xlog:
            a, b = math.log10(xmin), math.log10(xmax)
            return x0 + L + (math.log10(max(x, xmin)) - a) / ((b - a) or 1) * pw
        return x0 + L + (x - xmin) / ((xmax - xmin) or 1) * pw

    def Y(y):
        return y0 + T + ph - (y - lo) / ((hi - lo) or 1) * ph

    e = ['<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>' % (x0 + L, y0 + 18, esc(title)),
         '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>' % (x0 + L, y0 + T, pw, ph)]
    # y ticks
    for v in nice_ticks(lo, hi):
        if v < lo or v > hi:
            continue
        y = Y(v)
        e.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (x0 + L, x0 + L + pw, y, y))
        e.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>' % (x0 + L - 4, y + 4, fmt_num(v)))
    # x ticks
    if xlog:
        xt = [10 ** k for k in range(int(math.floor(math.log10(xmin))), int(math.ceil(math.log10(xmax))) + 1)
              if xmin <= 10 ** k <= xmax]
    else:
        xt = [v for v in nice_ticks(xmin, xmax) if xmin <= v <= xmax]
    for v in xt:
        x = X(v)
        e.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>' % (x, x, y0 + T, y0 + T + ph))
        e.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>' % (x, y0 + T + ph + 15,
                                                                                         fmt_num(v)))
    e.append('<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%s</text>' % (x0 + L + pw / 2, y0 + h - 8,
                                                                                     esc(xlabel)))
    e.append('<text x="%d" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 %d %.1f)">%s</text>'
             % (x0 + 14, y0 + T + ph / 2, x0 + 14, y0 + T + ph / 2, esc(ylabel)))
    # lines, then the legend in a white box (top right, or bottom right with legend="br")
    shown = []
    for idx, (label, color, dashed, data) in enumerate(series):
        data = [(x, y) for x, y in data if (x > 0 or not xlog)]
        if not data:
            continue
        dash = ' stroke-dasharray="%s"' % ("6,4" if idx % 2 else "2,3") if dashed else ""
        d = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", X(x), Y(y)) for i, (x, y) in enumerate(data))
        e.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (d, color, dash))
        shown.append((label, color, dash))
    if shown:
        lw = 34 + 6.2 * max(len(l) for l, _, _ in shown)
        lh = 15 * len(shown) + 8
        lx = x0 + L + pw - lw - 6
        ly0 = y0 + T + 6 if legend == "tr" else y0 + T + ph - lh - 6
        if legend == "c":
            lx, ly0 = x0 + L + (pw - lw) / 2, y0 + T + (ph - lh) / 2
        e.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="white" fill-opacity="0.85" stroke="#bbb"/>'
                 % (lx, ly0, lw, lh))
        ly = ly0 + 16
        for label, color, dash in shown:
            e.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>' % (
                lx + 6, lx + 28, ly - 4, ly - 4, color, dash))
            e.append('<text x="%.1f" y="%.1f" font-size="11">%s</text>' % (lx + 32, ly, esc(label)))
            ly += 15
    return e


def svg(w, h, elements, caption):
    return "\n".join(['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
                      % (w, h + 20), '<rect width="100%" height="100%" fill="white"/>'] + elements +
                     ['<text x="8" y="%d" font-size="11" fill="#555">%s</text>' % (h + 12, esc(caption)), "</svg>"])


def reclaim_svg(series_rows, caption):
    by = defaultdict(list)
    for r in series_rows:
        by[(r["experiment"], r["key"], r["policy"], r["preset"])].append((int(r["tick"]), int(r["left"])))
    g5, g4 = [], []
    ci = 0
    for (exp, key, pol, preset), pts in sorted(by.items()):
        pts.sort()
        label = "%s, %s" % (POLICY_LABEL.get(pol, pol), "redis_exact()" if preset == "redis_exact" else "default")
        if exp == "g5":
            # log x axis: plot tick+1
            g5.append((label, COLORS[ci % len(COLORS)], pol == "time_ordered", [(t + 1, v) for t, v in pts]))
            ci += 1
        elif exp == "g4":
            step = max(1, len(pts) // 400)
            g4.append(("%s (%s keys)" % (POLICY_LABEL.get(pol, pol), key), COLORS[(len(g4) * 2) % len(COLORS)],
                       False, pts[::step] + [pts[-1]]))
    e = panel(0, 0, 620, 380, "G5: due keys left (1e4 due among 1e6 not due)", g5, xlog=True,
              xlabel="tick + 1 (hz 10: 10 ticks = 1 s)", ylabel="due keys still stored", ymin=0, legend="br")
    e += panel(620, 0, 520, 380, "G4: 1e6 keys expired at once, 320 keys of work per tick", g4,
               xlabel="tick", ylabel="expired keys still stored", ymin=0, legend="c")
    return svg(1140, 380, e, caption)


def memory_svg(rows, caption):
    e = []
    for i, key in enumerate(("u64", "str")):
        series = []
        spec = [("raw", "-", "0", "raw absl::flat_hash_map", COLORS[0], False),
                ("peer", "-", "1", "peer: value map + deadline map", COLORS[1], False),
                ("store", "sampled", "1", "store, SampledExpiry, TTL", COLORS[2], False),
                ("store", "sampled", "0", "store, SampledExpiry, no TTL", COLORS[2], True),
                ("store", "time_ordered", "1", "store, TimeOrderedExpiry, TTL", COLORS[3], False),
                ("store", "time_ordered", "0", "store, TimeOrderedExpiry, no TTL", COLORS[3], True)]
        for c, p, ttl, label, color, dashed in spec:
            pts = sorted((int(r["n"]), float(r["bytes_per_key"])) for r in rows
                         if r["key"] == key and r["contender"] == c and r["policy"] == p and r["ttl"] == ttl)
            if pts:
                series.append((label, color, dashed, pts))
        title = "bytes per key, %s keys (8-byte values)" % ("uint64_t" if key == "u64" else "std::string 16-24 B")
        e += panel(i * 570, 0, 570, 400, title, series, xlog=True, xlabel="keys in the table",
                   ylabel="bytes per key (allocator)", ymin=0, legend="br")
    return svg(1140, 400, e, caption)


# ---- main --------------------------------------------------------------------------------


def cache_features(res):
    """Markdown for the cache features (issue 5): what they cost get() (get_cost.csv, the two
    builds of bench_get_cost run alternately) and bench_cache's tables (cache.txt)."""
    md = []
    rows = load_csv(os.path.join(res, "get_cost.csv"))
    if rows:
        by = {(r["config"], r["key"], int(r["keys"])): r for r in rows}
        md.append("### Cache features: what they cost `get()`")
        md.append("")
        md.append("`bench_get_cost`: `get()` hits against the same store with the LRU/LFU read hook compiled "
                  "out, in the same process, in rotation (batches of 256, medians; three pairs per row, built "
                  "in alternating order; the row is the median ratio). `a/a` is the baseline against itself: "
                  "the method's noise floor. Target for the features unused: within 2% of the baseline.")
        md.append("")
        md.append("| keys | a/a (noise) | features unused | lazy free + jitter + soft TTL on | allkeys-lru on | allkeys-lfu on |")
        md.append("|---|---|---|---|---|---|")
        for key in ("u64", "str"):
            for n in sorted({k[2] for k in by if k[1] == key}):
                def cell(cfg):
                    r = by.get((cfg, key, n))
                    return "%.3fx (%s vs %s ns)" % (float(r["ratio"]), r["subject_ns"], r["baseline_ns"]) if r else "-"
                off = by.get(("off", key, n))
                verdict = ("pass" if float(off["ratio"]) <= 1.02 else "**FAIL**") if off else "-"
                md.append("| %s %s | %s | %s %s | %s | %s | %s |" % (
                    key, size_label(n), cell("a/a"), cell("off"), verdict, cell("lazy+jit"), cell("lru"), cell("lfu")))
        md.append("")
    cp = os.path.join(res, "cache.txt")
    if os.path.exists(cp):
        with open(cp) as f:
            md.append("### Cache features: hit ratio and lazy free (`bench_cache`)")
            md.append("")
            md.append(f.read().strip())
            md.append("")
    return md


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    res, docs = sys.argv[1], sys.argv[2]
    os.makedirs(docs, exist_ok=True)
    ops = load_ops(os.path.join(res, "ops.json"))
    mem = load_csv(os.path.join(res, "memory_summary.csv"))
    memall = load_csv(os.path.join(res, "memory.csv"))
    rec = load_csv(os.path.join(res, "reclaim_summary.csv"))
    series = load_csv(os.path.join(res, "reclaim_series.csv"))
    machine = ""
    mp = os.path.join(res, "machine.txt")
    if os.path.exists(mp):
        with open(mp) as f:
            machine = f.read().strip()

    t = Table()
    g1_g2_g7(ops, t)
    g3(mem, t)
    g4_to_g7(rec, t)
    order = ["G1", "G2", "G3", "G4", "G5", "G6", "G7"]
    t.rows.sort(key=lambda r: order.index(r[0][:2]) if r[0][:2] in order else 99)

    md = []
    md.append("<!-- generated by scripts/bench.sh; do not edit -->")
    md.append("Machine: " + machine.replace("\n", "; ") if machine else "Machine: (unknown)")
    md.append("")
    md.append(t.markdown())
    md.append("")
    md.append("G1/G2/G7-get ratios are paired: the contenders run in rotation on batches of 256 operations "
              "(fills: whole tables, in thread CPU time) and each reports its median, against a baseline with "
              "the same hash (`expiring::Hash<K>`) and 8-byte values. Store figures read a cached clock (one "
              "load, as Redis's `server.mstime`); the SystemClock figures add one `clock_gettime` per "
              "operation. Memory is counted with `malloc_usable_size` on every live block. G6 tick and set() "
              "maxima are thread CPU time (the machine is shared; wall time includes preemption).")
    md.append("")
    md.extend(cache_features(res))
    text = "\n".join(md) + "\n"
    with open(os.path.join(docs, "table.md"), "w") as f:
        f.write(text)
    caption = machine.split("\n")[0] if machine else ""
    if series:
        with open(os.path.join(docs, "reclaim.svg"), "w") as f:
            f.write(reclaim_svg(series, caption))
    if memall:
        with open(os.path.join(docs, "memory.svg"), "w") as f:
            f.write(memory_svg(memall, caption))
    print(text)
    fails = sum(1 for r in t.rows if "FAIL" in r[3])
    print("%d rows, %d pass, %d fail" % (len(t.rows), sum(1 for r in t.rows if "pass" in r[3]), fails))
    return 0


if __name__ == "__main__":
    sys.exit(main())
