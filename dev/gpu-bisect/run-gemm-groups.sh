#!/usr/bin/env bash
# Issue 15: the raster group rule measured on one rank of the fused kernel (GemmArProfile, world of
# one: the GEMM and the local epilogue, no NVLink), per shape in SHAPES, each group in RASTER_GROUPS,
# throttled and not, in ROUNDS rounds whose order rotates, so that every configuration runs early
# and late. One line per run: "round R shape S group G throttled|unthrottled: US us per call".
# On a GPU machine, from the checkout's root, with a carry (dev/gpu-carry-worktree.sh) whose
# gemm-ncu/profile.jar was built here (BUILD_ONLY=1 dev/gpu-bisect/run-gemm-ncu.sh).
set -u
C=${CARRY:-.carry/main}
J="$C/gpu-node/jre/bin/java"
CP="$C/gpu-node/lib/*:$C/gemm-ncu/profile.jar"
GROUPS_=(${RASTER_GROUPS:-4 8 16 32})  # not GROUPS: bash's own (the user's group ids)
cfgs=()
for g in "${GROUPS_[@]}"; do for th in false true; do cfgs+=("$g $th"); done; done
for shape in ${SHAPES:-65536x8192x4096 131072x8192x4096}; do
  for ((r = 0; r < ${ROUNDS:-3}; r++)); do
    n=${#cfgs[@]}
    for ((i = 0; i < n; i++)); do
      read -r g th <<< "${cfgs[$(((i + r * 3) % n))]}"
      line=$(timeout 120 $J -cp "$CP" io.collscope.cuda.GemmArProfile "$shape" ${CALLS:-5} $th false $g 2>&1 | tail -1)
      echo "round $r shape $shape group $g $([[ $th == true ]] && echo throttled || echo unthrottled): $line"
    done
  done
done
