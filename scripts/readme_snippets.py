#!/usr/bin/env python3
"""readme_snippets.py: turn the C++ code blocks of the documentation into translation units.

Every fenced block tagged ```cpp (or ```c++) in README.md and docs/**/*.md becomes compiled
code, so a block that no longer compiles fails the build with an error at the Markdown line.
tests/CMakeLists.txt runs this script at configure time and builds what it writes.

Kinds of block
  program    a block containing `int main(`: a whole program, compiled as written, linked
             and run by ctest (readme_snippet.<name>).
  fragment   any other block: wrapped in a harness TU that includes <expiring/expiring.hpp>
             and common std headers (HARNESS_HEADERS below), with the block placed inside
             the body of `[[maybe_unused]] static void snippet_N() { ... }`. Lines starting
             with `#include` are hoisted to the top of the TU. Fragments are compiled (an
             OBJECT library), never linked: functions they only declare need no definition.
             Compiled with the project's warnings as errors, except the unused-variable
             warnings (an illustration may show a value without using it); [[nodiscard]]
             is still enforced.

Directives: an HTML comment on the nearest non-blank line before the opening fence
(invisible when the Markdown is rendered). Several may be combined with ';'.
  <!-- snippet: namespace-scope -->     place the fragment at namespace scope, not in a
                                        function (for templates, namespaces, definitions)
  <!-- snippet: continue -->            append to the previous cpp block of the same file,
                                        in the same TU and function body, so it may use the
                                        names declared there
  <!-- snippet: skip: <reason> -->      do not compile this block (the reason is required;
                                        skipped blocks are listed on every run)
  <!-- snippet: no-run: <reason> -->    a program that is compiled and linked, not run
  <!-- snippet: prelude                 declarations the block assumes (functions of the
  void refresh_now(std::string_view);   reader's application, say), placed at namespace
  -->                                   scope before the block; may span several lines.
                                        Prefer a self-contained block where that reads well.

Each piece of Markdown in a TU is preceded by `#line N "<file>"`, so diagnostics name the
Markdown file and line (and column: lines are copied with their indentation, so a block
indented inside a list item compiles the same).

Usage
  readme_snippets.py --root SRC --out DIR   write DIR/*.cpp and DIR/snippets.cmake (only files
                                            whose contents changed are rewritten; stale ones
                                            are removed)
  readme_snippets.py --root SRC --out DIR --check
                                            verify that no cpp fence was dropped (a plain count
                                            of opening fences against the blocks extracted or
                                            skipped) and that DIR is up to date with SRC
  readme_snippets.py --self-test            the extractor's own tests, on built-in Markdown
"""

import argparse
import os
import re
import sys
import tempfile

HARNESS_HEADERS = [
    "expiring/expiring.hpp",
    "chrono", "cstddef", "cstdint", "cstdio", "functional", "iostream", "map", "memory",
    "optional", "string", "string_view", "utility", "vector",
]

CPP_TAGS = ("cpp", "c++")
FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
MAIN_RE = re.compile(r"\bint\s+main\s*\(")
INCLUDE_RE = re.compile(r"^\s*#\s*include\b")
# The independent count used by --check: any opening fence tagged cpp or c++.
COUNT_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(cpp|c\+\+)(?![\w+])", re.IGNORECASE)


class SnippetError(Exception):
    pass


class Block:
    def __init__(self, path, fence_line, lines, first_line, directives, prelude):
        self.path = path              # relative path of the Markdown file, '/' separators
        self.fence_line = fence_line  # 1-based line of the opening fence
        self.lines = lines            # the block's lines, as in the file
        self.first_line = first_line  # 1-based line of the block's first line
        self.directives = directives  # {name: argument}
        self.prelude = prelude        # (first_line, [lines]) or None

    @property
    def where(self):
        return "%s:%d" % (self.path, self.fence_line)

    @property
    def is_program(self):
        return any(MAIN_RE.search(l) for l in self.lines)


