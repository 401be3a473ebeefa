#!/usr/bin/env bash
# NCCL across emulated nodes on ONE GPU machine (issue 45, item 3), end to end up to the recordings:
# torchrun with 4 ranks on one GPU, each rank its own NCCL host (NCCL_HOSTID: NCCL then accepts
# several ranks on one GPU and connects them over its socket transport, NCCL_NET=Socket on lo);
# collscope's nodes are pairs of ranks: ranks 0-1 share COLLSCOPE_SHM_DIR node-0, ranks 2-3 node-1,
# and one `collscope emit --source nccl --node node-N` sidecar a node records its blocks. The
# plugin is loaded by NCCL only (NCCL_PROFILER_PLUGIN). Scenarios, one torchrun each: rank 2 sleeps
# 2 ms before each all-reduce; ranks 2 and 3 do (a slow node); nobody does. The job ends with
# destroy_process_group(). Needs .carry/gpu-node (dev/gpu-node-runtime.sh .carry/gpu-node here).
# On the GPU machine, from the checkout's root:  dev/gpu-nccl-multinode-run.sh  (into $OUT)
# SCENARIOS="name:slow,ranks ..." picks scenarios. Recordings and logs come back in recordings.tgz.
# Then, here:  bin/collscope demo --replay SCENARIO-node-*.snapshots --window 2s --interval 250ms
set -u
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/out}; W=/tmp/cs-multinode; mkdir -p "$O" "$W"; rm -rf "$W"/*
SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
note() { echo "$*" | tee -a "$O/summary.txt"; }
note "$(date -u +%FT%TZ) $(nvidia-smi -L | head -1); $(python -c 'import torch as t;print("torch", t.__version__, "nccl", t.cuda.nccl.version())' 2>&1)"
export NCCL_NVLS_ENABLE=0 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=WARN
P=gpu-emitter/src/main/c/nccl-profiler
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o "$W/plugin.so" \
  "$P/collscope_profiler.c" -lpthread > "$O/build.log" 2>&1 || { note "plugin build failed"; exit 1; }
export NCCL_PROFILER_PLUGIN=$W/plugin.so COLLSCOPE_NCCL_KERNEL_SAMPLING=${SAMPLING:-16}
cat > "$W/job.py" <<'PY'
import os, time, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
os.environ["NCCL_HOSTID"] = f"collscope-emulated-host-{rank}"  # NCCL reads it at its first init
os.environ["COLLSCOPE_SHM_DIR"] = f"{os.environ['SHM_ROOT']}/node-{rank // 2}"
slow = rank in {int(r) for r in os.environ.get("SLOW_RANKS", "").split(",") if r}
torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
x = torch.ones(1024, device="cuda")  # 4 KB
n, end = 0, time.time() + float(os.environ["RUN_SECONDS"])
while True:
    if n % 100 == 0:  # every rank leaves in the same iteration: 1 collective in 101 decides it
        stop = torch.tensor([time.time() > end], device="cuda", dtype=torch.int32)
        dist.all_reduce(stop)
        if stop.item():
            break
    if slow:
        time.sleep(0.002)  # 2 ms of host work before the collective, on this rank only
    dist.all_reduce(x); n += 1
torch.cuda.synchronize()
print(f"rank {rank}: {n} all-reduces, slow={slow}", flush=True)
dist.destroy_process_group()
print(f"rank {rank}: exit after destroy_process_group", flush=True)
PY
for s in ${SCENARIOS:-slow-rank:2 slow-node:2,3 clean:}; do
  name=${s%%:*}; ranks=${s#*:}
  for node in 0 1; do
    timeout $((SECONDS_PER_RUN + 90)) .carry/gpu-node/bin/collscope emit --source nccl \
      --shm "$W/shm/node-$node" --node "node-$node" --job "multinode-$name" \
      --record "$O/$name-node-$node.snapshots" --seconds $((SECONDS_PER_RUN + 40)) \
      --interval 250ms > "$O/$name-sidecar-$node.log" 2>&1 &
  done
  sleep 3
  SHM_ROOT=$W/shm SLOW_RANKS=$ranks RUN_SECONDS=$SECONDS_PER_RUN timeout $((SECONDS_PER_RUN + 60)) \
    torchrun --standalone --nproc_per_node 4 "$W/job.py" > "$O/$name-job.log" 2>&1
  note "$name: torchrun rc=$? ($(grep -c 'exit after destroy_process_group' "$O/$name-job.log") of 4 ranks past destroy_process_group); $(grep 'all-reduces' "$O/$name-job.log" | sort | tr '\n' ' ')"
  wait
  for node in 0 1; do note "$name node-$node sidecar: $(tail -1 "$O/$name-sidecar-$node.log")"; done
done
ls -la "$O" >> "$O/summary.txt"
(cd "$O" && tar czf recordings.tgz ./*.snapshots ./*.log && rm -f ./*.snapshots ./*-job.log ./*-sidecar-*.log)  # the device tool returns 8 files
