#!/usr/bin/env bash
# On nvidia-h200-x2: the NCCL profiler plugin's overhead with NCCL called directly
# (dev/nccl_overhead_direct.c: one process, one thread, both GPUs, no PyTorch in the loop), the
# variants of dev/nccl_plugin_variants.c side by side in interleaved rounds; then NCCL without any
# plugin in a process of its own (unpaired cross-check). NCCL and the CUDA runtime are the PyTorch
# install's (found through python3). CARRY (default .carry/nccl-direct) holds dev/ (this
# worktree's sources and scripts) and prebuilt fallbacks: nccl_overhead_direct,
# libnccl-plugin-variants.so; the plugin under test is the checkout's committed
# libnccl-profiler-collscope.so. Writes into OUT_DIR: runNN.log, runNN-noplugin.log, build.txt,
# env.txt (date, GPUs, libraries, sha256 of every binary). THREADS=1: one enqueuing thread per
# rank (the harness's --threads 1); PROCESSES=1: one process per rank (--processes 1). Usage, from
# the checkout's root:
#   CARRY=.carry/nccl-direct bash .carry/nccl-direct/dev/gpu-nccl-direct-run.sh NN [OUT_DIR]
# then, here: bin/collscope bench nccl-overhead runNN.log --baseline none
set -u
RUN=${1:?run number}
O=${2:-${OUT:-/tmp/out}}
C=${CARRY:-.carry/nccl-direct}
P=gpu-emitter/src/main/resources/collscope/nccl/libnccl-profiler-collscope.so
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
[[ -f $P ]] || { echo "run it from the checkout's root" >&2; exit 2; }
mkdir -p "$O" /tmp/nd
NLIB=${COLLSCOPE_NCCL_LIB:-}
CLIB=${COLLSCOPE_CUDART_LIB:-}
if [[ -z $NLIB || -z $CLIB ]]; then
  SP=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
  NLIB=$(find "$SP/nvidia" -name 'libnccl.so.2' 2>/dev/null | head -1)
  CLIB=$(find "$SP/nvidia" -name 'libcudart.so.1[0-9]' 2>/dev/null | sort | tail -1)
fi
{
  date -u
  nvidia-smi -L
  nvidia-smi topo -m
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  echo "nccl $NLIB"
  echo "cudart $CLIB"
  nproc
} > "$O/env.txt" 2>&1
{
  gcc --version | head -1
  if gcc -O2 -Wall -o /tmp/nd/nccl_overhead_direct "$C/dev/nccl_overhead_direct.c" -ldl -lm -lpthread; then
    echo "built nccl_overhead_direct here"
  else
    cp "$C/nccl_overhead_direct" /tmp/nd/ && echo "using the carried nccl_overhead_direct"
  fi
  if gcc -O2 -fPIC -shared -I"$PWD/dev" -o /tmp/nd/libnccl-plugin-variants.so \
    "$C/dev/nccl_plugin_variants.c" -ldl; then
    echo "built libnccl-plugin-variants.so here"
  else
    cp "$C/libnccl-plugin-variants.so" /tmp/nd/ && echo "using the carried libnccl-plugin-variants.so"
  fi
  cp "$P" /tmp/nd/libnccl-profiler-collscope.so
  sha256sum "$P" "$C"/*.so "$C/nccl_overhead_direct" /tmp/nd/*
} > "$O/build.txt" 2>&1
cat "$O/env.txt" "$O/build.txt"
rm -rf /dev/shm/cs$RUN
COLLSCOPE_NCCL_LIB=$NLIB COLLSCOPE_CUDART_LIB=$CLIB \
  NCCL_PROFILER_PLUGIN=/tmp/nd/libnccl-plugin-variants.so \
  COLLSCOPE_BENCH_PLUGIN=/tmp/nd/libnccl-profiler-collscope.so COLLSCOPE_SHM_DIR=/dev/shm/cs$RUN \
  timeout ${RUN_TIMEOUT:-110} /tmp/nd/nccl_overhead_direct --sizes ${SIZES:-4K,64K,1M,16M} \
  --variants "${VARIANTS:-none,kch,ours:64,ours:1,none@aa}" --rounds ${ROUNDS:-31} \
  --round-ms ${ROUND_MS:-30} --threads ${THREADS:-0} --processes ${PROCESSES:-0} > "$O/run$RUN.log" 2>&1
echo "direct rc=$?"
if [[ "${NOPLUGIN:-1}" == 1 ]]; then
  COLLSCOPE_NCCL_LIB=$NLIB COLLSCOPE_CUDART_LIB=$CLIB timeout ${NOPLUGIN_TIMEOUT:-30} \
    /tmp/nd/nccl_overhead_direct --sizes ${SIZES:-4K,64K,1M,16M} --variants none,none@aa \
    --rounds ${NOPLUGIN_ROUNDS:-15} --round-ms ${ROUND_MS:-30} --threads ${THREADS:-0} --processes ${PROCESSES:-0} \
    > "$O/run$RUN-noplugin.log" 2>&1
  echo "noplugin rc=$?"
fi
# the no-plugin log only where it was run (NOPLUGIN=0 skips it): the script's status is grep's
grep -v '^nccl-overhead' "$O/run$RUN.log" $([[ -f "$O/run$RUN-noplugin.log" ]] && echo "$O/run$RUN-noplugin.log")
