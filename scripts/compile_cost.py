#!/usr/bin/env python3
"""Compile-time cost of the library to a user's translation unit.

Compiles bench/compile_cost/store_tu.cpp (a Store<string, string>, a
Store<u64, u64> and five calls), include_only.cpp and the baseline absl_tu.cpp
(the same unit over absl::flat_hash_map) with g++ -O2, alternating the three
in each round, and prints each one's median wall time and its ratio to the
baseline. Usage: compile_cost.py [--rounds N] [--cxx g++] [extra flags...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "bench", "compile_cost")
UNITS = ["absl_tu.cpp", "store_tu.cpp", "include_only.cpp"]


def compile_once(cxx, unit, flags, out):
    cmd = [cxx, "-std=c++17", "-O2", "-c", os.path.join(SRC, unit),
           "-I", os.path.join(ROOT, "include"), "-o", out] + flags
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cxx", default="g++")
    args, flags = parser.parse_known_args()
    times = {u: [] for u in UNITS}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "unit.o")
        for u in UNITS:  # warm the page cache once
            compile_once(args.cxx, u, flags, out)
        for _ in range(args.rounds):
            for u in UNITS:
                times[u].append(compile_once(args.cxx, u, flags, out))
    base = statistics.median(times["absl_tu.cpp"])
    for u in UNITS:
        m = statistics.median(times[u])
        print(f"{u:18} median {m:6.3f} s  {m / base:5.2f}x absl_tu.cpp"
              f"  (min {min(times[u]):.3f}, max {max(times[u]):.3f}, n={args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
