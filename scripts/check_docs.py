#!/usr/bin/env python3
"""scripts/check_docs.py: the project's references to its semantics document must resolve.

The code, tests, examples, benchmarks and README cite docs/semantics.md by decision (D4),
section (B §2.1, §5) and catalogue case (case 150). This check fails when
  * a citation names a decision, section or case that docs/semantics.md does not have, or
  * anything still cites a document that is not part of the repository (SPEC.md, DESIGN.md,
    "SPEC D4", "DESIGN §5", ../shared/).
Usage: check_docs.py --root <repository> [--self-test]
"""
import argparse
import os
import re
import sys

SCANNED_DIRS = ("include", "server", "tests", "examples", "bench", "scripts", "cmake", "docs")
SCANNED_FILES = ("README.md", "CHANGELOG.md", "CMakeLists.txt")
EXTENSIONS = (".hpp", ".h", ".cpp", ".md", ".txt", ".cmake", ".py", ".sh")

# Citations of documents the repository does not carry.
FOREIGN = re.compile(r"\bSPEC(?:\.md|\s+(?:D\d+|[AB]\b|§))|\bDESIGN(?:\.md|\s+§)|\.\./shared/")
# semantics.md D4, semantics.md Part A D4, (semantics.md B §2.1), semantics.md §5, case(s) 150
CITE_D = re.compile(r"semantics\.md(?: Part A)?,? (D\d+)")
CITE_SECTION = re.compile(r"semantics\.md(?: Part)? ?B? §(\d+(?:\.\d+)?)")
CITE_CASE = re.compile(r"semantics\.md(?: B §5 [A-Z])? cases? (\d+)")
# In the README, a decision is cited bare: "(D14)", "D1-D17".
README_D = re.compile(r"\bD(\d+)\b")


def anchors(semantics):
    decisions = set(re.findall(r"^### (D\d+)\.", semantics, re.M))
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", semantics, re.M))
    cases = set(re.findall(r"^\| *(\d+) *\|", semantics, re.M))
    return decisions, sections, cases


def files(root):
    for name in SCANNED_FILES:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            yield path
    for d in SCANNED_DIRS:
        for base, dirs, names in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "build"]
            for name in sorted(names):
                if name.endswith(EXTENSIONS):
                    yield os.path.join(base, name)


def check_text(rel, text, decisions, sections, cases):
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (rel, n)
        if FOREIGN.search(line) and not rel.endswith("check_docs.py"):
            problems.append("%s: cites a document that is not in the repository: %s" % (where, line.strip()))
        for d in CITE_D.findall(line):
            if d not in decisions:
                problems.append("%s: docs/semantics.md has no decision %s" % (where, d))
        for s in CITE_SECTION.findall(line):
            if s not in sections:
                problems.append("%s: docs/semantics.md has no section %s" % (where, s))
        for c in CITE_CASE.findall(line):
            if c not in cases:
                problems.append("%s: docs/semantics.md has no catalogue case %s" % (where, c))
        if rel == "README.md":
            for d in README_D.findall(line):
                if "D" + d not in decisions:
                    problems.append("%s: README cites D%s, which docs/semantics.md does not have" % (where, d))
    return problems


def self_test():
    decisions, sections, cases = anchors("### D1. a\n### D2. b\n## 2. Commands\n### 2.1 EXPIRE\n| 7 | x |\n")
    ok = check_text("a.hpp", "// semantics.md D2, semantics.md B §2.1, semantics.md case 7", decisions, sections, cases)
    bad = check_text("a.hpp", "// SPEC D4; semantics.md D3; semantics.md B §2.2; semantics.md case 8; DESIGN §5",
                     decisions, sections, cases)
    readme = check_text("README.md", "decisions (D1-D2), and (D9)", decisions, sections, cases)
    assert ok == [], ok
    assert len(bad) == 4, bad  # one line citing two foreign documents is one problem
    assert len(readme) == 1 and "D9" in readme[0], readme
    print("check_docs self-test: ok")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    with open(os.path.join(root, "docs", "semantics.md"), encoding="utf-8") as f:
        decisions, sections, cases = anchors(f.read())
    problems, count, cited = [], 0, 0
    for path in files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        count += 1
        cited += sum(len(r.findall(text)) for r in (CITE_D, CITE_SECTION, CITE_CASE))
        problems += check_text(rel, text, decisions, sections, cases)
    for p in problems:
        print(p)
    print("check_docs: %d files, %d citations of docs/semantics.md (%d decisions, %d sections, %d cases "
          "there); %d problem(s)" % (count, cited, len(decisions), len(sections), len(cases), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
