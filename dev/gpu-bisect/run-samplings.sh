#!/usr/bin/env bash
# On the device, from the checkout's root, after dev/gpu-carry-worktree.sh (CARRY, default
# .carry/main): `bench gpu` (OsarBench) once per kernel image in IMAGES (names under
# CARRY/variants; "runtime" for the carried runtime's own) and sampling in SAMPLINGS (1 in n
# collectives accounted, -Dcollscope.osar.sampleEvery), images interleaved within each sampling,
# JVM options BENCH_OPTS (-Dcollscope.bench.launch=stream: host launches, as the emitter does),
# RANKS (2) x SIZES (8M,16M) x DTYPES (f32), ROUNDS (9) rounds each, into OUT_DIR/samplings.tgz. What a sampled
# collective costs apart from an unsampled one's overhead: n = 65536 leaves (almost) only the
# latter, n = 1 the former without cold code between.
set -u
source "$(dirname "$0")/device-env.sh"
for n in ${SAMPLINGS:-1 16 64 65536}; do
  for v in ${IMAGES:-runtime}; do
    pre=""; [[ "$v" == runtime ]] || pre="$C/variants/$v:"
    log="bench-$v-sample-every-$n"; k=2
    while [[ -e "$O/$log.log" ]]; do log="bench-$v-sample-every-$n-$k"; k=$((k + 1)); done
    timeout 120 $J ${BENCH_OPTS:-} -Dcollscope.osar.sampleEvery=$n -cp "$pre$C/gpu-node/lib/*" io.collscope.cuda.OsarBench \
      --ranks=${RANKS:-2} --sizes=${SIZES:-8M,16M} --dtypes=${DTYPES:-f32} --rounds=${ROUNDS:-9} > "$O/$log.log" 2>&1
    echo "$log rc=$?"; grep -E "^\| (f32|bf16)" "$O/$log.log" | cut -d'|' -f2-8
    mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/samplings.tgz" -C "$O" .
  done
done
