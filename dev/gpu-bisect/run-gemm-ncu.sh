#!/usr/bin/env bash
# Issue 15: where the fused kernel's GEMM spends its time, one rank under Nsight Compute. On a GPU
# machine, from the checkout's root, with a carry (dev/gpu-carry-worktree.sh); builds
# GemmArProfile against the carry's jars first (here, where javac is: BUILD_ONLY=1), then per
# shape in SHAPES one profiled call of the unthrottled (THROTTLED=1: throttled) plain program of
# MAIN_LOOP (wgmma-tma, the default; wgmma for cp.async loads), after two unprofiled:
#   the L2 <-> SM traffic (lts__t_bytes), DRAM bytes, the tensor pipe's active cycles, the SM
#   throughput, achieved occupancy, and the duration,
# (runs 123-124: the TMA GEMM L2-bound, 75-92 % of the L2's peak; drift's DRAM bytes, unthrottled
# against THROTTLED=1). Into OUT_DIR/gemm-ncu/ (the device tool returns OUT_DIR).
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
C=${CARRY:-.carry/main}
OUT_DIR=${1:-${OUT:-/tmp/out}}
O="$OUT_DIR/gemm-ncu"
if [[ "${BUILD_ONLY:-0}" == 1 ]]; then
  tmp=$(mktemp -d)
  javac -d "$tmp" -cp "$C/gpu-node/lib/*" "$root/dev/gpu-bisect/GemmArProfile.java"
  dest=$(realpath -m "$C/gemm-ncu")
  mkdir -p "$dest" && (cd "$tmp" && jar cf "$dest/profile.jar" .)
  rm -rf "$tmp"
  echo "built $C/gemm-ncu/profile.jar"
  exit 0
fi
mkdir -p "$O"
ML=${MAIN_LOOP:-wgmma-tma}
# THROTTLED=1 profiles the throttled plain program instead (the drift's cost in L2 and DRAM bytes)
TH=${THROTTLED:-0}
[[ $TH == 1 ]] && T=_throttled TARG=true TN=throttled || T= TARG=false TN=plain
case $ML in wgmma) K=gemm_ar_fp8_bf16${T}_plain_wg ;; wgmma-tma) K=gemm_ar_fp8_bf16${T}_plain_wg_tma ;;
  mma) K=gemm_ar_fp8_bf16${T}_plain ;; *) echo "MAIN_LOOP: mma, wgmma or wgmma-tma" >&2; exit 2 ;; esac
J="$C/gpu-node/jre/bin/java -Dcollscope.gemmar.mainLoop=$ML"
CP="$C/gpu-node/lib/*:$C/gemm-ncu/profile.jar"
# two sets: the first's names are ncu's long-standing ones; the second's (the tensor pipe's wgmma
# cycles, occupancy) are Hopper's and may be named otherwise by this ncu, failing only that set
SETS=${SETS:-"gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active"}
for shape in ${SHAPES:-16384x6144x4096 65536x8192x4096 16384x8192x1024}; do
  timeout 120 $J -cp "$CP" io.collscope.cuda.GemmArProfile "$shape" 5 $TARG > "$O/$TN-$ML-$shape.txt" 2>&1
  echo "$TN $shape rc=$?: $(tail -1 "$O/$TN-$ML-$shape.txt")"
  i=0
  for metrics in $SETS; do
    i=$((i + 1))
    # launches: the check's call, then 3 timed: the third is profiled
    timeout 240 ncu --clock-control none --kernel-name regex:"^$K\$" \
      --launch-skip 2 --launch-count 1 --csv --metrics "$metrics" \
      $J -cp "$CP" io.collscope.cuda.GemmArProfile "$shape" 3 $TARG > "$O/ncu-$TN-$ML-$shape-$i.csv" 2> "$O/ncu-$TN-$ML-$shape-$i.err"
    echo "ncu $TN $shape set $i rc=$?"
    grep -E '^"[0-9]' "$O/ncu-$TN-$ML-$shape-$i.csv" | awk -F'","' '{print "  " $(NF-2) " " $(NF-1) " " $NF}' | tr -d '"'
  done
done
