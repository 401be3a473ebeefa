#!/usr/bin/env bash
# On a machine with two GPUs (nvidia-h200-x2), after dev/gpu-carry-worktree.sh brought CARRY there
# (default .carry): the clean-stop checks of one-rank-per-process communicators (CUDA IPC).
#   1. ProcessPerGpuGpuTest (different --seconds: both exit 0, no timeout; a SIGKILLed peer: the
#      survivor's counted timeout) and StopAgreementTest, with the JUnit console launcher (TESTS:
#      other classes);
#   2. the different-seconds test (OLD_SELECT: other selectors) against OLD_JAR (the gpu-emitter
#      jar of the build before the agreement, first on the class path) when there is one: it must
#      fail there;
#   3. unless CLI=0, the same two cases with the real CLI: `emit --rank R --seconds 3|6`, then
#      both at 40 s with rank 1 SIGKILLed after 8 s.
# Everything goes into one archive, OUT_DIR/clean-stop.tgz (default $OUT or /tmp/out; the device
# tool returns few files), and the summary to stdout. The CLI needs Kafka's exception classes on the
# class path (picocli reflects on every command), which dev/gpu-carry-worktree.sh leaves out to fit
# the 64 MiB the device tool sends: put org/apache/kafka/common/*.class and .../errors/*.class of
# kafka-clients (137 KB) into CARRY/gpu-node/lib/ as a jar; --record never loads more of it.
set -u
cd "$(dirname "$0")/.."
C=${CARRY:-.carry}
export CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_NVLS_ENABLE=0
J=$C/gpu-node/jre/bin/java
CS=$C/gpu-node/bin/collscope
OUT_DIR=${1:-${OUT:-/tmp/out}}
O=$(mktemp -d)
OLD_JAR=${OLD_JAR:-$C/old-gpu-emitter.jar}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvidia-smi topo -m; } > "$O/gpu.txt" 2>&1
cat "$O/gpu.txt"
junit() {  # LOG CLASSPATH SELECTOR
  timeout 300 $J -cp "$2" org.junit.platform.console.ConsoleLauncher --disable-banner \
    --details=tree $3 > "$O/$1" 2>&1
  echo "$1 rc=$?"; grep -E "tests (successful|failed|skipped)" "$O/$1"
}
echo "== 1. tests (this build)"
for t in ${TESTS:-StopAgreementTest ProcessPerGpuGpuTest}; do
  junit "gpu-tests-$t.log" "$C/gpu-node/lib/*:$C/test/*" "--select-class io.collscope.cuda.$t"
done
# the tests that must fail before the agreement (OLD_SELECT: JUnit console selectors)
OLD_SELECT=${OLD_SELECT:---select-method io.collscope.cuda.ProcessPerGpuGpuTest#ranksWithDifferentSecondsStopTogetherAndBothExitZero(java.nio.file.Path)}
if [[ -f "$OLD_JAR" ]]; then
  echo "== 2. $OLD_SELECT against the build before the agreement ($OLD_JAR first)"
  junit gpu-tests-old-build.log "$OLD_JAR:$C/gpu-node/lib/*:$C/test/*" "$OLD_SELECT"
  grep -E "^(LAST|OK|FAILED) rank|stop [0-9]+|Expecting|expected|but was" "$O/gpu-tests-old-build.log" | head -20
fi
if [[ "${CLI:-1}" != 1 ]]; then
  ls -la "$O"; mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/clean-stop.tgz" -C "$O" .; exit 0
fi
echo "== 3. the CLI: emit --rank 0 --seconds 3, emit --rank 1 --seconds 6"
pair() {  # NAME SECONDS0 SECONDS1 [KILL_RANK1_AFTER]
  local rv; rv=$(mktemp -d /dev/shm/collscope-clean-stop.XXXX)
  local pids=()
  for r in 0 1; do
    local s; [[ $r == 0 ]] && s=$2 || s=$3
    timeout 120 $CS emit --backend cuda --ranks 2 --rank $r --device $r --rendezvous "$rv" \
      --seconds "$s" --interval 500ms --cluster h200x2 --job "clean-stop-$1" --communicator tp0 \
      --record "$O/$1.rank$r.snapshots" > "$O/$1.rank$r.log" 2>&1 &
    pids+=($!)
  done
  if [[ -n "${4:-}" ]]; then
    sleep "$4"
    # timeout's child is the JVM (collscope execs java): SIGKILL it, not the timeout wrapper
    local jvm; jvm=$(cat /proc/"${pids[1]}"/task/*/children | tr " " "\n" | grep -m1 .)
    echo "SIGKILL rank 1 (pid $jvm) at ${4}s"; kill -9 "$jvm"
  fi
  for r in 0 1; do wait "${pids[$r]}"; echo "$1 rank$r rc=$?"; done
  tail -n4 "$O/$1".rank*.log
  echo "left in the rendezvous: $(ls "$rv")"; rm -rf "$rv"
}
pair cli-3s-6s 3 6
echo "== 3b. the CLI: both 40 s, rank 1 SIGKILLed after 8 s"
pair cli-kill 40 40 8
ls -la "$O"
mkdir -p "$OUT_DIR" && tar czf "$OUT_DIR/clean-stop.tgz" -C "$O" .
