#!/usr/bin/env python3
"""tests/first_hour/first_hour.py: a newcomer's first hour, as README.md tells it, checked.

Run by ctest (first_hour.readme). It does what a reader of the README does, with the README's
own text, so that the front page cannot drift from what works:
  1. a project of its own that vendors this repository and takes it in with the README's
     FetchContent block, copied verbatim (offline: SOURCE_DIR);
  2. the README's quickstart block as that project's main(), built and run; the values its
     comments promise are checked (a TTL of 30, the expired lock is gone, ...);
  3. the first example of one guide (docs/guide/hash-fields.md) the same way;
  4. expiring-server started as docs/guide/server.md shows, and the guide's redis-cli lines
     run against it (on a free loopback port instead of 6390).
Every wait is bounded; the server is stopped however the test ends.

Usage: first_hour.py --repo DIR --work DIR --cmake CMAKE --generator GEN --cxx CXX
                     --server EXPIRING_SERVER --redis-cli REDIS_CLI
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import time


def fail(msg):
    print("first_hour: FAILED: " + msg)
    sys.exit(1)


def blocks(path, lang):
    """The fenced blocks of a Markdown file tagged `lang`, in order."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if cur is None and s == "```" + lang:
                cur = []
            elif cur is not None and s == "```":
                out.append("".join(cur))
                cur = None
            elif cur is not None:
                cur.append(line)
    return out


def as_program(block, checks):
    """A fragment as a newcomer makes it a program: its #includes on top, the rest in main(),
    then the checks of what its comments promise (each a condition that must hold)."""
    includes = [l for l in block.splitlines() if l.startswith("#include")]
    body = [l for l in block.splitlines() if not l.startswith("#include")]
    lines = includes + ["#include <cstdio>", "", "int main() {"] + ["  " + l for l in body]
    for i, c in enumerate(checks):
        lines.append('  if (!(%s)) { std::printf("check %d failed: %%s\\n", %s); return 1; }'
                     % (c, i + 1, '"' + c.replace('\\', '\\\\').replace('"', '\\"') + '"'))
    lines += ['  std::printf("ok: %d checks\\n", %d);' % (len(checks), len(checks)), "  return 0;", "}", ""]
    return "\n".join(lines)


def run(cmd, cwd=None, timeout=600):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        fail("%s exited with %d" % (cmd[0], r.returncode))
    return r.stdout


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    for a in ("--repo", "--work", "--cmake", "--generator", "--cxx", "--server", "--redis-cli"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    readme = os.path.join(repo, "README.md")

    # 1. The README's FetchContent block, verbatim, in a project of the newcomer's own.
    fetch = [b for b in blocks(readme, "cmake") if "FetchContent_Declare(expiring" in b]
    if len(fetch) != 1:
        fail("README.md has %d cmake blocks with FetchContent_Declare(expiring ...), not one" % len(fetch))
    m = re.search(r"SOURCE_DIR\s+\$\{CMAKE_CURRENT_SOURCE_DIR\}/(\S+)\)", fetch[0])
    if not m:
        fail("the README's FetchContent block does not vendor from ${CMAKE_CURRENT_SOURCE_DIR}/<dir>")
    cpp = blocks(readme, "cpp")
    if not cpp:
        fail("README.md has no cpp block: no quickstart")
    guide = blocks(os.path.join(repo, "docs", "guide", "hash-fields.md"), "cpp")
    if not guide:
        fail("docs/guide/hash-fields.md has no cpp block")

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "my_app")
    os.makedirs(os.path.join(src, os.path.dirname(m.group(1))), exist_ok=True)
    os.symlink(repo, os.path.join(src, m.group(1)))
    quick_checks = ["locked", "ttl == 30", "gone == nullptr", "expired >= 1"]
    guide_checks = ["set == std::vector<int>{1, -2}", "left == std::vector<std::int64_t>{30, -1}", "otp == nullptr"]
    with open(os.path.join(src, "main.cpp"), "w", encoding="utf-8") as f:
        f.write(as_program(cpp[0], quick_checks))
    with open(os.path.join(src, "fields.cpp"), "w", encoding="utf-8") as f:
        f.write(as_program(guide[0], guide_checks))
    with open(os.path.join(src, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("cmake_minimum_required(VERSION 3.14)\nproject(my_app CXX)\n"
                "add_executable(my_app main.cpp)\nadd_executable(my_fields fields.cpp)\n\n")
        f.write(fetch[0])
        f.write("target_link_libraries(my_fields PRIVATE expiring::expiring)\n")
    build = os.path.join(work, "build")
    run([args.cmake, "-S", src, "-B", build, "-G", args.generator, "-DCMAKE_CXX_COMPILER=" + args.cxx,
         "-DFETCHCONTENT_FULLY_DISCONNECTED=ON"])
    run([args.cmake, "--build", build, "-j2"])

    # 2-3. The quickstart and the guide's example, run.
    out = run([os.path.join(build, "my_app")], timeout=60)
    if "ok: %d checks" % len(quick_checks) not in out:
        fail("the quickstart did not report its checks")
    out = run([os.path.join(build, "my_fields")], timeout=60)
    if "ok: %d checks" % len(guide_checks) not in out:
        fail("the guide's example did not report its checks")

    # 4. expiring-server and redis-cli, as docs/guide/server.md shows them.
    server_md = open(os.path.join(repo, "docs", "guide", "server.md"), encoding="utf-8").read()
    for line in ("redis-cli -p 6390 SET session:1 alice EX 30", "redis-cli -p 6390 TTL session:1"):
        if line not in server_md:
            fail("docs/guide/server.md no longer shows: " + line)
    port = str(free_port())
    proc = subprocess.Popen([args.server, "--port", port, "--dir", work], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        cli = [args.redis_cli, "-p", port]
        deadline = time.monotonic() + 20
        while True:
            r = subprocess.run(cli + ["PING"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
            if r.stdout.strip() == "PONG":
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                fail("expiring-server did not answer PING on port %s within 20 s" % port)
            time.sleep(0.1)
        if run(cli + ["SET", "session:1", "alice", "EX", "30"], timeout=10).strip() != "OK":
            fail("SET session:1 alice EX 30 did not answer OK")
        ttl = run(cli + ["TTL", "session:1"], timeout=10).strip()
        if ttl not in ("30", "29"):
            fail("TTL session:1 answered %r, not 30" % ttl)
        if run(cli + ["GET", "session:1"], timeout=10).strip() != "alice":
            fail("GET session:1 did not answer alice")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    print("first_hour: the README's FetchContent block, its quickstart, a guide's example and "
          "expiring-server with redis-cli all work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
