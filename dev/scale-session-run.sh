#!/usr/bin/env bash
# The session-cluster scale run of docs/SCALE.md: `collscope cluster start --taskmanagers 2` (a
# JobManager, two TaskManagers of one slot, a broker; file-system checkpoints in the cluster's
# folder), the attribution job submitted to it at parallelism 2, and `collscope load` publishing a
# simulated cluster of RANKS ranks in 8-rank communicators (one snapshot a second per rank) with
# three planted culprits. Every 10 s one line: records published and consumed, the lag between
# them, checkpoints completed/failed and the latest one's size. At the end: the verdicts of the
# planted communicators, the count of windows per communicator, and the cluster's logs' errors.
#
# Usage: dev/scale-session-run.sh OUTDIR [RANKS] [EVENT_SECONDS] [ACCELERATE]
#   ACCELERATE: `max` (as fast as the broker takes it) or X (event time X times the wall clock).
#   COLLSCOPE (environment): the collscope to run, default bin/collscope of this checkout (an
#   unpacked release archive's bin/collscope keeps the run apart from builds in the checkout).
#   TASK_HEAP (environment): each TaskManager's task heap, default 4g (`cluster start`'s 640m
#   holds about 20,000 ranks: 100,000 ran a TaskManager out of heap).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:?usage: dev/scale-session-run.sh OUTDIR [RANKS] [EVENT_SECONDS] [ACCELERATE]}")
ranks=${2:-100000}
seconds=${3:-300}
accel=${4:-max}
heap=${TASK_HEAP:-4g}
collscope=${COLLSCOPE:-bin/collscope}
dir=.run/scale-$ranks
kafka=localhost:19092
rest=http://localhost:18081
mkdir -p "$out"
rm -rf "$dir"
exec > >(tee "$out/run.log") 2>&1
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) cores; ranks=$ranks event_seconds=$seconds accelerate=$accel task_heap=$heap"
echo "# git $(git rev-parse --short HEAD)"

"$collscope" cluster start --taskmanagers 2 --slots 1 --dir "$dir" --kafka-port 19092 \
  --rest-port 18081 --rpc-port 16123 --zookeeper-port 12181 --taskmanager-heap "$heap" >"$out/cluster-start.log" 2>&1
