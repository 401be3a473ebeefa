#!/usr/bin/env bash
# Builds the kernel image (sm_90a SASS + compute_90 PTX) when the CUDA sources changed.
# The image and the hash of the sources it was built from are committed under
# src/main/resources/collscope/cuda/, so machines without nvcc use the prebuilt image;
# FatbinFreshnessTest fails when the committed image is stale.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../resources/collscope/cuda"
hash=$(cd "$here" && cat osar.cu osar_params.h counter_block.h | sha256sum | cut -d' ' -f1)
if [[ -f "$out/osar.fatbin" && "$(cat "$out/osar.fatbin.sha256" 2>/dev/null)" == "$hash" ]]; then
  exit 0
fi
NVCC="${NVCC:-$(command -v nvcc || true)}"
if [[ -z "$NVCC" ]]; then
  echo "build-fatbin: CUDA sources changed but nvcc is not on PATH; the committed osar.fatbin is stale" >&2
  exit 0
fi
mkdir -p "$out"
"$NVCC" -O3 -fatbin -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90 \
  -o "$out/osar.fatbin" "$here/osar.cu"
echo "$hash" > "$out/osar.fatbin.sha256"
echo "build-fatbin: rebuilt osar.fatbin ($hash)" >&2
