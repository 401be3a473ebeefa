#!/usr/bin/env bash
# On the device, from the checkout's root, after dev/gpu-carry-worktree.sh (CARRY, default
# .carry/main): `bench gpu` (OsarBench) under Nsight Systems, once per kernel image in IMAGES
# (names under CARRY/variants; "runtime" for the carried runtime's own), RANKS (2) x SIZES (8M) x
# DTYPES (f32), ROUNDS (9), graph nodes traced one by one (--cuda-graph-trace=node); then every
# osar kernel's device time per launch (dev/gpu-bisect/kernel-durations.py): an instrumented
# kernel's gap over the plain one split into a shift of every launch and the sampled launches'
# tail, which `bench gpu`'s medians of whole graphs cannot tell apart. Into OUT_DIR/nsys.tgz
# (the CSVs and summaries; the .nsys-rep files stay behind). NSYS: the nsys binary, found on
# PATH or under /usr/local/cuda and /opt/nvidia when unset. Written in the twentieth session; the
# `nvidia-h200` device image has no nsys (run 194), so it needs a machine that has Nsight Systems.
set -u
source "$(dirname "$0")/device-env.sh"
W=$(mktemp -d)
# (the CUDA 12-13 toolkits put it under their nsight-systems-YYYY.N folder, linked from bin/ or not)
NSYS=${NSYS:-$(command -v nsys || ls /usr/local/cuda/bin/nsys /usr/local/cuda-*/bin/nsys \
  /usr/local/cuda*/nsight-systems-*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)}
if [[ -z "$NSYS" || ! -x "$NSYS" ]]; then
  echo "run-nsys-kernels: no nsys found (set NSYS to its path)" | tee "$O/nsys-missing.txt"
  mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/nsys.tgz" -C "$O" .; exit 2
fi
"$NSYS" --version > "$O/nsys-version.txt" 2>&1
for v in ${IMAGES:-runtime}; do
  pre=""; [[ "$v" == runtime ]] || pre="$C/variants/$v:"
  timeout 300 "$NSYS" profile --trace=cuda --cuda-graph-trace=node --sample=none --cpuctxsw=none \
    --force-overwrite=true --output="$W/$v" \
    $J -cp "$pre$C/gpu-node/lib/*" io.collscope.cuda.OsarBench --ranks=${RANKS:-2} \
    --sizes=${SIZES:-8M} --dtypes=${DTYPES:-f32} --rounds=${ROUNDS:-9} > "$O/bench-$v.log" 2>&1
  echo "nsys $v rc=$?"; grep -E "^\| (f32|bf16)" "$O/bench-$v.log" | cut -d'|' -f2-8
  # the report's name since nsys 2023.4; gputrace before it
  "$NSYS" stats --force-export=true --report cuda_gpu_trace --format csv --output "$O/$v" "$W/$v.nsys-rep" \
    > "$O/stats-$v.log" 2>&1 ||
    "$NSYS" stats --force-export=true --report gputrace --format csv --output "$O/$v" "$W/$v.nsys-rep" \
      >> "$O/stats-$v.log" 2>&1
  csv=$(ls "$O/${v}"_*trace*.csv 2>/dev/null | head -1)
  if [[ -n "$csv" ]]; then
    gzip -k "$csv"; python3 "$(dirname "$0")/kernel-durations.py" "$csv" | tee "$O/kernels-$v.txt"
    rm -f "$csv"
  else
    echo "run-nsys-kernels: no trace CSV for $v (stats-$v.log)"; tail -5 "$O/stats-$v.log"
  fi
  mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/nsys.tgz" -C "$O" .
done
