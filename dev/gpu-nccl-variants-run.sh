#!/usr/bin/env bash
# On nvidia-h200-x2: the NCCL profiler overhead taken apart (dev/nccl_overhead_variants.py), two
# torchrun jobs one after the other: the variants of dev/nccl_plugin_variants.c side by side in one
# process per rank, then NCCL without any plugin in a process of its own. CARRY (default
# .carry/nccl-cost) holds dev/ (this worktree's scripts), libnccl-plugin-variants.so and the
# libnccl-profiler-collscope.so under test. Writes into OUT_DIR: runNN.log, runNN-noplugin.log,
# date.txt, gpu.txt, plugin.sha256. Usage, from the checkout's root on the device:
#   CARRY=.carry/nccl-cost VARIANTS=none,api,coll,kch,ours:1,ours:64 dev/gpu-nccl-variants-run.sh NN [OUT_DIR]
set -u
cd "$(dirname "$0")/.."
RUN=${1:?run number}
O=${2:-${OUT:-/tmp/out}}
C=${CARRY:-.carry/nccl-cost}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p "$O"
date > "$O/date.txt"
nvidia-smi -L > "$O/gpu.txt" 2>&1
sha256sum "$C"/*.so > "$O/plugin.sha256"
rm -rf /dev/shm/cs$RUN
NCCL_PROFILER_PLUGIN=$PWD/$C/libnccl-plugin-variants.so \
  COLLSCOPE_BENCH_PLUGIN=$PWD/$C/libnccl-profiler-collscope.so COLLSCOPE_SHM_DIR=/dev/shm/cs$RUN \
  timeout ${RUN_TIMEOUT:-300} torchrun --nproc_per_node=2 $C/dev/nccl_overhead_variants.py \
  --variants "${VARIANTS:-none,api,coll,kch,ours:1,ours:16,ours:64}" --rounds ${ROUNDS:-21} \
  > "$O/run$RUN.log" 2>&1
echo "variants rc=$?"
if [[ "${NOPLUGIN:-1}" == 1 ]]; then
  timeout ${RUN_TIMEOUT:-300} torchrun --nproc_per_node=2 $C/dev/nccl_overhead_variants.py \
    --variants noplugin --rounds ${ROUNDS:-21} > "$O/run$RUN-noplugin.log" 2>&1
  echo "noplugin rc=$?"
fi
grep -Ehv '^W[0-9]{4} |UserWarning|return func' "$O"/run$RUN*.log
