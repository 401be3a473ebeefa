#!/usr/bin/env bash
# On a machine with two GPUs (nvidia-h200-x2), after dev/gpu-carry.sh brought .carry/ there:
# the GPU suite with ranks on both GPUs (2-rank cases: one rank per GPU with peer access; the
# IPC test: one process per GPU), PyTorch's NCCL all-reduce (dev/nccl_allreduce_bench.py), then
# in the same machine session `bench gpu --ranks 2 --baseline` on NCCL's rounds (one rank per
# GPU, the same method), which adds NCCL's time and a class against it to every row.
# Everything goes into one archive, OUT_DIR/x2.tgz (the device tool returns few files).
set -u
cd "$(dirname "$0")/.."
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
J=.carry/gpu-node/jre/bin/java
CS=.carry/gpu-node/bin/collscope
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
SIZES=${SIZES:-4K,64K,256K,1M,16M}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvidia-smi topo -m; } > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
for t in ${TESTS:-CudaCollectiveGpuTest ProcessPerGpuGpuTest}; do
  timeout 300 $J -cp ".carry/gpu-node/lib/*:.carry/test/*" org.junit.platform.console.ConsoleLauncher \
    --disable-banner --details=tree --select-class "io.collscope.cuda.$t" > "$O/gpu-tests-$t.log" 2>&1
  echo "$t rc=$?"; grep -E "tests (successful|failed)" "$O/gpu-tests-$t.log"
done
# NCCL first: its log (stdout only, torchrun's warnings go to bench-nccl.err) is the baseline.
timeout 200 torchrun --nproc_per_node=2 dev/nccl_allreduce_bench.py --sizes "$SIZES" \
  > "$O/bench-nccl.log" 2> "$O/bench-nccl.err"
echo "nccl bench rc=$?"; cat "$O/bench-nccl.log"
# Without NCCL's rounds (torch missing, a failed run) osar is still measured, without NCCL columns.
BASELINE=()
if grep -q '^nccl-rounds,' "$O/bench-nccl.log"; then
  BASELINE=(--baseline "$O/bench-nccl.log")
else
  echo "no nccl-rounds lines in bench-nccl.log: bench gpu without --baseline"; tail -5 "$O/bench-nccl.err"
fi
timeout 200 $CS bench gpu --ranks 2 --sizes "$SIZES" ${BASELINE[@]+"${BASELINE[@]}"} > "$O/bench-osar.log" 2>&1
echo "osar bench rc=$?"; cat "$O/bench-osar.log"
# Two-GPU recordings: one rank per GPU, in one process (peer access) and as one process per GPU
# (CUDA IPC), each process recording its own rank; `demo --replay` merges the files.
rec2() {  # NAME INJECT
  timeout 60 $CS emit --backend cuda --ranks 2 --seconds 22 --interval 1s --inject "$2" \
    --cluster h200x2 --job "x2-$1" --communicator tp0 --record "$O/x2-$1.snapshots" > "$O/x2-$1.log" 2>&1
  echo "record x2-$1 rc=$?"; tail -1 "$O/x2-$1.log"
}
rec2ipc() {  # NAME INJECT
  local rv; rv=$(mktemp -d /dev/shm/collscope-x2.XXXX)
  for r in 0 1; do
    timeout 90 $CS emit --backend cuda --ranks 2 --rank $r --device $r --rendezvous "$rv" --seconds 22 \
      --interval 1s --inject "$2" --cluster h200x2 --job "x2-ipc-$1" --communicator tp0 \
      --record "$O/x2-ipc-$1.rank$r.snapshots" > "$O/x2-ipc-$1.rank$r.log" 2>&1 &
  done
  wait; echo "record x2-ipc-$1 done"; tail -qn1 "$O"/x2-ipc-$1.rank*.log; rm -rf "$rv"
}
if [[ "${RECORD:-1}" == 1 ]]; then
  rec2 slow-rank-1 slow-rank=1:200us
  rec2ipc slow-rank-0 slow-rank=0:200us
fi
mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/x2.tgz" -C "$O" .
