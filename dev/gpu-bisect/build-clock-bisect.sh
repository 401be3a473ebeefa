#!/usr/bin/env bash
# Here, after build-clock-probe.sh: the block-0-sampled candidate (cand-b0) with each of run 52's
# latency changes undone by make-variants-run52.py's switches, into CARRY/clock/b0-NAME, to find
# which change makes its clock sample read low (run 65: 0.95 of the calibration at 1 MiB while
# nvidia-smi showed the SM clock at 1980 MHz throughout, main 1.000).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
C="$(realpath -m "${CARRY:-$root/.carry/main}")"
cand="$root/docs/gpu-runs/2026-11-30-run52-x2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$cand/osar.cu" "$tmp/cand.cu"
cp "$cand/osar_params.h" "$root/gpu-emitter/src/main/cuda/counter_block.h" "$tmp/"
python3 "$root/dev/gpu-bisect/make-clock-variants.py" "$tmp/cand.cu" "$tmp"
python3 "$cand/make-variants-run52.py" "$tmp/cand-b0.cu" "$tmp/b0v.cu"
build() {  # NAME FLAGS...
  local n=$1; shift
  mkdir -p "$C/clock/$n/collscope/cuda"
  nvcc -O3 -fatbin -I"$tmp" -diag-suppress 177 "$@" \
    -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90 \
    -o "$C/clock/$n/collscope/cuda/osar.fatbin" "$tmp/b0v.cu"
}
build b0-base
build b0-guard -DGUARD_EVERY_TIME=1
build b0-sysfence -DSYS_FENCE_ARRIVE=1
build b0-nolocal -DNO_LOCAL_FLAG_WAIT=1
build b0-all3 -DGUARD_EVERY_TIME=1 -DSYS_FENCE_ARRIVE=1 -DNO_LOCAL_FLAG_WAIT=1
du -sh "$C/clock" >&2
