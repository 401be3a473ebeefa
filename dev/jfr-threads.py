# A JFR recording's CPU by thread (jdk.ThreadCPULoad: task threads, JIT compilers, ...), GC pauses and
# the top allocation sites, within one span of wall time (e.g. the job phase of `bench pipeline`).
# Usage: python3 dev/jfr-threads.py REC.jfr HH:MM:SS HH:MM:SS   (needs the JDK's `jfr` on PATH)
import re, collections, subprocess, sys
rec, start, end = sys.argv[1], sys.argv[2], sys.argv[3]
def events(name, depth=1):
    txt = subprocess.run(['jfr', 'print', '--stack-depth', str(depth), '--events', name, rec],
                         capture_output=True, text=True, check=True).stdout
    for e in txt.split(name + ' {')[1:]:
        t = re.search(r'startTime = (\S+)', e).group(1)
        if start <= t <= end: yield e
def group(thread):
    return re.sub(r'-\d+$', '', re.sub(r'\s*\(\d+/\d+\)#\d+', '', thread))
cpu = collections.Counter()
for e in events('jdk.ThreadCPULoad'):
    th = re.search(r'eventThread = "(.*?)"', e)
    if th: cpu[group(th.group(1))] += sum(float(x) for x in re.findall(r'(?:user|system) = ([\d.]+)%', e))
total = sum(cpu.values()) or 1
print(f"CPU of Java threads {start}-{end} (jdk.ThreadCPULoad, GC threads not included):")
for k, v in cpu.most_common(15): print(f"  {100*v/total:5.1f}% {k}")
pauses = [float(m) for e in events('jdk.GarbageCollection') for m in re.findall(r'sumOfPauses = ([\d.]+) ms', e)]
print(f"GC: {len(pauses)} collections, {sum(pauses):.0f} ms of pauses")
units = {'bytes': 1, 'kB': 1e3, 'MB': 1e6, 'GB': 1e9}
alloc = collections.Counter(); atotal = 0
for e in events('jdk.ObjectAllocationSample', 4):
    w = re.search(r'weight = ([\d.]+) (\w+)', e); v = float(w.group(1)) * units.get(w.group(2), 1)
    cls = re.search(r'objectClass = (\S+)', e).group(1)
    m = re.search(r'stackTrace = \[(.*?)\n\s*\]', e, re.S)
    frames = [re.sub(r'\(.*', '', l.strip()) for l in m.group(1).split('\n') if l.strip()][:2] if m else []
    alloc[cls + ' @ ' + ' <- '.join(frames)] += v; atotal += v
print(f"allocation (jdk.ObjectAllocationSample weights): {atotal/1e6:.0f} MB")
for k, v in alloc.most_common(15): print(f"  {100*v/(atotal or 1):5.1f}% {k[:200]}")
