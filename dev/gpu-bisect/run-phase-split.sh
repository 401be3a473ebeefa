#!/usr/bin/env bash
# On nvidia-h200-x2, from the checkout's root: where the time of a collective goes on each data
# path. `collscope emit --backend cuda --ranks 2` (one rank per GPU) records SECONDS_EACH s at each
# of ELEMENTS (f32 elements per rank) with the pull path and with the push path
# (-Dcollscope.osar.pushBytes), into OUT_DIR/phase-split.tgz; then, here:
#   java -cp "launcher/target/lib/*" dev/gpu-bisect/PhaseSplit.java phase-*.snapshots
# CARRY: dev/gpu-carry-worktree.sh's folder plus kafka-clients-subset.jar (dev/gpu-main-check.sh).
set -u
C=${CARRY:-.carry/main}
CS=$C/gpu-node/bin/collscope
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
for e in ${ELEMENTS:-262144 4194304}; do
  for m in pull push; do
    pb=1099511627776; [[ $m == push ]] && pb=0
    COLLSCOPE_JAVA_OPTS="-Dcollscope.osar.pushBytes=$pb" timeout 60 $CS emit --backend cuda --ranks 2 \
      --elements "$e" --seconds "${SECONDS_EACH:-3}" --interval 1s --cluster h200x2 \
      --job "phase-$m-$e" --communicator tp0 --record "$O/phase-$m-$e.snapshots" > "$O/phase-$m-$e.log" 2>&1
    echo "$m $e rc=$?"; tail -1 "$O/phase-$m-$e.log"
  done
done
mkdir -p "$OUT_DIR"; tar czf "$OUT_DIR/phase-split.tgz" -C "$O" .