def parse_directive(path, lines, i):
    """Reads the snippet directive comment that ends on line i (0-based), or returns None.

    Returns (directives, prelude) where prelude is (first_line_1based, [lines]) or None."""
    if not lines[i].rstrip().endswith("-->"):
        return None
    start = i
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    if start < 0:
        return None
    m = re.match(r"^\s*<!--\s*snippet:(.*)$", lines[start])
    if not m:
        return None
    text_lines = [m.group(1)] + lines[start + 1:i + 1]
    text_lines[-1] = text_lines[-1].rstrip()[:-3]
    head = text_lines[0].strip()
    directives = {}
    prelude = None
    for part in [p.strip() for p in head.split(";") if p.strip()]:
        name, _, arg = part.partition(":")
        name, arg = name.strip(), arg.strip()
        if name.split()[0] == "prelude":
            rest = part[len("prelude"):].strip()
            body = ([rest] if rest else []) + text_lines[1:]
            while body and not body[-1].strip():
                body.pop()
            if not body:
                raise SnippetError("%s:%d: empty snippet prelude" % (path, start + 1))
            first = start + 1 + (0 if rest else 1)
            prelude = (first, body)
            directives["prelude"] = ""
            break  # the rest of the comment is the prelude's code
        paren = re.match(r"^([a-z-]+)\s*\((.+)\)$", part)
        if paren:  # also accept "skip (reason)"
            name, arg = paren.group(1), paren.group(2).strip()
        if name not in ("namespace-scope", "continue", "skip", "no-run"):
            raise SnippetError("%s:%d: unknown snippet directive '%s'" % (path, start + 1, name))
        if name in ("skip", "no-run"):
            if not arg:
                raise SnippetError("%s:%d: '%s' needs a reason: <!-- snippet: %s: why -->"
                                   % (path, start + 1, name, name))
        elif arg:
            raise SnippetError("%s:%d: directive '%s' takes no argument" % (path, start + 1, name))
        directives[name] = arg
    if start != i and "prelude" not in directives:
        raise SnippetError("%s:%d: only a prelude directive may span lines" % (path, start + 1))
    return directives, prelude


def extract(path, text):
    """The cpp blocks of one Markdown text, in order. Raises SnippetError on malformed input."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").lower()
        start = i
        i += 1
        body = []
        closed = False
        while i < len(lines):
            c = re.match(r"^[ \t]*(`{3,}|~{3,})[ \t]*$", lines[i])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                closed = True
                break
            body.append(lines[i])  # indentation kept: diagnostics' columns match the file
            i += 1
        if not closed:
            raise SnippetError("%s:%d: unclosed code fence" % (path, start + 1))
        i += 1
        # The directive: nearest non-blank line before the fence.
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        parsed = parse_directive(path, lines, j) if j >= 0 else None
        if info not in CPP_TAGS:
            if parsed is not None:
                raise SnippetError("%s:%d: a snippet directive before a '%s' block (only cpp "
                                   "blocks are compiled)" % (path, start + 1, info or "untagged"))
            continue
        directives, prelude = parsed if parsed else ({}, None)
        blocks.append(Block(path, start + 1, body, start + 2, directives, prelude))
    return blocks


def slug(path):
    return re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")


def line_directive(n, path):
    return '#line %d "%s"' % (n, path)


def piece(block):
    """The block's code with #line directives: (hoisted include lines, other lines)."""
    hoisted, rest = [], []
    current = None  # the line number the next line of `rest` will get without a directive
    for k, line in enumerate(block.lines):
        n = block.first_line + k
        if INCLUDE_RE.match(line) and not block.is_program:
            hoisted += [line_directive(n, block.path), line]
            continue
        if current != n:
            rest.append(line_directive(n, block.path))
        rest.append(line)
        current = n + 1
    return hoisted, rest


def build_units(blocks):
    """Groups blocks into translation units. Returns (units, skipped).

    A unit: dict(name, kind ('fragment' | 'program'), blocks, text, run (bool), where)."""
    units, skipped = [], []
    per_file_index = {}
    last_unit_of_file = {}
    for b in blocks:
        if "skip" in b.directives:
            skipped.append(b)
            last_unit_of_file[b.path] = None
            continue
        if "continue" in b.directives:
            prev = last_unit_of_file.get(b.path)
            if prev is None:
                raise SnippetError("%s: 'continue' needs a compiled cpp block before it in the "
                                   "same file" % b.where)
            if b.is_program or prev["kind"] == "program":
                raise SnippetError("%s: 'continue' joins fragments, not programs" % b.where)
            prev["blocks"].append(b)
            continue
        n = per_file_index.get(b.path, 0) + 1
        per_file_index[b.path] = n
        kind = "program" if b.is_program else "fragment"
        if kind == "program" and ("namespace-scope" in b.directives or "prelude" in b.directives):
            raise SnippetError("%s: a whole program (it has main) takes no namespace-scope or "
                               "prelude directive" % b.where)
        if kind == "fragment" and "no-run" in b.directives:
            raise SnippetError("%s: 'no-run' applies to whole programs only" % b.where)
        unit = {"name": "%s_%d" % (slug(b.path), n), "kind": kind, "blocks": [b],
                "run": "no-run" not in b.directives, "where": b.where}
        units.append(unit)
        last_unit_of_file[b.path] = unit
    for u in units:
        u["text"] = render(u)
    return units, skipped


