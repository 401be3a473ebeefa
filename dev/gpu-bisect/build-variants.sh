#!/usr/bin/env bash
# Builds one kernel image per instrumentation bisect variant of dev/gpu-bisect/osar_variants.cu
# (a copy of osar.cu whose OMIT_* switches each remove one part of the instrumentation from the
# instrumented kernels; the plain kernels are the same in every image) into OUT/NAME/collscope/cuda/
# osar.fatbin, so that putting OUT/NAME first on the classpath makes `bench gpu` run that variant.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
inc="$here/../../gpu-emitter/src/main/cuda"
build() {  # NAME FLAGS...
  local name=$1; shift
  mkdir -p "$out/$name/collscope/cuda"
  nvcc -O3 -lineinfo -fatbin -I"$inc" -gencode arch=compute_90a,code=sm_90a "$@" \
    -o "$out/$name/collscope/cuda/osar.fatbin" "$here/osar_variants.cu"
}
build base
build no-sampler -DOMIT_SAMPLER=1
build no-totals -DOMIT_TOTALS=1
build no-phase-clocks -DOMIT_PHASE_CLOCKS=1
build no-wait-clock -DOMIT_WAIT_CLOCK=1
build no-peer-acc -DOMIT_PEER_ACC=1
build none -DOMIT_SAMPLER=1 -DOMIT_TOTALS=1 -DOMIT_PHASE_CLOCKS=1 -DOMIT_WAIT_CLOCK=1 -DOMIT_PEER_ACC=1
