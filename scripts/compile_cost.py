#!/usr/bin/env python3
"""Compile-time cost of the library to a user's translation unit.

Compiles bench/compile_cost/store_tu.cpp (a Store<string, string>, a
Store<u64, u64> and five calls), store_options_tu.cpp (the same stores built
from Options), include_only.cpp and the baseline absl_tu.cpp (the same unit
over absl::flat_hash_map) with g++ -O2, alternating the four in each round,
and prints each one's median time and its ratio to the baseline, in CPU time
(the compiler's user + system time) and in wall time.
Usage: compile_cost.py [--rounds N] [--cxx g++] [extra flags...]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "bench", "compile_cost")
UNITS = ["absl_tu.cpp", "store_tu.cpp", "store_options_tu.cpp", "include_only.cpp"]


def compile_once(cxx, unit, flags, out):
    cmd = [cxx, "-std=c++17", "-O2", "-c", os.path.join(SRC, unit),
           "-I", os.path.join(ROOT, "include"), "-o", out] + flags
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cxx", default="g++")
    args, flags = parser.parse_known_args()
    times = {u: [] for u in UNITS}  # (cpu, wall) per round
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "unit.o")
        for u in UNITS:  # warm the page cache once
            compile_once(args.cxx, u, flags, out)
        for _ in range(args.rounds):
            for u in UNITS:
                times[u].append(compile_once(args.cxx, u, flags, out))
    # CPU time (user + system of the compiler) is the figure: on a shared machine, time the
    # compiler waits for a core counts in wall time only.
    for k, name in ((0, "cpu"), (1, "wall")):
        base = statistics.median(t[k] for t in times["absl_tu.cpp"])
        for u in UNITS:
            xs = [t[k] for t in times[u]]
            m = statistics.median(xs)
            print(f"{name:4} {u:18} median {m:6.3f} s  {m / base:5.2f}x absl_tu.cpp"
                  f"  (min {min(xs):.3f}, max {max(xs):.3f}, n={args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
