#!/usr/bin/env bash
# On a GPU machine, after dev/gpu-carry.sh brought .carry/ there: the GPU test suite (both
# placements that fit the machine), the benchmark and recorded emitter runs, all written to
# OUT_DIR (default $OUT or /tmp/out). BENCH_ARGS narrows the benchmark (default: all shapes).
set -u
cd "$(dirname "$0")/.."
export CUDA_DEVICE_MAX_CONNECTIONS=32
J=.carry/gpu-node/jre/bin/java
CS=.carry/gpu-node/bin/collscope
O=${1:-${OUT:-/tmp/out}}
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$O/gpu.txt" 2>&1
nvidia-smi topo -m >> "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
echo "== tests"
for t in CudaCollectiveGpuTest ProcessPerGpuGpuTest; do
  timeout 300 $J -cp ".carry/gpu-node/lib/*:.carry/test/*" org.junit.platform.console.ConsoleLauncher \
    --disable-banner --details=tree --select-class "io.collscope.cuda.$t" > "$O/gpu-tests-$t.log" 2>&1
  echo "$t rc=$?"; grep -E "tests (successful|failed|skipped)" "$O/gpu-tests-$t.log"
done
echo "== bench"
timeout 280 $CS bench gpu ${BENCH_ARGS:-} > "$O/bench.log" 2>&1; echo "bench rc=$?"; cat "$O/bench.log"
record() {  # NAME RANKS SECONDS [INJECT]
  timeout $(( $3 + 30 )) $CS emit --backend cuda --ranks "$2" --seconds "$3" --interval 1s \
    ${4:+--inject "$4"} --cluster h200 --job "gpu-$1" --communicator tp0 \
    --record "$O/cuda-$1.snapshots" > "$O/cuda-$1.log" 2>&1
  echo "record $1 rc=$?"; tail -2 "$O/cuda-$1.log"
}
echo "== recordings"
record slow-rank-1 4 ${REC_SECONDS:-25} slow-rank=1:200us
record slow-link-3-6 8 ${REC_SECONDS:-25} 'slow-link=3->6:200us'
record two-culprits 8 ${REC_SECONDS:-25} 'slow-rank=1:200us,slow-link=3->6:200us'
record clean 4 ${REC_SECONDS:-25}
ls -la "$O"
