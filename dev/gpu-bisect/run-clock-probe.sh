#!/usr/bin/env bash
# Issue 14: why run 52's candidate kernel read a clock rate 5-23 % low (found in run 68: the timer's end
# sample came back late; the fixed kernel is main's since run 69). On nvidia-h200-x2, from
# the checkout's root, with a carry that dev/gpu-bisect/build-clock-probe.sh completed:
#   1. clock_probe on each GPU: %globaltimer's step, and short intervals ended by a spin, by the
#      timer, and by __nanosleep back-off, against a 20 ms calibration;
#   2. ClockRateProbe per kernel image (main's, the candidate, and its two clock-sample variants,
#      make-clock-variants.py): the sampled rate beside the calibration, per rank and shape.
# Into OUT_DIR/clock/ (the caller tars OUT_DIR).
set -u
C=${CARRY:-.carry/main}
OUT_DIR=${1:-${OUT:-/tmp/out}}
O="$OUT_DIR/clock"
mkdir -p "$O"
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
J=$C/gpu-node/jre/bin/java
[[ "${SMI:-0}" == 1 ]] && { nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 50 > "$O/smi.csv" 2>&1 & SMI_PID=$!; }
[[ "${PROBE_ONLY:-0}" == 1 ]] || for d in 0 1; do timeout 30 "$C/clock/clock_probe" $d; done > "$O/clock_probe.txt" 2>&1
[[ "${PROBE_ONLY:-0}" == 1 ]] || cat "$O/clock_probe.txt"
[[ "${SMI:-0}" == 1 ]] && (sleep 4; nvidia-smi -q -d PERFORMANCE,CLOCK > "$O/smi-q.txt" 2>&1) &
for v in main ${VARIANTS:-cand cand-b0 cand-pubdirect}; do
  cp=""
  [[ $v == main ]] || cp="$C/clock/$v:"
  timeout "${PROBE_TIMEOUT:-75}" $J -cp "$cp$C/gpu-node/lib/*:$C/clock/probe.jar" io.collscope.cuda.ClockRateProbe \
    "$v" "${WORLDS:-2,4}" "${SIZES:-4096,65536,262144,1048576}" "${ROUNDS:-1,40}" "${DTYPES:-F32,BF16}" > "$O/probe-$v.csv" 2> "$O/probe-$v.err"
  echo "$v rc=$? rows=$(grep -c "^$v," "$O/probe-$v.csv")"
  # the rows outside 5 % of the calibration, as the GPU test would fail them
  awk -F, -v v="$v" 'NR > 1 && ($9 < 0.95 || $9 > 1.05) { n++; print "  off: " $0 } END { print "  " v ": " n + 0 " rows off by > 5 %" }' "$O/probe-$v.csv"
done
[[ -z "${SMI_PID:-}" ]] || kill "$SMI_PID"
