#!/usr/bin/env bash
# On nvidia-h200-x2 (or one H200: both ranks then share it), from the checkout's root, after
# dev/gpu-carry-worktree.sh brought $CARRY there: the fused FP8 GEMM + all-reduce's GPU tests,
# torch._scaled_mm + NCCL (dev/gemm_ar_torch_bench.py), `bench gemm-ar --torch` on the same
# shapes, and two recordings for the pipeline (unthrottled and throttled, the default main loop) on
# the largest shape.
# MAIN_LOOPS (default wgmma-tma, the project's default; e.g. "wgmma-tma wgmma") runs the tests and the bench
# once per GEMM main loop (GemmArModule.MAIN_LOOP), the bench's torch baseline shared; logs of mma
# carry no suffix (as before wgmma existed), others -LOOP;
# LOOP@VARIANT runs that main loop from the kernel image in $CARRY/variants/VARIANT (first on the
# classpath), logs suffixed -LOOP-VARIANT.
# Everything goes into OUT_DIR/gemm-ar.tgz (the device tool returns few files).
set -u
CARRY=${CARRY:-.carry/gemm}
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0 COLLSCOPE_JAVA_OPTS=${COLLSCOPE_JAVA_OPTS:--Xmx64g}
J=$CARRY/gpu-node/jre/bin/java
CS=$CARRY/gpu-node/bin/collscope
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
SHAPES=${SHAPES:-4096x6144x4096,16384x6144x4096,32768x6144x4096,65536x8192x4096,16384x8192x1024}
REC_SHAPE=${REC_SHAPE:-65536x8192x4096}
ROUNDS=${ROUNDS:-9}
finish() { mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/gemm-ar.tgz" -C "$O" . ; }
trap finish EXIT
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvidia-smi topo -m; } > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
JAVA_OPTS0=$COLLSCOPE_JAVA_OPTS
MAIN_LOOPS=${MAIN_LOOPS:-wgmma-tma}
sfx() { [[ $1 == mma ]] || echo "-${1/@/-}"; }
loop() { echo "${1%%@*}"; }
pre() { [[ $1 == *@* ]] && echo "$CARRY/variants/${1#*@}:"; }
if [[ "${TESTS:-1}" == 1 ]]; then
  for ml in $MAIN_LOOPS; do
    timeout 240 $J -Dcollscope.gemmar.mainLoop=$(loop $ml) -cp "$(pre $ml)$CARRY/gpu-node/lib/*:$CARRY/test/*" \
      org.junit.platform.console.ConsoleLauncher \
      --disable-banner --details=tree --select-class io.collscope.cuda.GemmAllReduceGpuTest \
      > "$O/gpu-tests$(sfx $ml).log" 2>&1
    echo "GemmAllReduceGpuTest ($ml) rc=$?"
    grep -E "tests (successful|failed)|rank [01] |MethodSource|✘" "$O/gpu-tests$(sfx $ml).log" | head -60
    finish
  done
fi
if [[ "${TORCH:-1}" == 1 ]]; then
  timeout 200 torchrun --nproc_per_node=2 "$CARRY/dev/gemm_ar_torch_bench.py" --shapes "$SHAPES" \
    --rounds "$ROUNDS" > "$O/bench-torch.log" 2> "$O/bench-torch.err"
  echo "torch bench rc=$?"; cat "$O/bench-torch.log"; tail -3 "$O/bench-torch.err"
  finish
fi
if [[ "${BENCH:-1}" == 1 ]]; then
  TORCH_ARG=(); grep -q '^torch-rounds,' "$O/bench-torch.log" 2>/dev/null && TORCH_ARG=(--torch "$O/bench-torch.log")
  for ml in $MAIN_LOOPS; do
    # shellcheck disable=SC2086
    timeout ${BENCH_TIMEOUT:-330} $J -Dorg.slf4j.simpleLogger.defaultLogLevel=warn $JAVA_OPTS0 -Dcollscope.gemmar.mainLoop=$(loop $ml) \
      -cp "$(pre $ml)$CARRY/gpu-node/lib/*" io.collscope.cli.NodeCli \
      bench gemm-ar --ranks 2 --shapes "$SHAPES" --rounds "$ROUNDS" ${TORCH_ARG[@]+"${TORCH_ARG[@]}"} \
      > "$O/bench-gemm-ar$(sfx $ml).log" 2>&1
    echo "gemm-ar bench ($ml) rc=$?"; cat "$O/bench-gemm-ar$(sfx $ml).log"
    finish
  done
fi
if [[ "${RECORD:-1}" == 1 ]]; then
  for thr in off on; do
    timeout 60 $CS emit --ranks 2 --backend cuda --gemm-ar "$REC_SHAPE" --throttle $thr --seconds ${REC_SECONDS:-22} \
      --interval 1s --cluster h200x2 --job "gemm-ar-throttle-$thr" --communicator tp0 \
      --record "$O/gemm-ar-throttle-$thr.snapshots" > "$O/gemm-ar-throttle-$thr.log" 2>&1
    echo "record throttle $thr rc=$?"; tail -2 "$O/gemm-ar-throttle-$thr.log"
    finish
  done
fi
