package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.ConfigException;
import io.collscope.collective.FaultPlan;
import io.collscope.collective.Sampling;
import io.collscope.counters.CounterBlock;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The GPU backend: N ranks of the instrumented one-shot all-reduce ({@code osar.cu}) driven through
 * JCuda's driver API. A {@link Placement} puts the ranks on GPUs: emulated on one GPU (one stream
 * each in one context) when there are fewer GPUs than ranks, one per GPU with peer access, or one
 * per process with CUDA IPC ({@link #openProcessRank}). One {@link Dispatcher} thread per GPU only
 * launches kernels and checks results. Each rank's counter block lives in mapped host memory,
 * written by {@code osar_publish} after every k-th collective and read by the reporter with the
 * same {@link io.collscope.counters.SnapshotReader} as the CPU backend.
 *
 * <p>Every allocation, stream and context is released by {@link #close()}, on every exit path.
 */
public final class CudaCollective implements CollectiveBackend {

  /**
   * How the ranks are laid out and run. {@code sampleEvery}: below {@link #SAMPLE_BELOW_BYTES} per
   * rank the instrumented kernel accounts the phases, per-peer waits and lateness, the clock sample
   * and the latency histogram of 1 collective in this many, weighted by it (a power of two; 1:
   * every collective, exactly); calls and bytes count every collective on every path (osar_publish
   * derives them from the kernel's sequence). From {@link #SAMPLE_BELOW_BYTES} every collective is
   * accounted ({@link #sampleEveryFor}). {@code algorithm}: how the data moves; null chooses by
   * size and world ({@link #algorithmFor}).
   */
  public record Options(
      DType dtype,
      boolean instrumented,
      int blocksPerRank,
      int threadsPerBlock,
      int[] deviceOfRank,
      int checkEveryBatches,
      int publishEvery,
      int sampleEvery,
      AllReduceAlgorithm algorithm) {

    public Options {
      if (sampleEvery < 1 || sampleEvery > MAX_SAMPLE_EVERY || Integer.bitCount(sampleEvery) != 1) {
        throw new ConfigException(
            "sampleEvery",
            "must be a power of two from 1 to " + MAX_SAMPLE_EVERY + ", got " + sampleEvery);
      }
    }

    /**
     * {@link #sampleEvery()} by default: 1 collective in 16 accounted in full. On two H200s the
     * instrumentation then costs +82 to +136 ns per collective from 4 KB to 256 KB against +93 to
     * +282 ns accounting every collective, both measured in one machine session (run 83,
     * docs/BENCHMARKS.md). At the rates where that matters (tens of thousands of collectives per
     * second) a window of a second still accounts thousands. A system property, {@value
     * #SAMPLE_EVERY_PROPERTY}, overrides it (e.g. {@code COLLSCOPE_JAVA_OPTS=
     * -Dcollscope.osar.sampleEvery=1} for exact totals at low rates).
     */
    public static final int DEFAULT_SAMPLE_EVERY =
        Integer.getInteger(Options.SAMPLE_EVERY_PROPERTY, 16);

    static final String SAMPLE_EVERY_PROPERTY = "collscope.osar.sampleEvery";
    public static final int MAX_SAMPLE_EVERY = 1 << 16;

    /**
     * Payload bytes per rank from which every collective is accounted whatever {@link
     * #sampleEvery()} says: 64 MiB. The accounting's cost is about fixed per collective: on one
     * H200 with two ranks at 16 MiB, +0.40 us f32 and +0.26 us bf16 accounting every collective
     * against +0.15 and +0.05 sampling 1 in 16 (runs 167-169, docs/BENCHMARKS.md), so at 16 MiB
     * only sampling keeps it under 0.5 %, while from 64 MiB a collective takes over ~165 us and
     * accounting each was within noise (f32 -0.40 %, bf16 +0.02 %, run 170). Collectives that large
     * are few (a few thousand a second at most), so a window should account every one. Below it,
     * calls and bytes are exact anyway (osar_publish derives them from the sequence); phases,
     * per-peer shares and latency are weighted samples. Was 8 MiB (and 1 MiB before run 144) while
     * the kernel's unsampled collectives still paid part of the accounting. A system property,
     * {@value #SAMPLE_BELOW_BYTES_PROPERTY}, moves it (e.g. 8388608 to account every collective
     * from 8 MiB, where a job runs few of them).
     */
    public static final long SAMPLE_BELOW_BYTES =
        Long.getLong(Options.SAMPLE_BELOW_BYTES_PROPERTY, 64L << 20);

    static final String SAMPLE_BELOW_BYTES_PROPERTY = "collscope.osar.sampleBelowBytes";

    /** The sampling of collectives of {@code bytesPerRank}: {@link #sampleEvery()} or 1. */
    public int sampleEveryFor(long bytesPerRank) {
      return bytesPerRank < SAMPLE_BELOW_BYTES ? sampleEvery : 1;
    }

    /** {@link CudaCollective#accounting()} for collectives of {@code bytesPerRank}. */
    String accountingFor(long bytesPerRank) {
      if (!instrumented) return "not instrumented";
      int every = sampleEveryFor(bytesPerRank);
      return every == 1
          ? "every collective accounted"
          : "1 collective in " + every + " accounted, weighted by " + every;
    }

    /** The sampling hash's key: {@code fault_mix}'s index argument in {@code osar.cu}. */
    static final int SAMPLE_KEY = 1_000_003;

    /**
     * Whether the kernel accounts collective {@code seq} in full at {@code sampleEvery}: the same
     * hash as {@code osar.cu}'s (splitmix64, {@link FaultPlan#mix}).
     */
    public static boolean sampled(long seq, int sampleEvery) {
      return samplingFor(sampleEvery).accounts(seq);
    }

    /** The sampling of collectives of {@code bytesPerRank}, as the kernel makes it. */
    public Sampling samplingFor(long bytesPerRank) {
      return instrumented ? samplingFor(sampleEveryFor(bytesPerRank)) : Sampling.EVERY;
    }

    static Sampling samplingFor(int sampleEvery) {
      return new Sampling(sampleEvery, SAMPLE_KEY);
    }

    /**
     * {@link #publishEvery()} for the automatic interval ({@link #publishEveryFor(long)}): a
     * publication after at most {@link #MAX_PUBLISH_EVERY} (1,024) collectives, {@value
     * #PUBLISH_BYTES} payload bytes per rank or {@link #PUBLISH_INTERVAL_NANOS} (10 ms) on the
     * host, whichever comes first ({@link PublishPolicy}). An explicit count has no time bound. A
     * CUDA graph replays the publications its capture held, and {@link CudaBenchHarness} ends every
     * capture with one when its last collectives have none (the kernels' ring of sample records
     * must be folded at least every 1,024 collectives); capture a whole number of intervals, as
     * {@code bench gpu} does, to publish at the default rate exactly.
     */
    public static final int AUTO_PUBLISH = 0;

    /**
     * The most collectives between publications. One publication ({@code osar_publish}: a kernel
     * launch, the slices' sums written over PCIe, two system-scope fences) costs ~8 µs on an H200
     * (docs/BENCHMARKS.md, run 22), so it is spread over many small collectives. Measured on two
     * H200s side by side (run 88): every 1,024 instead of 128 took 40-57 ns off the
     * instrumentation's cost at 4-256 KB (f32 4 KB +132 to +92 ns, 256 KB +110 to +64); run 90, the
     * default then: +47 to +91 ns in all six cases of 4-256 KB, f32 and bf16. The totals are exact
     * in device memory either way, {@link CudaCollective#flush()} publishes them, and {@link
     * #PUBLISH_INTERVAL_NANOS} bounds the lag in time. A system property, {@value
     * #MAX_PUBLISH_EVERY_PROPERTY}, lowers it for measurement; no interval is longer than the
     * kernels' ring of sample records ({@link OsarLayout#RECORDS}, 1,024: {@link PublishPolicy}).
     */
    public static final int MAX_PUBLISH_EVERY =
        PublishPolicy.bounded(
            Integer.getInteger(Options.MAX_PUBLISH_EVERY_PROPERTY, OsarLayout.RECORDS));

    static final String MAX_PUBLISH_EVERY_PROPERTY = "collscope.osar.maxPublishEvery";

    /**
     * The longest the automatic interval lets a rank's published counters lag its collectives: 10
     * ms, 1 % of the reporter's default snapshot interval ({@code --interval}, 1 s) and no more
     * than its shortest. At 4 KB (~8 µs per collective) the count comes first; collectives slowed
     * by a fault (an injected 300 µs each would take 0.3 s for 1,024) or spaced out by their job
     * publish every 10 ms instead.
     */
    public static final long PUBLISH_INTERVAL_NANOS = 10_000_000L;

    /**
     * Payload bytes per rank after which a publication is due: collectives over 4 MiB publish more
     * often than every {@link #MAX_PUBLISH_EVERY} (16 MiB: every 256). It is the bound a CUDA
     * graph, which cannot read a clock, keeps in place of {@link #PUBLISH_INTERVAL_NANOS}: 4 GiB is
     * ~17 ms of 16 MiB collectives on two H200s, where the emitter's 10 ms comes first. Measured
     * side by side (run 90): 4 GiB instead of 1 GiB (every 64 at 16 MiB) took the instrumentation
     * at 16 MiB from +657 to +477 ns (f32) and from +297 to +35 (bf16), and changed nothing below 4
     * MiB. A system property, {@value #PUBLISH_BYTES_PROPERTY}, overrides it for measurement.
     */
    public static final long PUBLISH_BYTES =
        Math.max(1, Long.getLong(Options.PUBLISH_BYTES_PROPERTY, 4L << 30));

    static final String PUBLISH_BYTES_PROPERTY = "collscope.osar.publishBytes";

    /**
     * Data blocks per rank when {@link #blocksPerRank()} is 0: one per 4 KiB up to 16 (small
     * collectives are bound by the handshake between ranks, not by bytes, and every block more
     * meets the others on the arrival and finish counters), then one per 8 KiB up to 128, so large
     * collectives keep enough reads in flight across NVLink; a placement lowers it to the SMs it
     * can give each rank. 1 block at 4 KiB, 16 at 64 KiB, 32 at 256 KiB, 128 from 1 MiB. Measured
     * on two H200s against the earlier rule (16 blocks up to 512 KiB, then one per 32 KiB): the
     * instrumented kernel 0.27 µs faster at 4 KiB, 0.21 at 256 KiB, 0.95 at 1 MiB, the same at 64
     * KiB and 16 MiB (run 73, docs/BENCHMARKS.md; runs 50-51 first measured it).
     */
    public static int defaultBlocks(long bytesPerRank) {
      return blocksFor(bytesPerRank, SMALL_BLOCK_BYTES, SMALL_BLOCKS, BLOCK_BYTES);
    }

    /**
     * System properties that override {@link #SMALL_BLOCK_BYTES}, {@link #SMALL_BLOCKS} and {@link
     * #BLOCK_BYTES}: measurement only (dev/gpu-bisect/run-x2-perf.sh compares block rules in one
     * machine session).
     */
    static final String SMALL_BLOCK_BYTES_PROPERTY = "collscope.osar.smallBlockBytes";

    static final String SMALL_BLOCKS_PROPERTY = "collscope.osar.smallBlocks";
    static final String BLOCK_BYTES_PROPERTY = "collscope.osar.blockBytes";

    static final long SMALL_BLOCK_BYTES = Long.getLong(SMALL_BLOCK_BYTES_PROPERTY, 4 << 10);
    static final int SMALL_BLOCKS = Integer.getInteger(SMALL_BLOCKS_PROPERTY, 16);
    static final long BLOCK_BYTES = Long.getLong(BLOCK_BYTES_PROPERTY, 8 << 10);

    /**
     * ceil(bytes / smallBlockBytes) blocks up to {@code smallBlocks}, or bytes / blockBytes if
     * more; at least 1 and at most 128.
     */
    static int blocksFor(
        long bytesPerRank, long smallBlockBytes, int smallBlocks, long blockBytes) {
      long small = Math.min(smallBlocks, (bytesPerRank + smallBlockBytes - 1) / smallBlockBytes);
      long large = bytesPerRank / blockBytes;
      return (int) Math.max(1, Math.min(128, Math.max(small, large)));
    }

    /**
     * Payload bytes per rank from which the ranks push their input into each other's slots instead
     * of copying it into their own for the peers to read ({@code osar.cu}, "Two data paths"), f32
     * and bf16 alike. The serial push path measured slower than pull at 1 and 4 MiB and 3-8 %
     * faster from 8 MiB, f32 only (run 78, docs/BENCHMARKS.md); the pipelined one, which reduces
     * under the transfer, is faster again from 8 MiB for both types on two H200s: f32 16 MiB 58.7
     * against 67.1 µs serial (run 103, one machine session), bf16 16 MiB 59.9 pushed (run 106)
     * against 72.2 pulled (runs 103 and 105), 64 MiB 202.6 against 257.2. A system property,
     * {@value #PUSH_BYTES_PROPERTY}, sets the threshold, for measurement
     * (dev/gpu-bisect/run-x2-perf.sh, MODES); every rank of a communicator must see the same value.
     */
    static final String PUSH_BYTES_PROPERTY = "collscope.osar.pushBytes";

    static final Long PUSH_BYTES_OVERRIDE = Long.getLong(PUSH_BYTES_PROPERTY);
    static final long PUSH_BYTES = 8L << 20;

    /**
     * Warps of each data block that push on the push path; the others reduce the pieces as they
     * land ({@code osar.cu}, "the pipelined push path"). Few enough that the pieces in flight
     * (blocks x this x 4 KiB) land in order over the transfer, not all at its end; enough to keep
     * the link busy. A system property, {@value #PUSH_WARPS_PROPERTY}, overrides it for measurement
     * (0: the serial push path, copy then reduce, as before the pieces); the kernel keeps it
     * between 1 and the block's warps less one.
     */
    static final int PUSH_WARPS = Integer.getInteger(Options.PUSH_WARPS_PROPERTY, 8);

    static final String PUSH_WARPS_PROPERTY = "collscope.osar.pushWarps";

    /**
     * 4 KiB units per piece of the pipelined push path: a push warp releases a piece's flag once
     * the whole piece landed, so larger pieces wait on the link less often and land later. A system
     * property, {@value #PIECE_UNITS_PROPERTY}, overrides it for measurement; every rank of a
     * communicator must see the same value.
     */
    static final int PIECE_UNITS = Math.max(1, Integer.getInteger(Options.PIECE_UNITS_PROPERTY, 1));

    static final String PIECE_UNITS_PROPERTY = "collscope.osar.pieceUnits";

    /** Whether collectives of {@code dtype} and {@code bytesPerRank} take the push path. */
    public static boolean pushFor(DType dtype, long bytesPerRank) {
      if (PUSH_BYTES_OVERRIDE != null) return bytesPerRank >= PUSH_BYTES_OVERRIDE;
      return bytesPerRank >= PUSH_BYTES;
    }

    /**
     * Payload bytes per rank from which communicators of at least {@link #TWO_SHOT_MIN_WORLD} ranks
     * run the two-shot all-reduce ({@link AllReduceAlgorithm#TWO_SHOT}). A one-shot sends (or
     * reads) the whole input to (from) each of P - 1 peers; a two-shot moves 2 (P - 1) / P of it in
     * all, in two exchanges instead of one. Measured in one machine session on two H200s (runs
     * 134-135, docs/BENCHMARKS.md), instrumented f32, µs per collective, pull / push / two-shot: 8
     * ranks 4 MiB 73.3 / 163.7 / 78.1, <b>16 MiB 254.8 / 621.9 / 233.8</b>, 64 MiB 984.9 / 2499.1 /
     * 923.5; 4 ranks 16 MiB 100.0 / 163.7 / 106.1, 64 MiB 362.3 / 640.8 / 373.9; 2 ranks two-shot
     * slower than the one-shot at every size (16 MiB 64.1 against 59.4 pushed). Since the
     * two-shot's reduce reads its tables from shared memory (run 152) and its loops run out of line
     * (run 157), 4 MiB is the smallest size measured faster at 8 ranks (run 155, one H200, 8
     * emulated ranks, f32 µs plain / instrumented, pull against two-shot: 2 MiB 43.4 / 40.6 against
     * 41.4 / 41.5, <b>4 MiB 86.7 / 74.3 against 71.9 / 73.5</b> (71.2 / 71.6 out of line, run 157),
     * 8 MiB 161.4 / 136.1 against 123.2 / 126.8). Those ranks share GPUs (8 or 4 on one H200, where
     * the bytes cross HBM and L2, not a link): on a node of 4 or 8 GPUs, where the one-shot's P - 1
     * copies cross NVLink, the crossover is likely lower and must be measured there. A system
     * property, {@value #TWO_SHOT_BYTES_PROPERTY}, sets the threshold (0: two-shot at every size of
     * whole vectors from {@link #TWO_SHOT_MIN_WORLD} ranks); every rank of a communicator must see
     * the same value.
     */
    static final String TWO_SHOT_BYTES_PROPERTY = "collscope.osar.twoShotBytes";

    static final long TWO_SHOT_BYTES = Long.getLong(TWO_SHOT_BYTES_PROPERTY, 4L << 20);

    /**
     * The least world that runs two-shot by size: 8 (runs 134-135: at 4 ranks the instrumented pull
     * kernel stayed ahead up to 64 MiB; at 2 a two-shot moves the same bytes over the link as a
     * one-shot push and adds a second exchange). A system property, {@value
     * #TWO_SHOT_MIN_WORLD_PROPERTY}, overrides it.
     */
    static final int TWO_SHOT_MIN_WORLD =
        Integer.getInteger(Options.TWO_SHOT_MIN_WORLD_PROPERTY, 8);

    static final String TWO_SHOT_MIN_WORLD_PROPERTY = "collscope.osar.twoShotMinWorld";

    /**
     * The most ranks that take the one-shot push path by size ({@link #pushFor}): it was measured
     * faster at two ranks, one per GPU; with 4 or 8 ranks it sends its input 3 or 7 times and ran
     * 1.5-2.5x slower than pull from 4 MiB (runs 134-135). An explicit {@value
     * #PUSH_BYTES_PROPERTY} applies at every world.
     */
    static final int PUSH_MAX_WORLD = 2;

    /**
     * The algorithm of a communicator of {@code worldSize} ranks and {@code bytesPerRank}: {@link
     * #algorithm()} when set, else two-shot from {@link #TWO_SHOT_BYTES} at {@link
     * #TWO_SHOT_MIN_WORLD} ranks and more (whole 16-byte vectors), else the one-shot push from
     * {@link #pushFor} bytes up to {@link #PUSH_MAX_WORLD} ranks, else the one-shot pull.
     */
    public AllReduceAlgorithm algorithmFor(long bytesPerRank, int worldSize) {
      if (algorithm != null) return algorithm;
      if (worldSize >= TWO_SHOT_MIN_WORLD
          && bytesPerRank >= TWO_SHOT_BYTES
          && bytesPerRank % 16 == 0) {
        return AllReduceAlgorithm.TWO_SHOT;
      }
      boolean pushWorld = worldSize <= PUSH_MAX_WORLD || PUSH_BYTES_OVERRIDE != null;
      return pushWorld && pushFor(dtype, bytesPerRank)
          ? AllReduceAlgorithm.ONE_SHOT_PUSH
          : AllReduceAlgorithm.ONE_SHOT_PULL;
    }

    /** The data paths as {@link #algorithmFor} chooses them, in words. */
    public static String dataPaths() {
      String oneShot =
          PUSH_BYTES_OVERRIDE != null
              ? "push from "
                  + PUSH_BYTES_OVERRIDE
                  + " bytes per rank, pull below ("
                  + PUSH_BYTES_PROPERTY
                  + ")"
              : "push from "
                  + PUSH_BYTES
                  + " bytes per rank up to "
                  + PUSH_MAX_WORLD
                  + " ranks, pull below";
      return oneShot
          + "; two-shot from "
          + TWO_SHOT_BYTES
          + " bytes per rank at "
          + TWO_SHOT_MIN_WORLD
          + " ranks and more";
    }

    /** Collectives between publications for collectives of {@code bytes} per rank. */
    public static int publishEveryFor(long bytes) {
      return (int) Math.max(1, Math.min(MAX_PUBLISH_EVERY, PUBLISH_BYTES / Math.max(1, bytes)));
    }

    public static Options defaults(int worldSize) {
      int gpus = CudaProbe.gpuCount();
      int[] dev = new int[worldSize];
      for (int r = 0; r < worldSize; r++) {
        dev[r] = gpus >= worldSize ? r : 0; // one rank per GPU when there are enough
      }
      return new Options(
          DType.F32, true, 0, 512, dev, 64, AUTO_PUBLISH, DEFAULT_SAMPLE_EVERY, null);
    }

    public Options withDType(DType d) {
      return with(d, instrumented, sampleEvery, algorithm);
    }

    public Options withInstrumented(boolean i) {
      return with(dtype, i, sampleEvery, algorithm);
    }

    public Options withSampleEvery(int n) {
      return with(dtype, instrumented, n, algorithm);
    }

    /** These options with the data path fixed ({@code null}: chosen by size). */
    public Options withAlgorithm(AllReduceAlgorithm a) {
      return with(dtype, instrumented, sampleEvery, a);
    }

    /** A copy with the fields the {@code with} methods change; the placement's fields kept. */
    private Options with(DType d, boolean i, int n, AllReduceAlgorithm a) {
      return new Options(
          d,
          i,
          blocksPerRank,
          threadsPerBlock,
          deviceOfRank,
          checkEveryBatches,
          publishEvery,
          n,
          a);
    }
  }

  private final CollectiveConfig cfg;
  private final FaultPlan faults;
  private final Options opt;
  private final Placement placement;
  private final RankSet ranks;
  private final Launcher launcher;
  private final Dispatcher dispatcher;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private boolean closed;

  private CudaCollective(CollectiveConfig cfg, FaultPlan faults, Options opt, Placement placement) {
    this.cfg = cfg;
    this.faults = faults;
    this.opt = opt;
    this.placement = placement;
    this.ranks = placement.ranks();
    this.launcher =
        new Launcher(
            opt.dtype(),
            opt.threadsPerBlock(),
            opt.publishEvery() == Options.AUTO_PUBLISH
                ? Options.publishEveryFor((long) cfg.elements() * opt.dtype().bytes)
                : opt.publishEvery(),
            opt.publishEvery() == Options.AUTO_PUBLISH ? Options.PUBLISH_INTERVAL_NANOS : 0,
            cfg.worldSize());
    this.dispatcher =
        new Dispatcher(cfg, faults, opt, ranks, launcher, failure, placement.stopAgreement());
  }

  public static CudaCollective open(CollectiveConfig cfg, FaultPlan faults) {
    return open(cfg, faults, Options.defaults(cfg.worldSize()));
  }

  public static CudaCollective open(CollectiveConfig cfg, FaultPlan faults, Options opt) {
    checkRunnable(cfg, faults, opt);
    return new CudaCollective(cfg, faults, opt, SingleProcessPlacement.open(cfg, faults, opt));
  }

  /**
   * One rank of a communicator whose ranks are separate processes, one per GPU (production): this
   * process allocates its own rank on GPU {@code device}, swaps CUDA IPC handles with the other
   * ranks' processes through {@code rendezvous} (see {@link IpcRendezvous}) and maps their ring
   * slots and flags. Only this rank runs and reports here.
   */
  public static CudaCollective openProcessRank(
      CollectiveConfig cfg,
      FaultPlan faults,
      Options opt,
      int rank,
      int device,
      Path rendezvous,
      Duration timeout) {
    checkRunnable(cfg, faults, opt);
    if (rank < 0 || rank >= cfg.worldSize()) {
      throw new ConfigException(
          "rank", rank + " is outside the world of " + cfg.worldSize() + " ranks");
    }
    if (device < 0 || device >= CudaProbe.gpuCount()) {
      throw new ConfigException(
          "device", device + " is not one of the " + CudaProbe.gpuCount() + " GPU(s) here");
    }
    return new CudaCollective(
        cfg, faults, opt, IpcPlacement.open(cfg, faults, opt, rank, device, rendezvous, timeout));
  }

  /**
   * Throws unless the kernel's fixed-size arrays hold {@code cfg} and {@code faults} (no
   * reboot-rank: CPU backend only), and a GPU is usable.
   */
  private static void checkRunnable(CollectiveConfig cfg, FaultPlan faults, Options opt) {
    if (cfg.worldSize() > OsarLayout.MAX_RANKS) {
      throw new ConfigException(
          "worldSize",
          "must be <= " + OsarLayout.MAX_RANKS + " on the CUDA backend, got " + cfg.worldSize());
    }
    if (cfg.histogramBuckets() > OsarLayout.HIST_MAX) {
      throw new ConfigException(
          "histogramBuckets",
          "must be <= "
              + OsarLayout.HIST_MAX
              + " on the CUDA backend, got "
              + cfg.histogramBuckets());
    }
    FaultTable.check(faults, cfg.worldSize());
    long bytes = (long) cfg.elements() * opt.dtype().bytes;
    if (opt.algorithmFor(bytes, cfg.worldSize()) == AllReduceAlgorithm.TWO_SHOT
        && bytes % 16 != 0) {
      throw new ConfigException(
          "algorithm", "two-shot needs whole 16-byte vectors per rank, got " + bytes + " bytes");
    }
    CudaProbe.requireGpu();
  }

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public String accounting() {
    return opt.accountingFor((long) cfg.elements() * opt.dtype().bytes);
  }

  @Override
  public Sampling sampling() {
    return opt.samplingFor((long) cfg.elements() * opt.dtype().bytes);
  }

  @Override
  public String collective() {
    return "allreduce_"
        + algorithm().label
        + "_"
        + opt.dtype().suffix
        + (opt.instrumented() ? "" : "_plain");
  }

  /** How this communicator's all-reduce moves its data. */
  public AllReduceAlgorithm algorithm() {
    return opt.algorithmFor((long) cfg.elements() * opt.dtype().bytes, cfg.worldSize());
  }

  @Override
  public int worldSize() {
    return cfg.worldSize();
  }

  /** Starts one dispatcher thread per GPU (see {@link Dispatcher#start()}). */
  @Override
  public synchronized void start() {
    if (!closed) dispatcher.start();
  }

  @Override
  public synchronized void stop() throws InterruptedException {
    dispatcher.stop();
    if (!closed) {
      try {
        flush();
      } catch (RuntimeException e) {
        failure.compareAndSet(null, e);
      }
    }
  }

  /**
   * Publishes every rank's totals now (the in-kernel publisher lags one collective). Call with no
   * collective in flight.
   */
  public void flush() {
    for (RankBuffers r : ranks.local()) {
      r.device().makeCurrent();
      cuStreamSynchronize(r.stream());
      if (opt.instrumented()) {
        launcher.publish(r);
        cuStreamSynchronize(r.stream());
      }
    }
  }

  @Override
  public CounterBlock block(int rank) {
    return ranks.local(rank).block();
  }

  @Override
  public boolean reports(int rank) {
    return ranks.get(rank) instanceof RankBuffers
        && !faults.isDeadAt(rank, dispatcher.elapsedNanos());
  }

  @Override
  public String device(int rank) {
    return ranks.get(rank).device().label();
  }

  /**
   * One rank per process: the collective every rank stopped after, once the ranks agreed to stop
   * (this one or a peer asked: its {@code --seconds} ended, SIGTERM); nothing more runs.
   */
  @Override
  public OptionalLong stoppedAt() {
    long s = dispatcher.agreedAt();
    return s < 0 ? OptionalLong.empty() : OptionalLong.of(s);
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure.get());
  }

  // The parts CudaBenchHarness drives the ranks with, from the calling thread.

  RankSet ranks() {
    return ranks;
  }

  Launcher launcher() {
    return launcher;
  }

  Dispatcher dispatcher() {
    return dispatcher;
  }

  /** Stops, lets peer processes drain this one's memory, then releases everything. */
  @Override
  public synchronized void close() throws InterruptedException {
    if (closed) return;
    try {
      stop();
      placement.awaitPeersDone();
    } finally {
      closed = true;
      placement.close();
    }
  }
}
