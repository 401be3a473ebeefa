#!/usr/bin/env bash
# On nvidia-h200-x2, from the checkout's root, after dev/gpu-carry-worktree.sh with VARIANTS=1
# (CARRY: where it put things, default .carry/gpu-perf): the GPU suite on the committed kernel
# (ranks on both GPUs; the IPC test one process per GPU); the stale-slot mutant under the sum
# tests (they must fail); NCCL's all-reduce (dev/nccl_allreduce_bench.py), then in the same
# machine session `bench gpu` (OsarBench's main: the CLI would need Kafka's client, which the
# carried runtime leaves out) with --baseline on NCCL's rounds; then `bench gpu` once per bisect
# variant in BISECT (none by default) at BISECT_SIZES (default 4K,256K; ranks BISECT_RANKS, default 1,2); BLOCK_RULES
# (SMALL_BYTES:SMALL_BLOCKS:BYTES ..., CudaCollective.Options.blocksFor) benches the runtime's kernel under other rules for the data blocks per rank;
# MODES (bytes ...) benches the runtime's kernel with the push path from that many bytes per rank
# (CudaCollective.Options.PUSH_BYTES: 0 pushes at every size, a huge value never) at MODE_SIZES;
# PUBLISH_EVERYS (k ...) benches it with publications at most every k collectives;
# PROPS (name=value[,name=value] ...) benches it once per set of collscope.osar.NAME system
# properties given (PROP_DTYPES: f32,bf16 by default; PROP_SIZES: SIZES);
# ALGORITHMS (below) benches each data path at every size;
# SAMPLINGS (n ...) benches it with the accounting sampled 1 in n (-Dcollscope.osar.sampleEvery);
# TEST_CLASSES (default CudaCollectiveGpuTest ProcessPerGpuGpuTest) names the GPU test classes,
# run on the runtime's kernel or, with TEST_IMAGE=NAME, on CARRY/variants/NAME's;
# VARIANT_TESTS (names under CARRY/variants) runs the sum tests on those images;
# NCU=1 adds Nsight Compute's figures at NCU_SIZES (default 4K). MUTANT=0 skips the stale-slot mutant. Everything
# into OUT_DIR/x2perf.tgz.
set -u
C=${CARRY:-.carry/gpu-perf}
# a carry packed by dev/gpu-carry-pack.sh (CARRY.tgz): unpacked first
source "$(dirname "$0")/unpack-carry.sh"
J=$C/gpu-node/jre/bin/java
LIB="$C/gpu-node/lib/*"
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
SIZES=${SIZES:-4K,64K,256K,1M,16M}
# the logs so far, after every step: a command stopped at the device tool's limit still returns them
save() { mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/x2perf.tgz" -C "$O" .; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; nvidia-smi topo -m; } > "$O/gpu.txt" 2>&1
head -4 "$O/gpu.txt"
junit() {  # LOG CLASSPATH_PREFIX SELECTOR...
  local log=$1 pre=$2; shift 2
  timeout 300 $J -cp "$pre$LIB:$C/test/*" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --details=tree "$@" > "$O/$log" 2>&1
  echo "$log rc=$?"; grep -E "Test run finished|tests (successful|failed|skipped)" "$O/$log"
}
if [[ "${TESTS:-1}" == 1 ]]; then
  for t in ${TEST_CLASSES:-CudaCollectiveGpuTest ProcessPerGpuGpuTest}; do
    junit "gpu-tests-$t.log" "${TEST_IMAGE:+$C/variants/$TEST_IMAGE:}" --select-class "io.collscope.cuda.$t"
  done
  grep -hE "dead peer:|peer abort:" "$O"/gpu-tests-*.log
  # HEDGE: another committed kernel image (variants/$HEDGE) gets the suite too when this one fails
  if [[ -n "${HEDGE:-}" ]] && ! grep -q "0 tests failed" "$O/gpu-tests-CudaCollectiveGpuTest.log"; then
    grep -E "✘" "$O/gpu-tests-CudaCollectiveGpuTest.log" | head -8
    for t in CudaCollectiveGpuTest ProcessPerGpuGpuTest; do
      junit "gpu-tests-$HEDGE-$t.log" "$C/variants/$HEDGE:" --select-class "io.collscope.cuda.$t"
    done
  fi
  # the mutant must fail the sum tests: a slot rank 1 stopped refreshing reduces stale data
  [[ "${MUTANT:-1}" == 1 ]] && junit "mutant-stale-slot-tests.log" "$C/variants/mutant-stale-slot:" \
    --select-method 'io.collscope.cuda.CudaCollectiveGpuTest#sumsMatchTheHostSumAndCountersCountEveryCollective(io.collscope.cuda.DType,int,long)'
  [[ "${MUTANT:-1}" == 1 ]] && grep -m3 -oE "all-reduce sum [^\"]{0,120}" "$O/mutant-stale-slot-tests.log"
fi
# VARIANT_TESTS (images under CARRY/variants): the sum tests on each (a mutant's must fail)
# (VARIANT_METHOD: the sum test's method, e.g. twoShotSumsMatchTheHostSumAndCountersCountEveryCollective;
# an entry NAME:METHOD names its own, so one call can test a one-shot and a two-shot image)
for entry in ${VARIANT_TESTS:-}; do
  v=${entry%%:*}; method=${VARIANT_METHOD:-sumsMatchTheHostSumAndCountersCountEveryCollective}
  [[ "$entry" == *:* ]] && method=${entry#*:}
  junit "gpu-tests-sums-$v.log" "$C/variants/$v:" \
    --select-method "io.collscope.cuda.CudaCollectiveGpuTest#$method(io.collscope.cuda.DType,int,long)"
done
save
if [[ "${NCCL:-1}" == 1 ]]; then
  # the carry's copy of dev/, or this checkout's (a carry near 64 MiB leaves dev/ out)
  nb="$C/dev/nccl_allreduce_bench.py"; [[ -f "$nb" ]] || nb="$(dirname "$0")/../nccl_allreduce_bench.py"
  timeout 200 torchrun --nproc_per_node=2 "$nb" --sizes "$SIZES" \
    > "$O/bench-nccl.log" 2> "$O/bench-nccl.err"
  echo "nccl bench rc=$?"
fi
save
BASELINE=()
grep -q '^nccl-rounds,' "$O/bench-nccl.log" 2>/dev/null && BASELINE=(--baseline="$O/bench-nccl.log")
# BENCH_OPTS: JVM options (e.g. -Dcollscope.osar.sampleBelowBytes=...) for this bench, BENCH_VARIANTS, bench_with (SAMPLINGS, MODES, ...) and BISECT
# BENCH_DTYPES (default f32,bf16): the element types of this bench and BENCH_VARIANTS'
DT=--dtypes=${BENCH_DTYPES:-f32,bf16}
timeout 240 $J ${BENCH_OPTS:-} -cp "$LIB" io.collscope.cuda.OsarBench --ranks=${RANKS:-2} --sizes=$SIZES $DT \
  ${BASELINE[@]+"${BASELINE[@]}"} > "$O/bench-osar.log" 2>&1
echo "osar bench rc=$?"; grep -E "^\| (f32|bf16)|reporter" "$O/bench-osar.log" | cut -c1-200
save
for v in ${BENCH_VARIANTS:-}; do  # the same bench on another kernel image, same machine session
  # an image named twice gets a log per pass (bench-osar-NAME.log, bench-osar-NAME-2.log, ...)
  log="bench-osar-$v.log"; n=2
  while [[ -e "$O/$log" ]]; do log="bench-osar-$v-$n.log"; n=$((n + 1)); done
  timeout 240 $J ${BENCH_OPTS:-} -cp "$C/variants/$v:$LIB" io.collscope.cuda.OsarBench --ranks=${RANKS:-2} --sizes=$SIZES $DT \
    ${BASELINE[@]+"${BASELINE[@]}"} > "$O/$log" 2>&1
  echo "osar bench $log rc=$?"; grep -E "^\| (f32|bf16)" "$O/$log" | cut -d'|' -f2-8,12-
  save
done
for rule in ${BLOCK_RULES:-}; do  # SMALL_BYTES:SMALL_BLOCKS:BYTES, another data-block rule, f32
  IFS=: read -r sb sn bb <<< "$rule"
  timeout 200 $J -Dcollscope.osar.smallBlockBytes=$sb -Dcollscope.osar.smallBlocks=$sn \
    -Dcollscope.osar.blockBytes=$bb -cp "$LIB" \
    io.collscope.cuda.OsarBench --ranks=${RANKS:-2} --sizes=$SIZES --dtypes=f32 \
    ${BASELINE[@]+"${BASELINE[@]}"} > "$O/bench-osar-blocks-${rule//:/-}.log" 2>&1
  echo "osar bench blocks $rule rc=$?"; grep -E "^\| (f32|bf16)" "$O/bench-osar-blocks-${rule//:/-}.log" | cut -d'|' -f2-8,12-
  save
done
# the runtime's kernel benched under a system property, after BENCH_OPTS: PROP VALUE LOG_NAME [SIZES]
# (a name given twice gets a log per pass, LOG_NAME-2.log, ...: runs 176 and 178 lost the first)
bench_with() {
  local log="$3" n=2
  while [[ -e "$O/$log.log" ]]; do log="$3-$n"; n=$((n + 1)); done
  timeout 200 $J ${BENCH_OPTS:-} -D$1=$2 -cp "$LIB" io.collscope.cuda.OsarBench --ranks=${RANKS:-2} \
    --sizes=${4:-$SIZES} ${BASELINE[@]+"${BASELINE[@]}"} > "$O/$log.log" 2>&1
  echo "osar bench $log rc=$?"; grep -E "^\| (f32|bf16)" "$O/$log.log" | cut -d'|' -f2-8,12-
  save
}
for k in ${PUBLISH_EVERYS:-}; do  # publications at most every k collectives (MAX_PUBLISH_EVERY)
  bench_with collscope.osar.maxPublishEvery "$k" "bench-osar-publish-every-$k"
done
for kvs in ${PROPS:-}; do  # CudaCollective.Options properties: name=value[,name=value...]
  opts=(); for kv in ${kvs//,/ }; do opts+=("-Dcollscope.osar.$kv"); done
  log="bench-osar-${kvs//[=,]/-}"
  timeout 200 $J "${opts[@]}" -cp "$LIB" io.collscope.cuda.OsarBench --ranks=${RANKS:-2} \
    --sizes=${PROP_SIZES:-$SIZES} --dtypes=${PROP_DTYPES:-f32,bf16} ${BASELINE[@]+"${BASELINE[@]}"} > "$O/$log.log" 2>&1
  echo "osar bench $log rc=$?"; grep -E "^\| (f32|bf16)" "$O/$log.log" | cut -d'|' -f2-8,12-
  save
done
for n in ${SAMPLINGS:-}; do  # the instrumented kernel accounting 1 collective in n (osar.cu)
  bench_with collscope.osar.sampleEvery "$n" "bench-osar-sample-every-$n"
done
# ALGORITHMS (oneshot-pull oneshot-push twoshot ...): every row on one data path (--algorithm),
# ALG_DTYPES (f32) x ALG_RANKS (2,4,8) x ALG_SIZES (SIZES), one process each, in the order given
for a in ${ALGORITHMS:-}; do
  timeout 240 $J -cp "$LIB" io.collscope.cuda.OsarBench --ranks=${ALG_RANKS:-2,4,8} \
    --sizes=${ALG_SIZES:-$SIZES} --dtypes=${ALG_DTYPES:-f32} --algorithm=$a > "$O/bench-osar-alg-$a.log" 2>&1
  echo "osar bench --algorithm=$a rc=$?"; grep -E "^\| (f32|bf16)" "$O/bench-osar-alg-$a.log" | cut -d'|' -f2-8,12-
  save
done
for m in ${MODES:-}; do  # the push path from m bytes per rank, f32 and bf16
  bench_with collscope.osar.pushBytes "$m" "bench-osar-push-from-$m" "${MODE_SIZES:-$SIZES}"
done
for v in ${BISECT:-}; do  # BISECT_OPTS: JVM options for these alone (default BENCH_OPTS)
  s=$(date +%s)
  timeout 120 $J ${BISECT_OPTS-${BENCH_OPTS:-}} -cp "$C/variants/$v:$LIB" io.collscope.cuda.OsarBench --ranks=${BISECT_RANKS:-1,2} --sizes=${BISECT_SIZES:-4K,256K} \
    --dtypes=f32 > "$O/bisect-$v.log" 2>&1
  echo "== $v rc=$? $(( $(date +%s) - s ))s"; grep '^| f32' "$O/bisect-$v.log" | cut -d'|' -f2-10
  save
done
# NCU=1: Nsight Compute's figures for the plain and the instrumented kernel at each of NCU_SIZES
# (default 4K), ncu options NCU_FLAGS (e.g. --cache-control none: ncu flushes every cache before
# each kernel by default, so a kernel with more code pays its instruction misses), JVM options
# NCU_OPTS (e.g. -Dcollscope.osar.sampleEvery=1), one rank (ncu runs one kernel at a time, so two
# ranks of one process would wait on each other), for the runtime's kernel and each image in
# NCU_VARIANTS
if [[ "${NCU:-0}" == 1 ]]; then
  for sz in ${NCU_SIZES:-4K}; do
  for v in runtime ${NCU_VARIANTS:-}; do
    pre=""; [[ "$v" == runtime ]] || pre="$C/variants/$v:"
    # each kernel on its own: the bench launches every plain collective of a round before the
    # instrumented ones, so one window of launches would hold only one of them
    for k in osar_f32_plain osar_f32; do
      timeout 120 ncu --target-processes all --clock-control none ${NCU_FLAGS:-} --kernel-name regex:"^$k\$" \
        --launch-skip 20 --launch-count 20 --csv --metrics \
        gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,launch__registers_per_thread \
        $J ${NCU_OPTS:-} -cp "$pre$LIB" io.collscope.cuda.OsarBench --ranks=1 --sizes=$sz --dtypes=f32 --rounds=1 \
        >> "$O/ncu-${sz,,}-$v.csv" 2>> "$O/ncu-${sz,,}-$v.err"
      echo "ncu $sz $v $k rc=$?"
    done
  save
    python3 - "$O/ncu-${sz,,}-$v.csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[4].startswith("osar_")]
by = {}
for r in rows:
    by.setdefault((r[4], r[12], r[13]), []).append(float(r[14].replace(",", "")))
for (k, m, u), v in sorted(by.items()):
    print(f"  {k:16s} {m:32s} median {statistics.median(v):12.2f} {u} (n={len(v)})")
PY
  done
  done
fi
save
