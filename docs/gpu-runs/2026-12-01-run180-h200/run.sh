#!/usr/bin/env bash
# Run 180, on the device from the checkout's root: the new host-sample test on the committed
# classes, then with variants/mutant-graph-count's CudaBenchHarness classes first on the class path
# (graph replays not counted on the host). The mutant must fail.
C=.carry/main; source dev/gpu-bisect/unpack-carry.sh
J=$C/gpu-node/jre/bin/java; LIB="$C/gpu-node/lib/*"
M='io.collscope.cuda.CudaCollectiveGpuTest#hostLaunchesAndGraphReplaysBillExactlyTheKernelsSample(io.collscope.cuda.AllReduceAlgorithm)'
for name in committed mutant-graph-count; do
  pre=""; [[ $name == committed ]] || pre="$C/variants/$name:"
  timeout 120 $J -cp "$pre$LIB:$C/test/*" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --details=tree --select-method "$M" > "$OUT/test-$name.log" 2>&1
  echo "$name rc=$?"; grep -E "tests (successful|failed)" "$OUT/test-$name.log"
  grep -m3 -oE "latency histogram holds[^\"]{0,160}" "$OUT/test-$name.log"
done
