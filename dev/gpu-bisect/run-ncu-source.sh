#!/usr/bin/env bash
# Issue 14: where the instrumented kernel's extra time goes at 4 KB. Nsight Compute's per-SASS
# warp-stall sampling (SourceCounters) and warp-state statistics for osar_f32 and osar_f32_plain,
# one rank (ncu serialises kernels, so ranks of one process would wait on each other), one launch
# each after 20 (LAUNCHES, default 1; SAMPLING: ncu's --sampling-interval, default its own; run 72
# took ~110 samples from one launch, too few to rank locations: LAUNCHES=50 SAMPLING=0 next).
# From the checkout's root on the device, with CARRY from dev/gpu-carry-worktree.sh.
# Into OUT_DIR/ncu-source.tgz.
set -u
C=${CARRY:-.carry/main}
J=$C/gpu-node/jre/bin/java
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
ncu --version > "$O/ncu-version.txt" 2>&1
for k in osar_f32_plain osar_f32; do
  bench=($J -cp "$C/gpu-node/lib/*" io.collscope.cuda.OsarBench --ranks=1 --sizes=4K --dtypes=f32 --rounds=1)
  timeout 100 ncu --target-processes all --clock-control none --kernel-name regex:"^$k\$" \
    --launch-skip 20 --launch-count "${LAUNCHES:-1}" ${SAMPLING:+--sampling-interval "$SAMPLING"} \
    --section SourceCounters --section WarpStateStats --page source --csv --print-source sass "${bench[@]}" > "$O/$k-source.csv" 2> "$O/$k-source.err"
  echo "$k source rc=$? lines=$(wc -l < "$O/$k-source.csv")"
  timeout 100 ncu --target-processes all --clock-control none --kernel-name regex:"^$k\$" \
    --launch-skip 20 --launch-count 1 --section WarpStateStats --section SchedulerStats \
    --section LaunchStats --page details "${bench[@]}" > "$O/$k-details.txt" 2> "$O/$k-details.err"
  echo "$k details rc=$?"; grep -E "Stall|Warp Cycles|Duration|Issued" "$O/$k-details.txt" | head -20
done
mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/ncu-source.tgz" -C "$O" .
