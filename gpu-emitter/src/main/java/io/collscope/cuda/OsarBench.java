package io.collscope.cuda;

import static io.collscope.bench.Classification.PAIRED_RULE;
import static io.collscope.bench.Classification.UNPAIRED_RULE;
import static io.collscope.bench.Classification.classify;
import static io.collscope.bench.Classification.classifyUnpaired;
import static io.collscope.bench.Classification.max;
import static io.collscope.bench.Classification.median;
import static io.collscope.bench.Classification.min;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.counters.TornSnapshotException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code collscope bench gpu}: device time per collective of the uninstrumented kernel and of the
 * instrumented one at two publication rates, measured side by side (interleaved rounds of
 * CUDA-graph replays on the same buffers), each instrumented variant classified against the plain
 * one and, given {@code dev/nccl_allreduce_bench.py}'s rounds, the instrumented one against NCCL;
 * the reporter's cost per snapshot; and a check that graph replays advance the counters by exactly
 * the replayed collectives.
 */
public final class OsarBench {

  static final int PER_GRAPH = 50;

  /**
   * How the bench enqueues its collectives ({@code --launch}). Graph replays are the default: the
   * device time of the kernels alone, whatever the host does.
   */
  public enum Launch {
    /** CUDA graphs replayed without the host; the instrumented kernel samples on the device. */
    GRAPH,
    /**
     * The host launches every collective on the streams, as the emitter's dispatcher does, and
     * takes the sample itself: the plain kernel for the collectives it leaves out ({@link
     * Launcher#collective}). Host-bound below a few MB per rank, where a collective takes less than
     * the launches of every rank.
     */
    STREAM;

    /** The values {@link #parse} takes, for a usage message. */
    public static final String CHOICES = "graph, stream";

    /**
     * A command line's launch mode.
     *
     * @throws IllegalArgumentException naming --launch, for any other name
     */
    public static Launch parse(String s) {
      for (Launch l : values()) if (l.name().equalsIgnoreCase(s.strip())) return l;
      throw new IllegalArgumentException(
          "--launch must be one of " + CHOICES + ", got '" + s + "'");
    }

    /**
     * {@code --launch}'s default: {@value #LAUNCH_PROPERTY} where set (the device scripts pass JVM
     * options to every bench of a run: dev/gpu-bisect/run-x2-perf.sh's BENCH_OPTS), else graph.
     */
    public static Launch byDefault() {
      return parse(System.getProperty(LAUNCH_PROPERTY, "graph"));
    }
  }

  static final String LAUNCH_PROPERTY = "collscope.bench.launch";

  static final int REPLAYS = 4;
  public static final int DEFAULT_ROUNDS = 9;
  public static final double DEFAULT_MIN_EFFECT_PCT = 1.0;

  private OsarBench() {}

  public static void main(String[] args) throws Exception {
    int[] ranks = {2, 4, 8};
    long[] sizes = {4L << 10, 64L << 10, 1L << 20, 16L << 20};
    DType[] types = {DType.F32, DType.BF16};
    int rounds = DEFAULT_ROUNDS;
    double minEffectPct = DEFAULT_MIN_EFFECT_PCT;
    NcclBaseline baseline = null;
    AllReduceAlgorithm algorithm = null;
    Launch launch = null;
    for (String a : args) {
      if (a.startsWith("--ranks="))
        ranks = Arrays.stream(a.substring(8).split(",")).mapToInt(Integer::parseInt).toArray();
      else if (a.startsWith("--sizes="))
        sizes = Arrays.stream(a.substring(8).split(",")).mapToLong(OsarBench::bytes).toArray();
      else if (a.startsWith("--dtypes="))
        types =
            Arrays.stream(a.substring(9).split(",")).map(OsarBench::dtype).toArray(DType[]::new);
      else if (a.startsWith("--rounds=")) rounds = Integer.parseInt(a.substring(9));
      else if (a.startsWith("--min-effect-pct="))
        minEffectPct = Double.parseDouble(a.substring(17));
      else if (a.startsWith("--baseline=")) baseline = NcclBaseline.read(Path.of(a.substring(11)));
      else if (a.startsWith("--algorithm=")) algorithm = AllReduceAlgorithm.parse(a.substring(12));
      else if (a.startsWith("--launch=")) launch = Launch.parse(a.substring(9));
      else
        throw new IllegalArgumentException(
            "unknown argument "
                + a
                + " (--ranks=2,4 --sizes=4K,1M --dtypes=f32,bf16 --rounds=9 --min-effect-pct=1"
                + " --baseline=nccl.log --algorithm=auto --launch=graph)");
    }
    try {
      System.exit(
          run(
              System.out,
              ranks,
              sizes,
              types,
              rounds,
              minEffectPct,
              baseline,
              algorithm,
              launch == null ? Launch.byDefault() : launch));
    } catch (io.collscope.collective.BackendUnavailableException e) {
      System.err.println("OsarBench: " + e.getMessage());
      System.exit(1);
    }
  }

