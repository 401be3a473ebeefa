#!/usr/bin/env bash
# Builds the kernel images (sm_90a SASS + compute_90a PTX) when their CUDA sources changed:
#   osar.fatbin     from osar.cu, osar_params.h, counter_block.h, memory_model.h
#   gemm_ar.fatbin  from gemm_ar.cu, gemm_ar_params.h, counter_block.h, memory_model.h
# Each image and the hash of the sources it was built from are committed under
# src/main/resources/collscope/cuda/, so machines without nvcc use the prebuilt image;
# KernelSourcesTest fails when a committed image is stale.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../resources/collscope/cuda"
NVCC="${NVCC:-$(command -v nvcc || true)}"
build() {  # NAME ARCH-FLAGS SOURCES...
  local name=$1 gencode=$2; shift 2
  local hash; hash=$(cd "$here" && cat "$@" | sha256sum | cut -d' ' -f1)
  if [[ -f "$out/$name.fatbin" && "$(cat "$out/$name.fatbin.sha256" 2>/dev/null)" == "$hash" ]]; then
    return 0
  fi
  if [[ -z "$NVCC" ]]; then
    echo "build-fatbin: CUDA sources of $name changed but nvcc is not on PATH; the committed $name.fatbin is stale" >&2
    return 0
  fi
  mkdir -p "$out"
  # shellcheck disable=SC2086
  "$NVCC" -O3 -fatbin $gencode -o "$out/$name.fatbin" "$here/$name.cu"
  echo "$hash" > "$out/$name.fatbin.sha256"
  echo "build-fatbin: rebuilt $name.fatbin ($hash)" >&2
}
build osar "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90" \
  osar.cu osar_params.h counter_block.h memory_model.h
# FP8 mma.sync needs sm_89+; the image carries sm_90a SASS and its PTX (no plain compute_90:
# the kernel is Hopper-only by design).
build gemm_ar "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90a,code=compute_90a" \
  gemm_ar.cu gemm_ar_params.h counter_block.h memory_model.h