stop() {
  cp "$dir"/log/*.log "$out/" 2>/dev/null || true
  "$collscope" cluster stop --dir "$dir" >"$out/cluster-stop.log" 2>&1 || true
}
trap stop EXIT

"$collscope" job submit --dir "$dir" --partitions 4 | tee "$out/job-submit.log"
job=$(grep -oE '[0-9a-f]{32}' "$out/job-submit.log" | head -1)
echo "job $job"

comms=$((ranks / 8))
planted=("tp17:slow-rank=3:300us" "tp$((comms / 2)):slow-link=1->5:500us" "tp$((comms - 1)):slow-rank=6:1ms")
injects=()
for p in "${planted[@]}"; do injects+=(--inject "$p"); done
"$collscope" load --bootstrap "$kafka" --ranks "$ranks" --communicators tp:8 --rate 1/s \
  --seconds "$seconds" --accelerate "$accel" --partitions 4 "${injects[@]}" \
  >"$out/load.out" 2>"$out/load.err" &
load=$!

# source records out: the first vertex's write-records (records it sent on through the keyBy)
consumed() {
  curl -sf "$rest/jobs/$job" | python3 -c '
import json,sys
j=json.load(sys.stdin)
v=j["vertices"][0]
print(v["metrics"].get("write-records",0))'
}
checkpoints() {
  curl -sf "$rest/jobs/$job/checkpoints" | python3 -c '
import json,sys
c=json.load(sys.stdin)
n=c["counts"]; l=(c.get("latest") or {}).get("completed") or {}
print(n["completed"], n["failed"], l.get("state_size",0), l.get("checkpointed_size",0), l.get("end_to_end_duration",0))'
}
published() { grep -oE '[0-9]+ records,' "$out/load.err" | tail -1 | grep -oE '[0-9]+' || echo 0; }

t0=$(date +%s)
printf '# %s\n' "t_s published consumed lag completed failed state_MB checkpointed_MB ckpt_ms"
while true; do
  sleep 10
  t=$(($(date +%s) - t0))
  p=$(published)
  if ! kill -0 $load 2>/dev/null; then
    p=$(grep -oE ' [0-9]+ records \(' "$out/load.out" | grep -oE '[0-9]+' || echo "$p")
  fi
  c=$(consumed)
  read -r done failed state chk dur < <(checkpoints)
  printf '%d %d %d %d %d %d %.1f %.1f %d\n' "$t" "$p" "$c" $((p - c)) "$done" "$failed" \
    "$(echo "$state / 1000000" | bc -l)" "$(echo "$chk / 1000000" | bc -l)" "$dur"
  if ! kill -0 $load 2>/dev/null && [ "$c" -ge "$p" ]; then break; fi
done
wait $load || echo "load exit $?"
# the latest checkpoint per operator, and the TaskManagers' heap, before the job is stopped
REST=$rest JOB=$job RANKS=$ranks python3 - <<'EOF2' || echo "checkpoint details unavailable"
import json, os, urllib.request
rest, job, ranks = os.environ["REST"], os.environ["JOB"], int(os.environ["RANKS"])
get = lambda path: json.load(urllib.request.urlopen(rest + path))
c = get(f"/jobs/{job}/checkpoints")
l = c["latest"]["completed"]
print(f"checkpoints: {c['counts']['completed']} completed, {c['counts']['failed']} failed")
print(f"latest checkpoint {l['id']}: state {l['state_size'] / 1e6:.1f} MB, "
      f"{l['state_size'] / ranks:.0f} B per rank key; per operator:")
names = {v["id"]: v["name"] for v in get(f"/jobs/{job}")["vertices"]}
for vid, t in get(f"/jobs/{job}/checkpoints/details/{l['id']}")["tasks"].items():
    print(f"  {names.get(vid, vid)}: {t['state_size'] / 1e6:.1f} MB")
for h in c.get("history", []):
    if h["status"] == "FAILED":
        print(f"failed checkpoint {h['id']}: {h.get('failure_message')}")
for tm in get("/taskmanagers")["taskmanagers"]:
    m = {x["id"]: float(x["value"]) for x in
         get(f"/taskmanagers/{tm['id']}/metrics?get=Status.JVM.Memory.Heap.Used,Status.JVM.Memory.Heap.Max")}
    print(f"taskmanager heap used {m['Status.JVM.Memory.Heap.Used'] / 1e6:.0f} "
          f"of {m['Status.JVM.Memory.Heap.Max'] / 1e6:.0f} MB")
EOF2
# Flink counts a checkpoint it could not trigger (tasks still deploying) as failed; the log tells
# those from checkpoints that were taken and failed.
echo "checkpoints not triggered, tasks not yet running: $(grep -c 'Failed to trigger checkpoint.*not being executed' "$dir"/log/jobmanager*.log || true)"
echo "checkpoints declined or failed once triggered: $(grep -cE 'Decline checkpoint|Checkpoint [0-9]+ of job .* (failed|expired)' "$dir"/log/jobmanager*.log || true)"
cat "$out/load.out"
sleep 20 # the last windows: the watermark passes them once the idleness has passed

"$collscope" tail --bootstrap "$kafka" --json --timeout 120s collscope.attribution \
  >"$out/attribution.jsonl" 2>"$out/tail.err" || true
python3 - "$out/attribution.jsonl" "${planted[@]}" <<'EOF' | tee "$out/summary.txt"
import json, sys, collections
path, planted = sys.argv[1], sys.argv[2:]
windows = collections.Counter()
by_comm = collections.defaultdict(list)
for line in open(path):
    r = json.loads(line)
    v = r["value"]
    windows[v["communicator"]] += 1
    by_comm[v["communicator"]].append(v)
print(f"attributions: {sum(windows.values())} for {len(windows)} communicators; windows per communicator: "
      f"min {min(windows.values())} max {max(windows.values())}")
names = collections.Counter()
for comm, vs in by_comm.items():
    for v in vs:
        for f in v["findings"]:
            names[comm] += 1
print(f"communicators with any finding: {len(names)}")
for p in planted:
    comm = p.split(":")[0]
    vs = sorted(by_comm.get(comm, []), key=lambda v: v["window_start"])
    tokens = [",".join(f"{f['kind']}({str(f['from_rank'])+'->' if f['from_rank']>=0 else ''}{f['rank']})" for f in v["findings"]) or "NONE" for v in vs]
    print(f"{p}: {len(vs)} windows: {' '.join(tokens)}")
others = [c for c in names if c not in {p.split(':')[0] for p in planted}]
print(f"findings in unplanted communicators: {sum(names[c] for c in others)} in {len(others)} communicators")
EOF
