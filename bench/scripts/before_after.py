#!/usr/bin/env python3
"""Side-by-side run of two builds of `compare`: is any workload slower?

Usage (from the repository root):

    python3 bench/scripts/before_after.py BASE_REV [--reps N] [--quick] [--workloads dq2,w2]

Builds `compare` at BASE_REV (a detached worktree under target/before-after,
its own target directory) and at the working tree, then runs every
workload's children, `tickwheel` (and `ambient` for W2) from both builds and
`tokio` from the working tree's, taking turns within each repetition so a
noisy moment of the machine weighs on all of them (the two builds swap who
goes first every other repetition). Prints, per workload and
figure, the median of each build, tokio's, and after/before (above 1.05 is
more than 5% slower). Lower is better for every figure it compares: ns and
CPU per operation, bytes, lateness. W5 (an idle runtime for 5 s) is left out:
it counts wake-ups, which the check in `cargo test` (idle.rs) pins at 0.

`--workloads` takes names as `compare --child` does, or a family: `w12` is
W12's four configurations (`w12-1x100` ...), `w9` W9's shapes on both
runtimes (`w9ct`, `w9mt-joinset` ...), `w11` W11's three shard counts
(`w11-4` ...), which are tickwheel alone (no tokio column). A workload the base's
`compare` does not know (its `--help` lists the names `--child` takes) runs
from the working tree alone: its rows show `after` and `tokio`, marked
"new: not at base", and no after/before.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

WORKLOADS = ["w1ct", "w1mt", "w2", "w3", "w4", "w6", "w7", "w8", "w8mt", "w9ct", "w9mt", "w11",
             "w12", "w13", "dq1", "dq2", "dq3"]
# Workloads of tickwheel alone (W11: tickwheel at 4, 16 and 64 shards):
# no tokio child to run beside them.
TICKWHEEL_ONLY = ("w11",)
# The figures compared, all lower-is-better; the others a child prints are
# sizes and settings (fired, tick_ms, parallelism...). `early` must stay 0.
COMPARED = ("ns_per_op", "cpu_ns_per_op", "cpu_ns_per_op_random", "cpu_s", "bytes_per_timer",
            "entry_bytes_per_pending", "bytes_per_item", "register_ns", "register_ns_0",
            "register_ns_1m", "insert_ns", "ns_per_reset", "p50_ms", "p99_ms", "late_p50_ms",
            "late_p99_ms", "early", "timer_bytes", "trickle_cpu_s", "w9_cpu_s", "trickle_early",
            "w9_early", "reg_p99_us", "reg_p999_us")


def build(root, target_dir):
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "tickwheel-bench", "--bin", "compare"],
        cwd=root, check=True, env={**os.environ, "CARGO_TARGET_DIR": target_dir},
    )
    return os.path.join(target_dir, "release", "compare")


def known_workloads(binary):
    """The workloads `binary --child` takes, from its usage text (`--child
    <w1ct|w1mt|...>`, over several lines where the list is long); None if
    the text does not say."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    match = re.search(r"--child <([^>]*)>", out.stdout + out.stderr)
    return [w.strip() for w in match.group(1).split("|")] if match else None


def expand(items, known):
    """Each item a workload name, or a family (`w12`: every `w12-...`; `w9`:
    `w9ct`, `w9mt` and their `-...` shapes), by the names in `known`."""
    names = []
    for item in items:
        family = [k for k in known
                  if k.startswith(item + "-") or re.fullmatch(re.escape(item) + r"(ct|mt)(-.*)?", k)]
        if item in known:
            names.append(item)
        elif family:
            names.extend(family)
        else:
            sys.exit(f"no workload {item!r} in {', '.join(known)}")
    return names


def child(binary, workload, system, quick):
    args = [binary, "--child", workload, system] + (["--quick"] if quick else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{out.stderr}")
    figures = {}
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        try:
            figures[key] = float(value)
        except ValueError:
            pass
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated subset, e.g. dq2,w2")
    opts = parser.parse_args()
    root = os.getcwd()
    base_tree = os.path.join(root, "target", "before-after", "tree")
    if os.path.exists(base_tree):
        subprocess.run(["git", "worktree", "remove", "--force", base_tree], check=True)
    subprocess.run(["git", "worktree", "add", "--detach", base_tree, opts.base], check=True,
                   capture_output=True)
    before = build(base_tree, os.path.join(root, "target", "before-after", "target"))
    after = build(root, os.path.join(root, "target"))
    known_after = known_workloads(after)
    if known_after is None:
        sys.exit(f"{after} --help does not list its workloads")
    workloads = expand([w.strip() for w in opts.workloads.split(",")], known_after)
    # A base that does not list them predates none of the workloads it runs.
    at_base = known_workloads(before) or workloads
    new = [w for w in workloads if w not in at_base]
    if new:
        print(f"not at base, run from the working tree only: {', '.join(new)}", file=sys.stderr)
    runs = {}
    for rep in range(opts.reps):
        for workload in workloads:
            systems = ["tickwheel", "ambient"] if workload == "w2" else ["tickwheel"]
            builds = (("after", after),) if workload in new else (("before", before), ("after", after))
            # Which build goes first alternates between repetitions: the
            # second run of a pair meets what the first left behind (freed
            # memory, caches, clock), and that must not always be `after`.
            if rep % 2 == 1:
                builds = builds[::-1]
            for system in systems:
                for label, binary in builds:
                    figures = child(binary, workload, system, opts.quick)
                    for key, value in figures.items():
                        runs.setdefault((workload, system, key), {}).setdefault(label, []).append(value)
            if workload.split("-")[0] in TICKWHEEL_ONLY:
                continue
            for key, value in child(after, workload, "tokio", opts.quick).items():
                runs.setdefault((workload, "tokio", key), {}).setdefault("tokio", []).append(value)
        print(f"repetition {rep + 1} of {opts.reps} done", file=sys.stderr)
    print(f"{'workload':8} {'system':9} {'figure':28} {'before':>12} {'after':>12} {'tokio':>12} {'after/before':>12}")
    worst = 0.0
    for (workload, system, key), by in sorted(runs.items()):
        if system == "tokio" or key not in COMPARED:
            continue
        a = statistics.median(by["after"])
        t = runs.get((workload, "tokio", key), {}).get("tokio")
        t = f"{statistics.median(t):12.2f}" if t else f"{'':>12}"
        if "before" not in by:
            print(f"{workload:8} {system:9} {key:28} {'-':>12} {a:12.2f} {t}  new: not at base")
            continue
        b = statistics.median(by["before"])
        if key.endswith("early"):
            print(f"{workload:8} {system:9} {key:28} {b:12.0f} {a:12.0f}")
            continue
        ratio = a / b
        worst = max(worst, ratio)
        flag = "  SLOWER >5%" if ratio > 1.05 else ""
        print(f"{workload:8} {system:9} {key:28} {b:12.2f} {a:12.2f} {t} {ratio:12.3f}{flag}")
    print(f"worst after/before: {worst:.3f} (medians of {opts.reps} alternating repetitions)")


if __name__ == "__main__":
    main()
