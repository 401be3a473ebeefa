#!/usr/bin/env bash
# Here, after dev/gpu-carry-worktree.sh built CARRY (default .carry/main): adds what
# run-clock-probe.sh needs under CARRY/clock/ — clock_probe (nvcc, sm_90a), ClockRateProbe compiled
# against the carry's jars (probe.jar), and one kernel image per variant (run 52's candidate as
# measured, and make-clock-variants.py's two), each as CARRY/clock/NAME/collscope/cuda/osar.fatbin
# so that putting CARRY/clock/NAME first on the classpath runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
C="$(realpath -m "${CARRY:-$root/.carry/main}")"
cand="$root/docs/gpu-runs/2026-11-30-run52-x2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$C/clock"
nvcc -O3 -arch=sm_90a -o "$C/clock/clock_probe" "$root/dev/gpu-bisect/clock_probe.cu"
mkdir -p "$tmp/classes"
javac -d "$tmp/classes" -cp "$C/gpu-node/lib/*" "$root/dev/gpu-bisect/ClockRateProbe.java"
(cd "$tmp/classes" && jar cf "$C/clock/probe.jar" .)
cp "$cand/osar.cu" "$tmp/cand.cu"
cp "$cand/osar_params.h" "$root/gpu-emitter/src/main/cuda/counter_block.h" "$tmp/"
python3 "$root/dev/gpu-bisect/make-clock-variants.py" "$tmp/cand.cu" "$tmp"
for n in ${NAMES:-cand cand-b0 cand-pubdirect cand-b0g}; do
  mkdir -p "$C/clock/$n/collscope/cuda"
  nvcc -O3 -fatbin -I"$tmp" -diag-suppress 177 \
    -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90 \
    -o "$C/clock/$n/collscope/cuda/osar.fatbin" "$tmp/$n.cu"
done
du -sh "$C/clock" >&2
