#!/usr/bin/env bash
# On the device, from the checkout's root, after dev/gpu-carry-worktree.sh with VARIANTS=1:
# `bench gpu` once per instrumentation bisect variant (its kernel image first on the classpath),
# ranks 1 (no peer: no wait at all) and 2 (one per GPU where there are two), then Nsight Compute's
# source counters (per-SASS-instruction stall samples) of the base variant's plain and
# instrumented kernels at 4 KB, 1 rank. Everything into OUT_DIR/bisect.tgz.
set -u
C=${CARRY:-.carry/gpu-perf}
# a carry packed by dev/gpu-carry-pack.sh (CARRY.tgz): unpacked first
source "$(dirname "$0")/unpack-carry.sh"
J=$C/gpu-node/jre/bin/java
LIB="$C/gpu-node/lib/*"
V=$C/variants
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvidia-smi topo -m; ncu --version; } > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
cuobjdump -sass "$V/base/collscope/cuda/osar.fatbin" > "$O/base.sass" 2>&1
# OsarBench's own main (`bench gpu` without the CLI, which would need Kafka's client on the path)
# A variant NAME+smem also launches osar_publish with the collective's shared memory (the
# Launcher's experiment switch); a NAME with no image under $V is the runtime's own kernel.
for v in ${VARIANTS:-base no-sampler no-totals no-phase-clocks no-wait-clock no-peer-acc none}; do
  s=$(date +%s)
  opts=(); [[ "$v" == *+smem ]] && opts=(-Dcollscope.publishSmem=true)
  timeout 120 $J ${opts[@]+"${opts[@]}"} -cp "$V/${v%+smem}:$LIB" io.collscope.cuda.OsarBench --ranks=${RANKS:-1,2} --sizes=${SIZES:-4K,256K} --dtypes=f32 --rounds=${ROUNDS:-9} > "$O/bisect-$v.log" 2>&1
  echo "== $v rc=$? $(( $(date +%s) - s ))s"; grep '^| f32' "$O/bisect-$v.log" | cut -d'|' -f2-9
done
if [[ "${SUMS:-0}" == 1 ]]; then  # the sum tests on the runtime's own kernel
  timeout 200 $J -cp "$LIB:$C/test/*" org.junit.platform.console.ConsoleLauncher execute --disable-banner \
    --details=tree --select-method 'io.collscope.cuda.CudaCollectiveGpuTest#sumsMatchTheHostSumAndCountersCountEveryCollective(io.collscope.cuda.DType,int,long)' \
    > "$O/sums-tests.log" 2>&1
  echo "sum tests rc=$?"; grep -E "Test run finished|tests (successful|failed)" "$O/sums-tests.log"
fi
if [[ "${NCU:-1}" == 1 ]]; then
  s=$(date +%s)
  timeout 240 ncu --target-processes all --clock-control none --kernel-name regex:'osar_f32(_plain)?$' \
    --launch-skip 45 --launch-count 10 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section LaunchStats --section SchedulerStats --import-source yes \
    -o "$O/ncu-4k" -f $J -cp "$V/base:$LIB" io.collscope.cuda.OsarBench --ranks=1 --sizes=4K \
    --dtypes=f32 --rounds=1 > "$O/ncu-run.log" 2>&1
  echo "ncu rc=$? $(( $(date +%s) - s ))s"; tail -3 "$O/ncu-run.log"
  ncu -i "$O/ncu-4k.ncu-rep" --page details --csv > "$O/ncu-details.csv" 2> "$O/ncu-details.err"
  ncu -i "$O/ncu-4k.ncu-rep" --page source --print-source sass --csv > "$O/ncu-source-sass.csv" 2> "$O/ncu-source.err"
  echo "ncu export rc=$?"; head -c 600 "$O/ncu-source.err"; wc -c "$O"/ncu-*.csv
fi
mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/bisect.tgz" -C "$O" .
ls -la "$OUT_DIR"
