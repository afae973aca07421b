#!/usr/bin/env python3
"""scripts/slowest_tus.py: the slowest steps of a Ninja build, from its .ninja_log.

    python3 scripts/slowest_tus.py BUILD_DIR [-n 10]

Prints the N longest compile steps (translation units, precompiled headers, unity batches;
links with --all) of the last build recorded in BUILD_DIR/.ninja_log, in seconds, then the
count and the summed seconds of the steps (CPU-time-like: the sum over parallel jobs). A step
rebuilt several times counts once, with its last duration. Standard library only.
"""
import argparse
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("-n", type=int, default=10, help="how many steps to print (default 10)")
    ap.add_argument("--all", action="store_true", help="links and other steps too, not compiles only")
    args = ap.parse_args()
    path = os.path.join(args.build_dir, ".ninja_log")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"slowest_tus.py: {e}", file=sys.stderr)
        return 1
    steps = {}  # output -> (seconds, start)
    for line in lines:
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 4:
            continue
        try:
            start, end = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        steps[parts[3]] = ((end - start) / 1000.0, start)
    compiles = (".o", ".obj", ".gch", ".pch")
    rows = [(sec, out) for out, (sec, _) in steps.items()
            if args.all or out.endswith(compiles)]
    rows.sort(reverse=True)
    print(f"slowest {min(args.n, len(rows))} of {len(rows)} steps in {path}:")
    for sec, out in rows[: args.n]:
        print(f"  {sec:7.1f} s  {out}")
    print(f"  total {sum(s for s, _ in rows):.1f} s over {len(rows)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
