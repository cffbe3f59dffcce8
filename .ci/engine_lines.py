#!/usr/bin/env python3
"""Counts the engine's code: non-blank lines of `src/engine` that are not
comments, outside `#[cfg(test)]` / `#[cfg(tickwheel_loom)]` items and the
test-only files. Issue 40's measure of the driver's size (not run by CI).

Usage: python3 .ci/engine_lines.py [REV]   (default: the working tree)
"""
import re
import subprocess
import sys

TEST_ONLY = ("loom_tests.rs", "wheel/tests.rs", "wheel/watchdog.rs")
CFG_TEST = re.compile(r"#\[cfg\((test|tickwheel_loom|all\(test.*)\)\]")


def sources(rev):
    ls = ["git", "ls-tree", "-r", "--name-only", rev] if rev else ["git", "ls-files"]
    for path in subprocess.check_output(ls + ["src/engine"], text=True).split():
        if path.endswith(".rs") and not path.endswith(TEST_ONLY):
            text = (subprocess.check_output(["git", "show", f"{rev}:{path}"], text=True)
                    if rev else open(path).read())
            yield path, text.splitlines()


def count(lines):
    n, i, in_block = 0, 0, False
    while i < len(lines):
        s = lines[i].strip()
        i += 1
        if in_block:
            in_block = "*/" not in s
        elif s.startswith("/*"):
            in_block = "*/" not in s
        elif CFG_TEST.match(s):
            # Skip the item the attribute is on: to its closing brace, or
            # to its `;` if it has no body.
            depth, opened = 0, False
            while i < len(lines):
                t = lines[i]
                i += 1
                depth += t.count("{") - t.count("}")
                opened |= "{" in t
                # A field or a struct literal's field ends at its `,`.
                if (opened and depth <= 0) or (not opened and t.strip().endswith((";", ","))):
                    break
        elif s and not s.startswith("//"):
            n += 1
    return n


rev = sys.argv[1] if len(sys.argv) > 1 else None
per = {path: count(lines) for path, lines in sources(rev)}
for path, n in sorted(per.items(), key=lambda kv: -kv[1]):
    print(f"{n:6} {path}")
print(f"{sum(per.values()):6} total")
