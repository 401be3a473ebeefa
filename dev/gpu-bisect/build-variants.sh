#!/usr/bin/env bash
# Builds one kernel image per bisect variant of osar.cu (make-variants.py: OMIT_* switches each
# remove one part of the instrumentation from the instrumented kernels, the plain kernels being the
# same in every image; MUTANT_* break the data path on purpose) into OUT/NAME/collscope/cuda/
# osar.fatbin, so that putting OUT/NAME first on the classpath makes `bench gpu` or the GPU tests
# run that variant (BASE_REV, BASE_PATCH and BASE_SRC below build whole other kernels). ONLY="NAME ..." builds those images alone; LINEINFO= (empty) leaves out -lineinfo
# (images a third the size, for a carry near the device tool's 64 MiB).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$1"
inc="$here/../../gpu-emitter/src/main/cuda"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make-variants.py" "$inc/osar.cu" "$tmp/osar_variants.cu"
build() {  # NAME FLAGS...  (ONLY="NAME ...": those images alone)
  local name=$1; shift
  [[ -z "${ONLY:-}" || " $ONLY " == *" $name "* ]] || return 0
  mkdir -p "$out/$name/collscope/cuda"
  nvcc -O3 ${LINEINFO--lineinfo} -fatbin -I"$inc" -gencode arch=compute_90a,code=sm_90a "$@" \
    -o "$out/$name/collscope/cuda/osar.fatbin" "$tmp/osar_variants.cu"
}
build base
build mutant-stale-slot -DMUTANT_STALE_SLOT=1
build mutant-stale-gather -DMUTANT_STALE_GATHER=1
build no-sampler -DOMIT_SAMPLER=1
build no-totals -DOMIT_TOTALS=1
build no-phase-clocks -DOMIT_PHASE_CLOCKS=1
build no-wait-clock -DOMIT_WAIT_CLOCK=1
build no-peer-acc -DOMIT_PEER_ACC=1
build no-account -DOMIT_ACCOUNT=1
build no-handover -DOMIT_HANDOVER=1
build no-div -DOMIT_DIV=1
build pub-empty -DPUB_EMPTY=1
build pub-no-fence -DPUB_NO_FENCE=1
build none -DOMIT_SAMPLER=1 -DOMIT_TOTALS=1 -DOMIT_PHASE_CLOCKS=1 -DOMIT_WAIT_CLOCK=1 -DOMIT_PEER_ACC=1
# Another kernel as it is, no switches, to measure against this one in the same machine session:
# BASE_REV (a revision's three sources; runs 50-51: main's kernel) builds image "rev"; BASE_SRC (a
# folder with osar.cu and, if it differs, osar_params.h, e.g. run 52's candidate, in `git show a0d48d5:docs/gpu-runs/2026-11-30-run52-x2/osar.cu`,
# ) builds image "src"
if [[ -n "${BASE_REV:-}" ]]; then
  mkdir -p "$tmp/rev" "$out/rev/collscope/cuda"
  for f in osar.cu osar_params.h counter_block.h memory_model.h; do  # the last since 2026-12-01
    git -C "$here" show "$BASE_REV:gpu-emitter/src/main/cuda/$f" > "$tmp/rev/$f" 2>/dev/null || rm -f "$tmp/rev/$f"
  done
  nvcc -O3 ${LINEINFO--lineinfo} -fatbin -gencode arch=compute_90a,code=sm_90a \
    -o "$out/rev/collscope/cuda/osar.fatbin" "$tmp/rev/osar.cu"
fi
# BASE_PATCH (a unified diff against this checkout's osar.cu, e.g. a run folder's candidate such as
# a0d48d5:docs/gpu-runs/2026-12-01-run143-h200/seq-bytes.patch (git show), whose headers it must not need to change)
# builds image "patch": a candidate kept as its difference, not as a copy
if [[ -n "${BASE_PATCH:-}" ]]; then
  mkdir -p "$tmp/patch" "$out/patch/collscope/cuda"
  cp "$inc/osar.cu" "$tmp/patch/osar.cu"
  patch -s -d "$tmp/patch" -p1 < "$BASE_PATCH"
  nvcc -O3 ${LINEINFO--lineinfo} -fatbin -I"$inc" -gencode arch=compute_90a,code=sm_90a \
    -o "$out/patch/collscope/cuda/osar.fatbin" "$tmp/patch/osar.cu"
fi
if [[ -n "${BASE_SRC:-}" ]]; then
  mkdir -p "$out/src/collscope/cuda"
  nvcc -O3 -lineinfo -fatbin -I"$BASE_SRC" -I"$inc" -gencode arch=compute_90a,code=sm_90a \
    -o "$out/src/collscope/cuda/osar.fatbin" "$BASE_SRC/osar.cu"
fi
