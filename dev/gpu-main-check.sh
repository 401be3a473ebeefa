#!/usr/bin/env bash
# On nvidia-h200-x2, the check of main after a session's merges, in one device call: the GPU test
# classes (both placements, the stop agreement, the fused GEMM + all-reduce) with the JUnit console
# launcher, then the NCCL plugin's straggler phase under the sidecar with the committed plugin
# (dev/gpu-nccl-profiler-run.sh, no overhead rounds). Build the carry here first:
#   dev/gpu-carry-worktree.sh   (into .carry/<branch>), then add Kafka's exception classes
#   (org/apache/kafka/common/errors/*, *Exception*.class of kafka-clients, ~110 KB) as
#   CARRY/gpu-node/lib/kafka-clients-subset.jar: the CLI's command line reflects on them and
#   --record loads nothing more, while the whole client would not fit the 64 MiB the device takes.
# Usage on the device, from the checkout's root: CARRY=.carry/main dev/gpu-main-check.sh RUN [OUT_DIR]
set -u
cd "$(dirname "$0")/.."
RUN=${1:?run number}
C=${CARRY:-.carry/main}
OUT_DIR=${2:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
J=$C/gpu-node/jre/bin/java
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvidia-smi topo -m; } > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
git log -1 --format='%H %s' > "$O/commit.txt" 2>/dev/null || true
for t in ${TESTS:-cuda.CudaCollectiveGpuTest cuda.ProcessPerGpuGpuTest cuda.StopAgreementTest cuda.GemmAllReduceGpuTest}; do
  timeout 300 $J -cp "$C/gpu-node/lib/*:$C/test/*" org.junit.platform.console.ConsoleLauncher \
    --disable-banner --details=tree --select-class "io.collscope.$t" > "$O/gpu-tests-${t#*.}.log" 2>&1
  echo "$t rc=$?"; grep -E "tests (successful|failed|skipped)" "$O/gpu-tests-${t#*.}.log"
  grep -E "dead peer|peer abort|✘" "$O/gpu-tests-${t#*.}.log" | head -8
done
if [[ "${NCCL:-1}" == 1 ]]; then
  cp gpu-emitter/src/main/resources/collscope/nccl/libnccl-profiler-collscope.so "$C/"
  mkdir -p "$O/nccl"
  CARRY=$C ROUNDS=0 STRAGGLER_SECONDS=${STRAGGLER_SECONDS:-20} RUN_TIMEOUT=120 \
    bash dev/gpu-nccl-profiler-run.sh "$RUN" "$O/nccl" > "$O/nccl/driver.log" 2>&1
  tail -25 "$O/nccl/driver.log"
fi
mkdir -p "$OUT_DIR"; tar -czf "$OUT_DIR/main-check.tgz" -C "$O" .
ls -la "$OUT_DIR"