  /**
   * Bytes per rank: a count, or one with a K or M suffix (4K, 16M).
   *
   * @throws IllegalArgumentException naming --sizes, for anything else or a size below 1
   */
  public static long bytes(String s) {
    String u = s.strip().toUpperCase(Locale.ROOT);
    int shift = u.endsWith("K") ? 10 : u.endsWith("M") ? 20 : 0;
    long n;
    try {
      n = Long.parseLong(shift == 0 ? u : u.substring(0, u.length() - 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "--sizes takes bytes per rank such as 4096, 4K or 16M, got '" + s + "'");
    }
    if (n < 1)
      throw new IllegalArgumentException("--sizes must be at least 1 byte, got '" + s + "'");
    if (n > (Long.MAX_VALUE >> shift)) {
      throw new IllegalArgumentException("--sizes: '" + s + "' is too large");
    }
    return n << shift;
  }

  /**
   * An element type by its name (f32, bf16).
   *
   * @throws IllegalArgumentException naming --dtypes, for any other name
   */
  public static DType dtype(String s) {
    for (DType t : DType.values()) if (t.suffix.equalsIgnoreCase(s.strip())) return t;
    throw new IllegalArgumentException("--dtypes must be f32 or bf16, got '" + s + "'");
  }

  /**
   * Measures every (dtype, ranks, size) in {@code rounds} rounds and prints the table, the rules it
   * classified by, and the reporter's cost.
   *
   * @param minEffectPct the smallest difference that counts, in percent of the baseline's median
   *     (plain's, or NCCL's)
   * @param baseline NCCL's rounds to compare with, or null for no NCCL columns
   * @param algorithm the data path of every row, or null for the one each size takes
   * @param launch how the collectives are enqueued
   * @return 0
   * @throws io.collscope.collective.BackendUnavailableException without a GPU (after the arguments
   *     are checked)
   */
  public static int run(
      PrintStream out,
      int[] ranks,
      long[] sizes,
      DType[] types,
      int rounds,
      double minEffectPct,
      NcclBaseline baseline,
      AllReduceAlgorithm algorithm,
      Launch launch)
      throws Exception {
    if (rounds < 1) throw new IllegalArgumentException("--rounds must be >= 1, got " + rounds);
    for (int n : ranks) {
      if (n < 1 || n > OsarLayout.MAX_RANKS) {
        throw new IllegalArgumentException(
            "--ranks must be in 1.." + OsarLayout.MAX_RANKS + " on the GPU, got " + n);
      }
    }
    if (!(minEffectPct >= 0) || Double.isInfinite(minEffectPct)) {
      throw new IllegalArgumentException(
          "--min-effect-pct must be finite and >= 0, got " + minEffectPct);
    }
    CudaProbe.requireGpu();
    if (baseline != null) out.println("baseline: " + baseline.header());
    if (launch == Launch.STREAM) {
      out.println(
          "launches: the host's, on the streams (--launch stream): each 'replay' below is the"
              + " graph's collectives launched one by one, the host choosing the plain kernel for"
              + " the collectives the sample leaves out");
    }
    boolean withNccl = baseline != null;
    // which data path each size took: the runs that compare them set the threshold
    out.println(
        "data path: "
            + (algorithm == null
                ? CudaCollective.Options.dataPaths()
                : algorithm.flagName() + " at every size (--algorithm)"));
    out.println(header(withNccl));
    for (DType t : types) {
      for (int n : ranks) {
        for (long b : sizes) {
          Rounds r = measure(n, b, t, rounds, algorithm, launch);
          double[] nccl = withNccl ? baseline.rounds(t, n, b) : null;
          out.println(row(t, n, b, r, withNccl, nccl, minEffectPct));
          out.flush();
        }
      }
    }
    out.println();
    out.println(method(rounds, minEffectPct, withNccl));
    reporterCost(out);
    return 0;
  }

  /** One shape's rounds, µs per collective each, and whether the counters matched the replays. */
  record Rounds(double[] plain, double[] instrumented, double[] every1, boolean countersExact) {}

  /** The table's header; plain ASCII ("us"), as a terminal without a UTF-8 locale prints it. */
  static String header(boolean withNccl) {
    return "| dtype | ranks | bytes/rank | plain us (min..max) | instrumented us (min..max) |"
        + " overhead ns (% of plain) | class vs plain | publish-every-1 us (min..max) | class |"
        + (withNccl ? " NCCL us (min..max) | instr/NCCL | class vs NCCL |" : "")
        + " busbw GB/s (plain) | graph counters |\n"
        + "|---|---:|---:|---:|---:|---:|---|---:|---|"
        + (withNccl ? "---:|---:|---|" : "")
        + "---:|---|";
  }

  /**
   * nccl-tests' bus bandwidth of an all-reduce of {@code bytes} per rank over {@code ranks} in
   * {@code micros}: bytes / time x 2 (n - 1) / n, the rate each rank's links carry in a bandwidth-
   * optimal algorithm, so that it compares with a link's bandwidth whatever the rank count (on two
   * H200s, NV18's nominal 477 GB/s each way). GB = 10^9 bytes.
   */
  static double busBandwidthGbps(long bytes, int ranks, double micros) {
    return bytes / (micros * 1e3) * 2.0 * (ranks - 1) / ranks;
  }

  /**
   * One table row. Overhead is the difference of the medians, the one the classification weighs, in
   * ns and as a share of the plain kernel's median; {@code nccl} null with {@code withNccl}: NCCL
   * did not measure this shape.
   */
  static String row(
      DType t, int n, long b, Rounds r, boolean withNccl, double[] nccl, double minEffectPct) {
    double plain = median(r.plain());
    double instr = median(r.instrumented());
    double vsPlain = minEffectPct / 100 * plain;
    StringBuilder s =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "| %s | %d | %s | %s | %s | %+.0f (%+.2f%%) | %s | %s | %s |",
                t.suffix,
                n,
                human(b),
                cell(r.plain()),
                cell(r.instrumented()),
                (instr - plain) * 1000,
                // the goals are shares of the collective (issue 14: <= 1 % small, <= 0.5 % large)
                (instr - plain) / plain * 100,
                classify(r.instrumented(), r.plain(), vsPlain),
                cell(r.every1()),
                classify(r.every1(), r.plain(), vsPlain)));
    if (withNccl && nccl == null) {
      s.append(" not measured | - | - |");
    } else if (withNccl) {
      s.append(
          String.format(
              Locale.ROOT,
              " %s | %.2f | %s |",
              cell(nccl),
              instr / median(nccl),
              classifyUnpaired(r.instrumented(), nccl, minEffectPct / 100 * median(nccl))));
    }
    s.append(String.format(Locale.ROOT, " %.1f |", busBandwidthGbps(b, n, plain)));
    s.append(r.countersExact() ? " exact |" : " MISMATCH |");
    return s.toString();
  }

  /** What the table's numbers are and the rules its classes follow, to print under it. */
  static String method(int rounds, double minEffectPct, boolean withNccl) {
    String m =
        String.format(
            Locale.ROOT,
            "Each cell: median (min..max) over %d rounds of device us per collective. Per round and"
                + " variant: CUDA events on every rank's stream around %d replays of a graph of %d"
                + " collectives per rank (or the next multiple of the publication interval),"
                + " the longest rank's interval / the collectives; the variants interleaved,"
                + " their order rotated each round. instrumented publishes the counters at the"
                + " default count, every min(%d, %d MiB / bytes) collectives (the emitter also"
                + " publishes once 10 ms have passed; a graph holds counts only);"
                + " publish-every-1 after each."
                + " minEffect = %s%% of the baseline's median (plain's; NCCL's). busbw: bytes /"
                + " plain's median x 2 (ranks - 1) / ranks (nccl-tests' bus bandwidth).%n"
                + "class vs plain, class (each instrumented variant against plain): %s",
            rounds,
            REPLAYS,
            PER_GRAPH,
            CudaCollective.Options.MAX_PUBLISH_EVERY,
            CudaCollective.Options.PUBLISH_BYTES >> 20,
            minEffectPct,
            PAIRED_RULE);
    return withNccl
        ? m + System.lineSeparator() + "class vs NCCL (instrumented against NCCL): " + UNPAIRED_RULE
        : m;
  }

  private static String cell(double[] rounds) {
    return String.format(
        Locale.ROOT, "%.2f (%.2f..%.2f)", median(rounds), min(rounds), max(rounds));
  }

  static Rounds measure(
      int n, long bytes, DType t, int rounds, AllReduceAlgorithm algorithm, Launch launch)
      throws Exception {
    CollectiveConfig cfg = CollectiveConfig.of(n).withElements((int) (bytes / t.bytes));
    try (CudaCollective c =
        CudaCollective.open(
            cfg,
            FaultPlan.NONE,
            CudaCollective.Options.defaults(n).withDType(t).withAlgorithm(algorithm))) {
      CudaBenchHarness h = new CudaBenchHarness(c);
      // A graph replays the publications its capture had: it holds a whole number of
      // publication intervals, so replays publish at the default rate exactly.
      int k = CudaCollective.Options.publishEveryFor(bytes);
      int perGraph = k * ((PER_GRAPH + k - 1) / k);
      h.setPublishEvery(k);
      boolean streamed = launch == Launch.STREAM;
      try (CudaBenchHarness.Replays plain = replays(h, perGraph, false, streamed);
          CudaBenchHarness.Replays instr = replays(h, perGraph, true, streamed);
          CudaBenchHarness.Replays every1 =
              streamed ? h.streamed(perGraph, true) : withPublishEvery(h, 1, perGraph, k)) {
        plain.replay(1); // warm up
        instr.replay(1);
        every1.replay(1);
        c.flush();
        long before = new SnapshotReader(c.block(0)).read().calls();
        double[] p = new double[rounds];
        double[] q = new double[rounds];
        double[] e1 = new double[rounds];
        for (int i = 0; i < rounds; i++) {
          // rotate which goes first so drift and clocks hurt all alike; round i of every variant
          // ran under the same conditions, which the paired classification relies on
          for (int j = 0; j < 3; j++) {
            switch ((i + j) % 3) {
              case 0 -> p[i] = time(plain);
              case 1 -> q[i] = time(instr);
              default -> e1[i] = streamed ? timePublishingEvery1(h, every1, k) : time(every1);
            }
          }
        }
        c.flush();
        long after = new SnapshotReader(c.block(0)).read().calls();
        for (int r = 0; r < n; r++) h.verifyOutput(r);
        // calls count every collective the ranks completed, plain ones too (osar_publish derives
        // them from the sequence the kernels advance): three graphs a round
        return new Rounds(p, q, e1, after - before == 3L * rounds * REPLAYS * perGraph);
      }
    }
  }

  private static CudaBenchHarness.Graphs withPublishEvery(
      CudaBenchHarness h, int k, int collectives, int restore) {
    h.setPublishEvery(k);
    try {
      return h.captureGraphs(collectives, true);
    } finally {
      h.setPublishEvery(restore);
    }
  }

  private static CudaBenchHarness.Replays replays(
      CudaBenchHarness h, int collectives, boolean instrumented, boolean streamed) {
    return streamed
        ? h.streamed(collectives, instrumented)
        : h.captureGraphs(collectives, instrumented);
  }

  /** A round of host-launched collectives publishing after each, then the default rate again. */
  private static double timePublishingEvery1(
      CudaBenchHarness h, CudaBenchHarness.Replays streamed, int restore) {
    h.setPublishEvery(1);
    try {
      return time(streamed);
    } finally {
      h.setPublishEvery(restore);
    }
  }

  /** One round of one variant: device µs per collective. */
  private static double time(CudaBenchHarness.Replays g) {
    return g.replayTimed(REPLAYS) / (REPLAYS * g.collectives());
  }

  /** The reporter's cost: consistent reads of a block the kernels keep publishing into. */
  static void reporterCost(PrintStream out) throws Exception {
    CollectiveConfig cfg = CollectiveConfig.of(4).withElements(1024);
    try (CudaCollective c = CudaCollective.open(cfg, FaultPlan.NONE);
        CudaBenchHarness.Graphs g = publishingGraphs(new CudaBenchHarness(c))) {
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

  /**
   * The reporter's graphs: a publication every 16 collectives, as the default was before the
   * interval grew with the size, so the cost per snapshot compares with earlier runs'.
   */
  private static CudaBenchHarness.Graphs publishingGraphs(CudaBenchHarness h) {
    h.setPublishEvery(16);
    return h.captureGraphs(PER_GRAPH, true);
  }

  private static String human(long b) {
    return b >= 1 << 20 ? (b >> 20) + "M" : (b >> 10) + "K";
  }
}
