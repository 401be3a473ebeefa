# Reads `collscope demo --json` lines on stdin as they arrive, notes the wall time of each window line,
# and prints: windows per communicator, distinct window ends, and each window end's last verdict latency
# (arrival - window_end; the replay re-stamps the recording to now).
# Usage: bin/collscope demo --replay FILE --json | python3 dev/verdict-latency.py STAMPED.txt
import sys, json, time, collections, datetime
per_comm = collections.defaultdict(list); last_arrival = {}; n = 0
out = open(sys.argv[1], 'w')
for line in sys.stdin:
    t = time.time()
    out.write(f"{t:.3f} {line}"); out.flush()
    try: w = json.loads(line)
    except Exception: continue
    if w.get('type') != 'window': continue
    n += 1
    end = datetime.datetime.fromisoformat(w['window_end'].replace('Z', '+00:00')).timestamp()
    per_comm[w['communicator']].append(end)
    last_arrival[end] = max(last_arrival.get(end, 0), t)
ends = sorted(last_arrival)
print(f"window lines {n}; communicators {len(per_comm)}; window ends {len(ends)}")
counts = collections.Counter(len(v) for v in per_comm.values())
print("windows per communicator: " + ", ".join(f"{k} windows: {v} communicators" for k, v in sorted(counts.items())))
missing = sum(1 for v in per_comm.values() if sorted(set(v)) != ends)
print(f"communicators without every window end exactly once: {missing}")
for e in ends:
    print(f"window end {datetime.datetime.utcfromtimestamp(e).isoformat()}Z: last verdict {last_arrival[e]-e:.2f} s after it")
