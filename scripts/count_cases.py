#!/usr/bin/env python3
"""scripts/count_cases.py: the Catch2 test cases behind ctest's one-entry-per-program tests.

    count_cases.py BUILD_DIR

With EXPIRING_TEST_PER_CASE=OFF (tests/CMakeLists.txt) a unit-suite program is one ctest entry
named "<prefix>[all] <program>" that runs all its test cases. This reads the outputs ctest
keeps in BUILD_DIR/Testing/Temporary/LastTest.log and prints "<entries> <cases> <skipped>":
the number of such entries, the test cases they ran (Catch2's summary line), and how many of
those ended with EXPIRING_SKIP (tests/catch.hpp: a "SKIPPED: " warning, which Catch2 v2 prints
for passing cases too). A program entry without a summary line is an error (exit 1).
"""
import re
import sys


def main() -> int:
    log = f"{sys.argv[1]}/Testing/Temporary/LastTest.log"
    try:
        text = open(log, encoding="utf-8", errors="replace").read()
    except OSError as e:
        print(f"count_cases.py: {e}", file=sys.stderr)
        return 1
    # Each test's record: "N/M Test: <name>" ... "Output:" ... "<end of output>".
    entries = cases = skipped = 0
    for m in re.finditer(r"^\d+/\d+ Test: ([^\n]*)\n(.*?)^<end of output>", text, re.M | re.S):
        name, body = m.group(1), m.group(2)
        if "[all] " not in name:
            continue
        entries += 1
        summary = re.findall(r"(?:All tests passed \(\d+ assertions? in (\d+) test cases?\))|"
                             r"(?:^test cases: +(\d+) )", body, re.M)
        if not summary:
            print(f"count_cases.py: no Catch2 summary in the output of '{name}'", file=sys.stderr)
            return 1
        last = summary[-1]
        cases += int(last[0] or last[1])
        skipped += len(re.findall(r"^\s*SKIPPED: ", body, re.M))
    print(entries, cases, skipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