def render(unit):
    out = ["// Generated by scripts/readme_snippets.py from %s: do not edit." %
           ", ".join(b.where for b in unit["blocks"])]
    if unit["kind"] == "program":
        _, rest = piece(unit["blocks"][0])
        return "\n".join(out + rest) + "\n"
    hoisted, preludes, bodies = [], [], []
    for b in unit["blocks"]:
        h, r = piece(b)
        hoisted += h
        if b.prelude:
            first, plines = b.prelude
            preludes += [line_directive(first, b.path)] + plines
        bodies.append((b, r))
    out += hoisted
    out += ["#line %d \"%s.cpp\"" % (len(out) + 2, unit["name"])]
    out += ["#include <%s>" % h for h in HARNESS_HEADERS]
    out += preludes
    ns_scope = "namespace-scope" in unit["blocks"][0].directives
    if ns_scope:
        for _, r in bodies:
            out += r
    else:
        out.append("[[maybe_unused]] static void snippet_%s() {" % unit["name"])
        for _, r in bodies:
            out += r
        out.append("}")
    return "\n".join(out) + "\n"


def markdown_files(root):
    files = []
    if os.path.isfile(os.path.join(root, "README.md")):
        files.append("README.md")
    docs = os.path.join(root, "docs")
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".md"):
                files.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    return files


def collect(root):
    files = markdown_files(root)
    blocks = []
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            blocks += extract(f, fh.read())
    units, skipped = build_units(blocks)
    return files, blocks, units, skipped


def cmake_quote(s):
    return '"%s"' % s.replace("\\", "/").replace('"', '\\"')


def manifest(root, files, units):
    lines = ["# Generated by scripts/readme_snippets.py: do not edit."]
    lines.append("set(EXPIRING_SNIPPET_INPUTS")
    lines += ["  %s" % cmake_quote(os.path.join(root, f)) for f in files]
    lines.append(")")
    for kind, var in (("fragment", "EXPIRING_SNIPPET_FRAGMENTS"), ("program", "EXPIRING_SNIPPET_PROGRAMS")):
        lines.append("set(%s" % var)
        lines += ["  %s" % u["name"] for u in units if u["kind"] == kind]
        lines.append(")")
    lines.append("set(EXPIRING_SNIPPET_NO_RUN")
    lines += ["  %s" % u["name"] for u in units if u["kind"] == "program" and not u["run"]]
    lines.append(")")
    return "\n".join(lines) + "\n"


def outputs(root, units, files):
    out = {u["name"] + ".cpp": u["text"] for u in units}
    out["snippets.cmake"] = manifest(root, files, units)
    return out


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return False
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def generate(root, out_dir):
    files, blocks, units, skipped = collect(root)
    os.makedirs(out_dir, exist_ok=True)
    wanted = outputs(root, units, files)
    for name, text in wanted.items():
        write_if_changed(os.path.join(out_dir, name), text)
    for name in os.listdir(out_dir):
        if (name.endswith(".cpp") or name == "snippets.cmake") and name not in wanted:
            os.remove(os.path.join(out_dir, name))
    report(blocks, units, skipped)


def report(blocks, units, skipped):
    nfrag = sum(1 for u in units if u["kind"] == "fragment")
    nprog = len(units) - nfrag
    print("readme_snippets: %d cpp blocks -> %d fragment TUs, %d programs, %d skipped"
          % (len(blocks), nfrag, nprog, len(skipped)))
    for b in skipped:
        print("readme_snippets: skipped %s (%s)" % (b.where, b.directives["skip"]))


def check(root, out_dir):
    files, blocks, units, skipped = collect(root)
    problems = []
    fences = 0
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            fences += sum(1 for l in fh if COUNT_RE.match(l))
    compiled = sum(len(u["blocks"]) for u in units)
    if fences != len(blocks) or compiled + len(skipped) != fences:
        problems.append("%d cpp fences in %s, but %d blocks extracted (%d compiled, %d skipped)"
                        % (fences, ", ".join(files), len(blocks), compiled, len(skipped)))
    for name, text in outputs(root, units, files).items():
        try:
            with open(os.path.join(out_dir, name), encoding="utf-8") as fh:
                current = fh.read()
        except FileNotFoundError:
            current = None
        if current != text:
            problems.append("%s is out of date with the Markdown: re-run CMake's configure step"
                            % os.path.join(out_dir, name))
    report(blocks, units, skipped)
    for p in problems:
        print("readme_snippets: FAIL: " + p)
    if not problems:
        print("readme_snippets: OK: every cpp fence is compiled or listed as skipped, and the "
              "generated sources are current")
    return 1 if problems else 0


