#!/usr/bin/env bash
# On nvidia-h200-x2, from the checkout's root: where the time of a collective goes, from the
# kernel's own phase counters. `collscope emit --backend cuda --ranks 2` (one rank per GPU) records
# SECONDS_EACH s per case into OUT_DIR/phase-split.tgz; then, here:
#   java -cp "launcher/target/lib/*" dev/gpu-bisect/PhaseSplit.java phase-*.snapshots
# Cases: by default each of ELEMENTS (f32 elements per rank) on the pull and on the push path
# (-Dcollscope.osar.pushBytes; run 77). IMAGE=NAME instead compares the committed kernel with
# another image, CARRY/variants/NAME (build-variants.sh, BASE_REV=...), at 16 MB: the image
# accounting every collective, the committed kernel with -Dcollscope.osar.sampleEvery=1 and =16
# (run 81, then run from an inline copy of this).
# CARRY: dev/gpu-carry-worktree.sh's folder plus kafka-clients-subset.jar (dev/gpu-main-check.sh).
set -u
C=${CARRY:-.carry/main}
J=$C/gpu-node/jre/bin/java
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
record() {  # NAME IMAGE(main: the committed one) ELEMENTS JAVA_OPTION
  local pre=""; [[ $2 == main ]] || pre="$C/variants/$2:"
  timeout 60 $J "$4" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$pre$C/gpu-node/lib/*" \
    io.collscope.cli.NodeCli emit --backend cuda --ranks 2 --elements "$3" \
    --seconds "${SECONDS_EACH:-3}" --interval 1s --cluster h200x2 --job "phase-$1" \
    --communicator tp0 --record "$O/phase-$1.snapshots" > "$O/phase-$1.log" 2>&1
  echo "$1 rc=$?"; tail -1 "$O/phase-$1.log"
}
if [[ -n "${IMAGE:-}" ]]; then
  record "$IMAGE-s1-16M" "$IMAGE" 4194304 -Dcollscope.osar.sampleEvery=1
  record "main-s1-16M" main 4194304 -Dcollscope.osar.sampleEvery=1
  record "main-s16-16M" main 4194304 -Dcollscope.osar.sampleEvery=16
else
  for e in ${ELEMENTS:-262144 4194304}; do
    record "pull-$e" main "$e" -Dcollscope.osar.pushBytes=1099511627776
    record "push-$e" main "$e" -Dcollscope.osar.pushBytes=0
  done
fi
mkdir -p "$OUT_DIR"; tar czf "$OUT_DIR/phase-split.tgz" -C "$O" .
