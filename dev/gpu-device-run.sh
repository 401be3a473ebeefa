#!/usr/bin/env bash
# On a GPU machine, after dev/gpu-carry.sh brought .carry/ there: the GPU test suite, the
# benchmark and recorded emitter runs, all written to OUT_DIR (default $OUT or /tmp/out).
set -u
cd "$(dirname "$0")/.."
export CUDA_DEVICE_MAX_CONNECTIONS=32
J=.carry/gpu-node/jre/bin/java
CS=.carry/gpu-node/bin/collscope
O=${1:-${OUT:-/tmp/out}}
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
echo "== tests"
timeout 300 $J -cp ".carry/gpu-node/lib/*:.carry/test/*" org.junit.platform.console.ConsoleLauncher \
  --disable-banner --details=tree --select-class io.collscope.cuda.CudaCollectiveGpuTest > "$O/gpu-tests.log" 2>&1
echo "tests rc=$?"; tail -14 "$O/gpu-tests.log" | head -13
echo "== bench"
timeout 280 $CS bench gpu > "$O/bench.log" 2>&1; echo "bench rc=$?"; cat "$O/bench.log"
record() {  # NAME RANKS SECONDS [INJECT]
  timeout $(( $3 + 30 )) $CS emit --backend cuda --ranks "$2" --seconds "$3" --interval 1s \
    ${4:+--inject "$4"} --communicator "gpu-$1" --record "$O/cuda-$1.snapshots" 2>&1 | tail -2
}
echo "== recordings"
record slow-rank-1 4 45 slow-rank=1:200us
record slow-link-3-6 8 35 'slow-link=3->6:200us'
record slow-publish-2 4 25 slow-publish=2:100us
record clean 4 30
ls -la "$O"
