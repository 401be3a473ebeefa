#!/usr/bin/env python3
"""Every osar kernel's device time from an Nsight Systems GPU trace, as a distribution.

Usage: kernel-durations.py CUDA_GPU_TRACE.csv   (`nsys stats --report cuda_gpu_trace --format csv`)

`bench gpu` gives a median over rounds of whole graphs; this gives each launch's own duration, so
an instrumented kernel's gap over the plain one splits into a shift of every collective (the
unsampled ones' cost: the medians' difference) and a tail (the sampled ones', 1 in 16 by
default: the rest of the means' difference): per kernel name the launches, mean and percentiles,
then each instrumented kernel against its plain one. `bench gpu`'s publish-every-1 variant also runs the instrumented kernel,
each launch followed on its stream by osar_publish: such launches are left out (so is 1 in
every publication interval of the default rate's, a few in a thousand).
"""
import csv
import statistics
import sys


def col(header, *names):
    for n in names:
        for i, h in enumerate(header):
            if h.strip().lower() == n.lower():
                return i
    sys.exit(f"kernel-durations: no column {names[0]!r} in {header}")


rows = list(csv.reader(open(sys.argv[1])))
# nsys prints a line or two before the header on some versions
start = next(i for i, r in enumerate(rows) if any(c.strip().lower() == "name" for c in r))
header, rows = rows[start], rows[start + 1:]
c_start = col(header, "Start (ns)", "Start")
c_dur = col(header, "Duration (ns)", "Duration")
c_name = col(header, "Name")
c_strm = col(header, "Strm", "Stream")
c_dev = col(header, "Device", "Device ID") if any("device" in h.lower() for h in header) else None
launches = []
for r in rows:
    if len(r) <= max(c_start, c_dur, c_name, c_strm) or not r[c_name].startswith("osar_"):
        continue
    key = (r[c_dev] if c_dev is not None else "", r[c_strm])
    launches.append((key, int(float(r[c_start])), float(r[c_dur]), r[c_name]))
launches.sort()
by_name = {}
dropped = 0
for i, (key, _, dur, name) in enumerate(launches):
    nxt = launches[i + 1] if i + 1 < len(launches) else None
    if name != "osar_publish" and nxt and nxt[0] == key and nxt[3] == "osar_publish":
        dropped += 1
        continue
    by_name.setdefault(name, []).append(dur)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q / 100 * len(v)))]


print(f"{'kernel':22s} {'n':>7s} {'mean':>9s} {'p10':>9s} {'p50':>9s} {'p90':>9s} {'p99':>9s} {'max':>9s}  (ns)")
for name, v in sorted(by_name.items()):
    print(f"{name:22s} {len(v):7d} {statistics.mean(v):9.0f} {pct(v, 10):9.0f} {pct(v, 50):9.0f} "
          f"{pct(v, 90):9.0f} {pct(v, 99):9.0f} {max(v):9.0f}")
print(f"(left out: {dropped} launches followed by osar_publish on their stream)")
for name in sorted(by_name):
    plain = by_name.get(name + "_plain")
    if not plain:
        continue
    v = by_name[name]
    shift = pct(v, 50) - pct(plain, 50)
    gap = statistics.mean(v) - statistics.mean(plain)
    above = sum(1 for x in v if x > pct(plain, 99)) / len(v)
    print(f"{name} against {name}_plain: mean {gap:+.0f} ns = median shift {shift:+.0f} (every "
          f"launch) + tail {gap - shift:+.0f} (the few slow ones: {above:.1%} of launches above "
          f"the plain kernel's p99, 1.0 % expected of an unshifted kernel)")
