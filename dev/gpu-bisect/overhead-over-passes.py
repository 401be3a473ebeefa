#!/usr/bin/env python3
"""The overhead column of several `bench gpu` passes of one kernel image, summarised per row.

Usage: overhead-over-passes.py [--rows f32/2/8M,...] LOG...   (bench-osar*.log, bench-*-sample-every-*.log)

One pass's instrumented - plain at 8-16 MB moves by +-100 ns between passes of the same kernel
(runs 175-192), as much as the goal there (0.5 % of 22.7 us is 113 ns), so two kernels are
compared over many passes, interleaved in one machine session where possible: per row, the
passes' count, mean, standard error of the mean, median, min and max of the overhead (ns), and
the mean plain and instrumented medians (us), which say whether a smaller overhead came from a
faster instrumented kernel or a slower plain one.
"""
import re
import statistics
import sys

args = sys.argv[1:]
want = None
if args and args[0].startswith("--rows="):
    want = set(args[0][len("--rows="):].split(","))
    args = args[1:]
if not args:
    sys.exit("usage: overhead-over-passes.py [--rows=f32/2/8M,...] LOG...")
row = re.compile(r"^\|? ?(f32|bf16) \| (\d+) \| (\w+) \| ([\d.]+) \([^)]*\) \| ([\d.]+) \([^)]*\) \| ([+-]\d+) ")
rows = {}
for path in args:
    for line in open(path):
        m = row.match(line)
        if not m:
            continue
        key = f"{m.group(1)}/{m.group(2)}/{m.group(3)}"
        if want is None or key in want:
            rows.setdefault(key, []).append((float(m.group(4)), float(m.group(5)), int(m.group(6))))
print(f"{'row':14s} {'n':>3s} {'mean':>6s} {'sem':>5s} {'median':>6s} {'min':>5s} {'max':>5s} {'plain us':>9s} {'instr us':>9s}")
for key, v in rows.items():
    d = [x[2] for x in v]
    sem = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
    print(f"{key:14s} {len(d):3d} {statistics.mean(d):+6.0f} {sem:5.0f} {statistics.median(d):+6.0f} "
          f"{min(d):+5d} {max(d):+5d} {statistics.mean(x[0] for x in v):9.2f} {statistics.mean(x[1] for x in v):9.2f}")
