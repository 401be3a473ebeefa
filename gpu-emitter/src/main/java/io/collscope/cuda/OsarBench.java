package io.collscope.cuda;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.counters.TornSnapshotException;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code collscope bench gpu}: latency per collective of the instrumented and the uninstrumented
 * kernel, measured side by side (alternating rounds of CUDA-graph replays on the same buffers), the
 * reporter's cost per snapshot, and a check that graph replays advance the counters by exactly the
 * replayed collectives.
 */
public final class OsarBench {

  private static final int PER_GRAPH = 50;
  private static final int REPLAYS = 4;
  private static final int ROUNDS = 9;

  private OsarBench() {}

  public static void main(String[] args) throws Exception {
    int[] ranks = {2, 4, 8};
    long[] sizes = {4L << 10, 64L << 10, 1L << 20, 16L << 20};
    DType[] types = {DType.F32, DType.BF16};
    for (String a : args) {
      if (a.startsWith("--ranks="))
        ranks = Arrays.stream(a.substring(8).split(",")).mapToInt(Integer::parseInt).toArray();
      else if (a.startsWith("--sizes="))
        sizes = Arrays.stream(a.substring(8).split(",")).mapToLong(OsarBench::bytes).toArray();
      else if (a.startsWith("--dtypes="))
        types =
            Arrays.stream(a.substring(9).split(","))
                .map(s -> DType.valueOf(s.toUpperCase(Locale.ROOT)))
                .toArray(DType[]::new);
      else
        throw new IllegalArgumentException(
            "unknown argument " + a + " (--ranks=2,4 --sizes=4K,1M --dtypes=f32,bf16)");
    }
    System.exit(run(System.out, ranks, sizes, types));
  }

  public static long bytes(String s) {
    String u = s.toUpperCase(Locale.ROOT);
    if (u.endsWith("K")) return Long.parseLong(u.substring(0, u.length() - 1)) << 10;
    if (u.endsWith("M")) return Long.parseLong(u.substring(0, u.length() - 1)) << 20;
    return Long.parseLong(u);
  }

  public static int run(PrintStream out, int[] ranks, long[] sizes, DType[] types)
      throws Exception {
    if (CudaProbe.gpuCount() == 0) {
      out.println("bench gpu: no GPU (" + CudaProbe.reason() + ")");
      return 2;
    }
    out.printf(
        "| dtype | ranks | bytes/rank | plain us | instrumented us (publish every %d) | overhead | overhead ns | instrumented us (publish every 1) | overhead | graph counters |%n",
        CudaCollective.Options.DEFAULT_PUBLISH_EVERY);
    out.printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|%n");
    double worst = 0;
    for (DType t : types) {
      for (int n : ranks) {
        for (long b : sizes) {
          double[] r = measure(n, b, t);
          worst = Math.max(worst, r[2]);
          out.printf(
              Locale.ROOT,
              "| %s | %d | %s | %.2f | %.2f | %+.2f%% | %+.0f | %.2f | %+.2f%% | %s |%n",
              t.suffix,
              n,
              human(b),
              r[0],
              r[1],
              100 * r[2],
              (r[1] - r[0]) * 1000,
              r[4],
              100 * (r[4] - r[0]) / r[0],
              r[3] == 1 ? "exact" : "MISMATCH");
          out.flush();
        }
      }
    }
    reporterCost(out);
    return 0;
  }

  /**
   * Returns {plain us, instrumented us (default publication), relative overhead, graph counters
   * exact (1/0), instrumented us publishing every collective}.
   */
  static double[] measure(int n, long bytes, DType t) throws Exception {
    CollectiveConfig cfg = CollectiveConfig.of(n).withElements((int) (bytes / t.bytes));
    try (CudaCollective c =
        CudaCollective.open(cfg, FaultPlan.NONE, CudaCollective.Options.defaults(n).withDType(t))) {
      CudaBenchHarness h = new CudaBenchHarness(c);
      h.setPublishEvery(CudaCollective.Options.DEFAULT_PUBLISH_EVERY);
      try (CudaBenchHarness.Graphs plain = h.captureGraphs(PER_GRAPH, false);
          CudaBenchHarness.Graphs instr = h.captureGraphs(PER_GRAPH, true);
          CudaBenchHarness.Graphs every1 = withPublishEvery(h, 1)) {
        plain.replay(1); // warm up
        instr.replay(1);
        every1.replay(1);
        c.flush();
        long before = new SnapshotReader(c.block(0)).read().calls();
        double[] p = new double[ROUNDS];
        double[] q = new double[ROUNDS];
        double[] e1 = new double[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
          // rotate which goes first so drift and clocks hurt all alike
          for (int j = 0; j < 3; j++) {
            switch ((i + j) % 3) {
              case 0 -> p[i] = time(plain);
              case 1 -> q[i] = time(instr);
              default -> e1[i] = time(every1);
            }
          }
        }
        c.flush();
        long after = new SnapshotReader(c.block(0)).read().calls();
        for (int r = 0; r < n; r++) h.verifyOutput(r);
        double mp = median(p);
        double mq = median(q);
        return new double[] {
          mp,
          mq,
          (mq - mp) / mp,
          after - before == 2L * ROUNDS * REPLAYS * PER_GRAPH ? 1 : 0,
          median(e1)
        };
      }
    }
  }

  private static CudaBenchHarness.Graphs withPublishEvery(CudaBenchHarness h, int k) {
    h.setPublishEvery(k);
    try {
      return h.captureGraphs(PER_GRAPH, true);
    } finally {
      h.setPublishEvery(CudaCollective.Options.DEFAULT_PUBLISH_EVERY);
    }
  }

  private static double time(CudaBenchHarness.Graphs g) {
    long t0 = System.nanoTime();
    g.replay(REPLAYS);
    return (System.nanoTime() - t0) / 1e3 / (REPLAYS * PER_GRAPH);
  }

  /** The reporter's cost: consistent reads of a block the kernels keep publishing into. */
  static void reporterCost(PrintStream out) throws Exception {
    CollectiveConfig cfg = CollectiveConfig.of(4).withElements(1024);
    try (CudaCollective c = CudaCollective.open(cfg, FaultPlan.NONE);
        CudaBenchHarness.Graphs g = new CudaBenchHarness(c).captureGraphs(PER_GRAPH, true)) {
      SnapshotReader reader = new SnapshotReader(c.block(0));
      AtomicBoolean stop = new AtomicBoolean();
      long[] reads = new long[1];
      long[] nanos = new long[1];
      long[] changes = new long[1];
      Thread t =
          new Thread(
              () -> {
                long last = -1;
                while (!stop.get()) {
                  long s = System.nanoTime();
                  try {
                    Counters k = reader.read();
                    nanos[0] += System.nanoTime() - s;
                    reads[0]++;
                    if (k.calls() != last) changes[0]++;
                    last = k.calls();
                  } catch (TornSnapshotException e) {
                    // counted in retries
                  }
                }
              });
      t.start();
      g.replay(40);
      stop.set(true);
      t.join();
      out.printf(
          Locale.ROOT,
          "%nreporter: %d snapshots of a block under %d live publications: %.0f ns per snapshot, %d retries%n",
          reads[0],
          changes[0],
          (double) nanos[0] / Math.max(1, reads[0]),
          reader.retries());
    }
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static String human(long b) {
    return b >= 1 << 20 ? (b >> 20) + "M" : (b >> 10) + "K";
  }
}
