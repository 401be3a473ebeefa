package io.collscope.cuda;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.model.Counter;

/**
 * Prints, for the kernel image first on the classpath, the clock rate its clock samples imply
 * (CLOCK_CYCLES / CLOCK_NS) beside the start-up calibration, per rank, for the shapes of
 * CudaCollectiveGpuTest's clock-rate check (50 collectives: 20 launched, 10 captured and replayed 3
 * times) and for 2,000 collectives of the same shape. The test passes within 5 %; this prints the
 * value whether or not, and the mean sampled interval (ns per collective), so a kernel whose rate
 * reads low can be told apart by sample length (a coarse %globaltimer) or by shape.
 *
 * <p>A dev tool for the issue 14 candidate kernel (dev/gpu-bisect/run-clock-probe.sh builds it
 * against the carry and runs it per kernel variant); not part of any module.
 *
 * <p>Usage: {@code java -cp LIB ClockRateProbe LABEL [ranks,..] [bytes,..] [rounds,..] [dtype,..]}
 * (a round: 20 collectives launched, 30 replayed from a graph of 10).
 */
public final class ClockRateProbe {
  public static void main(String[] args) throws Exception {
    String label = args.length > 0 ? args[0] : "?";
    int[] worlds = ints(args.length > 1 ? args[1] : "2,4");
    int[] sizes = ints(args.length > 2 ? args[2] : "4096,65536,262144,1048576");
    int[] roundCounts = ints(args.length > 3 ? args[3] : "1,40");
    DType[] dtypes =
        java.util.Arrays.stream((args.length > 4 ? args[4] : "F32,BF16").split(","))
            .map(DType::valueOf)
            .toArray(DType[]::new);
    System.out.println(
        "variant,dtype,ranks,bytes,collectives,rank,rate_ghz,calibrated_ghz,ratio,sampled_ns_per_call");
    for (DType dtype : dtypes) {
      for (int ranks : worlds) {
        for (int bytes : sizes) {
          for (int rounds : roundCounts) {
            CollectiveConfig cfg =
                CollectiveConfig.of(ranks).withElements((int) (bytes / dtype.bytes));
            try (CudaCollective c =
                CudaCollective.open(
                    cfg,
                    FaultPlan.NONE,
                    CudaCollective.Options.defaults(ranks).withDType(dtype))) {
              CudaBenchHarness h = new CudaBenchHarness(c);
              h.runCollectives(20 * rounds, true);
              try (CudaBenchHarness.Graphs g = h.captureGraphs(10, true)) {
                g.replay(3 * rounds);
              }
              c.flush();
              for (int r = 0; r < ranks; r++) {
                Counters k = new SnapshotReader(c.block(r)).read();
                double ns = k.get(Counter.CLOCK_NS);
                double rate = k.get(Counter.CLOCK_CYCLES) / ns;
                double cal = k.cyclesPerSecond() / 1e9;
                System.out.printf(
                    "%s,%s,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.1f%n",
                    label, dtype, ranks, bytes, k.calls(), r, rate, cal, rate / cal,
                    ns / k.calls());
              }
            }
          }
        }
      }
    }
  }

  private static int[] ints(String csv) {
    return java.util.Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
  }
}
