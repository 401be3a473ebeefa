#!/usr/bin/env bash
# A short check on nvidia-h200-x2 after a kernel change, from the checkout's root after
# dev/gpu-carry-worktree.sh: the GPU suite's CudaCollectiveGpuTest, `bench gpu --ranks 2` on
# SIZES (OsarBench's main), and the SASS of the carried kernel image. Into OUT_DIR/check.tgz.
set -u
C=${CARRY:-.carry/gpu-perf}
J=$C/gpu-node/jre/bin/java
LIB="$C/gpu-node/lib/*"
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$O/gpu.txt" 2>&1
timeout 200 $J -cp "$LIB:$C/test/*" org.junit.platform.console.ConsoleLauncher execute --disable-banner \
  --details=tree --select-class io.collscope.cuda.CudaCollectiveGpuTest > "$O/gpu-tests-CudaCollectiveGpuTest.log" 2>&1
echo "tests rc=$?"; grep -E "Test run finished|tests (successful|failed)|dead peer:" "$O/gpu-tests-CudaCollectiveGpuTest.log"
timeout 150 $J -cp "$LIB" io.collscope.cuda.OsarBench --ranks=2 --sizes=${SIZES:-4K,256K,1M,16M} > "$O/bench-osar.log" 2>&1
echo "bench rc=$?"; grep -E "^\| (f32|bf16)|reporter" "$O/bench-osar.log" | cut -d'|' -f2-10
python3 -c "import zipfile,glob,sys; open('$O/osar.fatbin','wb').write(zipfile.ZipFile(glob.glob('$C/gpu-node/lib/collscope-gpu-emitter-*.jar')[0]).read('collscope/cuda/osar.fatbin'))"
cuobjdump -sass "$O/osar.fatbin" > "$O/osar.sass" 2>&1; rm -f "$O/osar.fatbin"
mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/check.tgz" -C "$O" .
