#!/usr/bin/env bash
# On nvidia-h200-x2, from the checkout's root: the phase split (dev/gpu-bisect/PhaseSplit.java) of
# the committed kernel against another kernel image at 16 MB f32 per rank (the push path), as run 81
# compared main's with run 78's: `emit --backend cuda --ranks 2 --record` for 3 s per image and
# accounting rate. IMAGE (default rev): CARRY/variants/IMAGE (build-variants.sh, BASE_REV=...),
# which accounts every collective whatever it is told; the committed kernel runs with
# -Dcollscope.osar.sampleEvery=1 and =16. Writes OUT_DIR/phase-images.tgz; then, here:
#   java -cp "launcher/target/lib/*" dev/gpu-bisect/PhaseSplit.java phase-*.snapshots
set -u
C=${CARRY:-.carry/main}
J=$C/gpu-node/jre/bin/java
IMAGE=${IMAGE:-rev}
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
for run in "$IMAGE:1" "main:1" "main:16"; do
  img=${run%%:*} n=${run##*:}
  pre=""; [[ $img == main ]] || pre="$C/variants/$img:"
  timeout 60 $J -Dcollscope.osar.sampleEvery=$n -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$pre$C/gpu-node/lib/*" io.collscope.cli.NodeCli emit --backend cuda --ranks 2 \
    --elements 4194304 --seconds 3 --interval 1s --cluster h200x2 --job "ps-$img-$n" \
    --communicator tp0 --record "$O/phase-$img-s$n-16M.snapshots" > "$O/phase-$img-s$n.log" 2>&1
  echo "$img sample every $n rc=$?"; tail -1 "$O/phase-$img-s$n.log"
done
mkdir -p "$OUT_DIR"; tar czf "$OUT_DIR/phase-images.tgz" -C "$O" .
