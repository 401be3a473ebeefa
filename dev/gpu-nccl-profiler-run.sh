#!/usr/bin/env bash
# On nvidia-h200-x2, after dev/gpu-carry-worktree.sh brought CARRY (default .carry/nccl) there with
# the plugin copied to CARRY/libnccl-profiler-collscope.so: the NCCL plugin's checks of
# dev/nccl_profiler_run.py (straggler phase, overhead phase, graph capture, the blocks' counters
# after each) under the node's sidecar, `collscope emit --source nccl --record`, which records the
# straggler phase only (it is stopped when rank 0 creates the marker). Writes into OUT_DIR:
#   runNN.log (torchrun's output), sidecar.log, nccl-slow-rank-1.snapshots, date.txt, plugin.sha256
# The sidecar needs kafka-clients even with --record (its command line loads Kafka's classes):
# build the carry with KEEP_KAFKA=1 dev/gpu-carry-worktree.sh (run 43's first attempt lost its
# recording to that). Usage, from the checkout's root on the device (copy this script into dev/):
#   CARRY=.carry/nccl dev/gpu-nccl-profiler-run.sh RUN_NUMBER [OUT_DIR]
set -u
cd "$(dirname "$0")/.."
RUN=${1:?run number}
O=${2:-${OUT:-/tmp/out}}
C=${CARRY:-.carry/nccl}
SO=$PWD/$C/libnccl-profiler-collscope.so
SHM=/dev/shm/cs$RUN
CS=$C/gpu-node/bin/collscope
export NCCL_NVLS_ENABLE=0
ls $C/gpu-node/lib/kafka-clients-*.jar > /dev/null || { echo "no kafka-clients in $C: KEEP_KAFKA=1"; exit 2; }
mkdir -p "$O"; rm -rf "$SHM"; mkdir -p "$SHM"
date > "$O/date.txt"; sha256sum "$SO" > "$O/plugin.sha256"
$CS emit --source nccl --shm "$SHM" --cluster h200 --job "nccl-run$RUN-slow-rank-1" \
  --record "$O/nccl-slow-rank-1.snapshots" > "$O/sidecar.log" 2>&1 &
side=$!
NCCL_PROFILER_PLUGIN=$SO COLLSCOPE_SHM_DIR=$SHM timeout ${RUN_TIMEOUT:-170} \
  torchrun --nproc_per_node=2 $C/dev/nccl_profiler_run.py --straggler-seconds ${STRAGGLER_SECONDS:-30} \
  --delay-us 2000 --overhead-rounds ${ROUNDS:-25} --per-round 3000 --marker "$O/marker" \
  > "$O/run$RUN.log" 2>&1 &
job=$!
while [[ ! -e "$O/marker" ]] && kill -0 $job 2>/dev/null; do sleep 0.5; done
kill -TERM $side; wait $side; echo "sidecar rc=$?"
wait $job; echo "torchrun rc=$?"
rm -f "$O/marker"
cat "$O/sidecar.log"; grep -Ev '^W[0-9]{4} |UserWarning|return func' "$O/run$RUN.log"
ls -la "$O"