SELF_TEST_MD = """\
# Title

```cpp
#include <vector>
std::vector<int> v{1, 2};
```

Prose.
<!-- snippet: continue -->
  ```cpp
  v.push_back(3);
  ```

<!-- snippet: namespace-scope -->

```c++
template <class T> T twice(T x) { return x + x; }
```

<!-- snippet: skip: needs a network -->
```cpp
does not compile
```

<!-- snippet: prelude
int helper(int);
-->
```cpp
int x = helper(1);
```

```cpp
int main() { return 0; }
```

<!-- snippet: no-run: waits for input -->
```cpp
#include <cstdio>
int main() { return std::getchar() < 0; }
```

```cmake
not compiled
```
"""


def self_test():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    blocks = extract("T.md", SELF_TEST_MD)
    expect(len(blocks) == 7, "7 cpp blocks, got %d" % len(blocks))
    units, skipped = build_units(blocks)
    kinds = [u["kind"] for u in units]
    expect(kinds == ["fragment", "fragment", "fragment", "program", "program"],
           "unit kinds: %s" % kinds)
    expect([b.fence_line for b in skipped] == [21], "skipped: %s" % [b.where for b in skipped])
    t0 = units[0]["text"]
    expect(t0.index("#include <vector>") < t0.index("static void snippet_T_md_1"),
           "#include hoisted")
    expect('#line 4 "T.md"' in t0 and '#line 11 "T.md"\n  v.push_back(3);' in t0,
           "continue block joined, at its line and column:\n" + t0)
    t1 = units[1]["text"]
    expect("static void" not in t1 and "template <class T>" in t1, "namespace-scope")
    t2 = units[2]["text"]
    expect('#line 26 "T.md"\nint helper(int);' in t2, "prelude at its line:\n" + t2)
    expect(t2.index("int helper(int);") < t2.index("static void"), "prelude before the body")
    expect(units[3]["text"].endswith('#line 33 "T.md"\nint main() { return 0; }\n'),
           "program as written:\n" + units[3]["text"])
    expect(units[3]["run"] and not units[4]["run"], "no-run")
    for bad, what in (("<!-- snippet: skip -->\n```cpp\nx\n```\n", "skip without reason"),
                      ("<!-- snippet: frobnicate -->\n```cpp\nx\n```\n", "unknown directive"),
                      ("<!-- snippet: continue -->\n```cpp\nx\n```\n", "continue first"),
                      ("<!-- snippet: skip: r -->\n```sh\nx\n```\n", "directive before sh"),
                      ("```cpp\nx\n", "unclosed fence")):
        try:
            build_units(extract("B.md", bad))
            failures.append("accepted: " + what)
        except SnippetError:
            pass
    # The generated tree round-trips through --check.
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
        os.makedirs(os.path.join(src, "docs"))
        with open(os.path.join(src, "README.md"), "w", encoding="utf-8") as fh:
            fh.write(SELF_TEST_MD)
        generate(src, out)
        expect(check(src, out) == 0, "check after generate")
        with open(os.path.join(src, "docs", "new.md"), "w", encoding="utf-8") as fh:
            fh.write("```cpp\nint y = 0;\n```\n")
        expect(check(src, out) == 1, "check notices a new block")
    for f in failures:
        print("readme_snippets self-test: FAIL: " + f)
    print("readme_snippets self-test: %s" % ("FAILED" if failures else "OK"))
    return 1 if failures else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="the source tree (README.md, docs/)")
    ap.add_argument("--out", help="the directory for the generated sources")
    ap.add_argument("--check", action="store_true", help="verify instead of writing")
    ap.add_argument("--self-test", action="store_true", help="test the extractor itself")
    args = ap.parse_args(argv)
    try:
        if args.self_test:
            return self_test()
        if not args.root or not args.out:
            ap.error("--root and --out are required")
        root, out = os.path.abspath(args.root), os.path.abspath(args.out)
        if args.check:
            return check(root, out)
        generate(root, out)
        return 0
    except SnippetError as e:
        print("readme_snippets: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
