#!/usr/bin/env python3
"""scripts/check_docs.py: the project's references must resolve.

The code, tests, examples, benchmarks, README and guides cite docs/semantics.md by decision
(D4), section (B §2.1, §5) and catalogue case (case 150), and the Markdown files link to each
other and to the sources. This check fails when
  * a citation names a decision, section or case that docs/semantics.md does not have,
  * anything still cites a document that is not part of the repository (SPEC.md, DESIGN.md,
    "SPEC D4", "DESIGN §5", ../shared/), or
  * a Markdown link of README.md or docs/**/*.md (outside code) names a file that does not
    exist, or a heading (#anchor, as GitHub spells it) that its file does not have.
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
# In the README and the guides, a decision is cited bare: "(D14)", "D1-D17".
README_D = re.compile(r"\bD(\d+)\b")
# A Markdown link or image: [text](target) (a target without spaces; URLs are not checked).
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`]*`")


def bare_citations(rel):
    return rel == "README.md" or rel.startswith(os.path.join("docs", "guide") + os.sep)


def slug(heading):
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'."""
    h = INLINE_CODE.sub(lambda m: m.group(0)[1:-1], heading.strip()).lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(text):
    """The anchors of a Markdown text's headings (outside code fences; repeats get -1, -2)."""
    seen, out, fence = {}, set(), False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = re.match(r"^#{1,6} (.*)$", line)
        if m and not fence:
            a = slug(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


def check_links(root, rel, text):
    problems, fence = [], False
    base = os.path.dirname(os.path.join(root, rel))
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in MD_LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(root, rel)
            where = "%s:%d" % (rel, n)
            if not os.path.exists(full):
                problems.append("%s: link to a file that does not exist: %s" % (where, target))
                continue
            if anchor and full.endswith(".md"):
                with open(full, encoding="utf-8") as f:
                    if anchor not in headings(f.read()):
                        problems.append("%s: link to a heading %s does not have: %s" % (where, path or rel, target))
    return problems


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
        if bare_citations(rel):
            for d in README_D.findall(line):
                if "D" + d not in decisions:
                    problems.append("%s: cites D%s, which docs/semantics.md does not have" % (where, d))
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
    assert slug("Many threads: `ConcurrentStore`") == "many-threads-concurrentstore"
    assert slug("Hashes with per-field TTLs (Redis 7.4)") == "hashes-with-per-field-ttls-redis-74"
    assert headings("# A\n```\n# not\n```\n## A\n") == {"a", "a-1"}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))
        with open(os.path.join(d, "docs", "g.md"), "w", encoding="utf-8") as f:
            f.write("# Guide\n## Part one\n")
        text = ("[ok](docs/g.md) [ok](docs/g.md#part-one) [bad](docs/none.md) [bad](docs/g.md#part-two)\n"
                "`[code](not/a/link.md)` [web](https://example.com/x)\n```\n[in](fence.md)\n```\n")
        links = check_links(d, "README.md", text)
        assert len(links) == 2 and "none.md" in links[0] and "part-two" in links[1], links
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
        if rel.endswith(".md") and (rel == "README.md" or rel.startswith("docs" + os.sep)):
            problems += check_links(root, rel, text)
    for p in problems:
        print(p)
    print("check_docs: %d files, %d citations of docs/semantics.md (%d decisions, %d sections, %d cases "
          "there); %d problem(s)" % (count, cited, len(decisions), len(sections), len(cases), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
