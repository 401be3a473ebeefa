package io.collscope.sim;

import java.util.function.Consumer;

/**
 * What {@link OneShotSimulator} simulates: the world, the run, and the timing model of one rank.
 * All times are simulated nanoseconds; {@link #of(int)} gives the named defaults, the {@code with*}
 * methods change one thing. The defaults are a data-parallel step's gradient buckets: 1 MiB per
 * collective, 5 ms of compute between collectives, which gives about 185 collectives per simulated
 * second at W = 64 and 170 at W = 1024 (the reduce reads W MiB at 2 TB/s).
 *
 * @param worldSize ranks in the communicator (≥ 2)
 * @param durationNanos simulated time of the run; snapshots are taken up to it
 * @param snapshotIntervalNanos each rank's reporter reads its counters this often
 * @param snapshotSkewNanos each rank's reporter is offset by a fixed phase in [0, skew)
 * @param ringSlots slots of the ring: collective s reuses the slot of s - ringSlots
 * @param bytes payload per rank and collective
 * @param copyBytesPerSecond bandwidth of the copy of the input into the own slot
 * @param reduceBytesPerSecond bandwidth of the reduce, which reads {@code worldSize} slots
 * @param linkLatencyNanos from a flag or ack being set until a peer can see it (every link)
 * @param publishNanos local completion: copy done until the flag is set
 * @param pollNanos one poll of the peers' flags (or acks)
 * @param computeGapNanos fixed part of the work between two collectives of a rank
 * @param computeJitterNanos mean of the exponential part of that work, drawn per rank and call
 * @param phaseJitter copy and reduce take up to this fraction longer, uniformly drawn per call
 * @param waitBudgetNanos bound of the guard and of the peer wait; past it the collective aborts
 * @param histogramBuckets buckets of the log2 latency histogram
 * @param seed of every random draw: the same spec and faults give identical records
 */
public record SimSpec(
    int worldSize,
    long durationNanos,
    long snapshotIntervalNanos,
    long snapshotSkewNanos,
    int ringSlots,
    long bytes,
    double copyBytesPerSecond,
    double reduceBytesPerSecond,
    long linkLatencyNanos,
    long publishNanos,
    long pollNanos,
    long computeGapNanos,
    long computeJitterNanos,
    double phaseJitter,
    long waitBudgetNanos,
    int histogramBuckets,
    long seed) {

  public static final long DEFAULT_DURATION_NANOS = 20_000_000_000L;
  public static final long DEFAULT_SNAPSHOT_INTERVAL_NANOS = 1_000_000_000L;
  public static final long DEFAULT_SNAPSHOT_SKEW_NANOS = 20_000_000L;
  public static final int DEFAULT_RING_SLOTS = 4;
  public static final long DEFAULT_BYTES = 1 << 20;
  public static final double DEFAULT_COPY_BYTES_PER_SECOND = 500e9;
  public static final double DEFAULT_REDUCE_BYTES_PER_SECOND = 2e12;
  public static final long DEFAULT_LINK_LATENCY_NANOS = 2_000;
  public static final long DEFAULT_PUBLISH_NANOS = 1_000;
  public static final long DEFAULT_POLL_NANOS = 100;
  public static final long DEFAULT_COMPUTE_GAP_NANOS = 5_000_000;
  public static final long DEFAULT_COMPUTE_JITTER_NANOS = 20_000;
  public static final double DEFAULT_PHASE_JITTER = 0.05;
  public static final long DEFAULT_WAIT_BUDGET_NANOS = 1_000_000_000L;
  public static final int DEFAULT_HISTOGRAM_BUCKETS = 40;
  public static final long DEFAULT_SEED = 1;

  public SimSpec {
    require(worldSize >= 2, "worldSize must be >= 2, got " + worldSize);
    require(durationNanos > 0, "durationNanos must be > 0");
    require(snapshotIntervalNanos > 0, "snapshotIntervalNanos must be > 0");
    require(
        snapshotSkewNanos >= 0 && snapshotSkewNanos < snapshotIntervalNanos,
        "snapshotSkewNanos must be in [0, snapshotIntervalNanos)");
    require(ringSlots >= 1, "ringSlots must be >= 1");
    require(bytes > 0, "bytes must be > 0");
    require(copyBytesPerSecond > 0 && reduceBytesPerSecond > 0, "bandwidths must be > 0");
    require(linkLatencyNanos >= 0 && publishNanos >= 0, "latencies must be >= 0");
    require(pollNanos >= 1, "pollNanos must be >= 1");
    require(computeGapNanos >= 0 && computeJitterNanos >= 0, "compute gap must be >= 0");
    require(phaseJitter >= 0, "phaseJitter must be >= 0");
    require(waitBudgetNanos >= 1_000, "waitBudgetNanos must be >= 1us");
    require(histogramBuckets >= 1 && histogramBuckets <= 64, "histogramBuckets in 1..64");
  }

  private static void require(boolean ok, String what) {
    if (!ok) throw new IllegalArgumentException(what);
  }

  /** The defaults for a world of {@code worldSize} ranks. */
  public static SimSpec of(int worldSize) {
    return new SimSpec(
        worldSize,
        DEFAULT_DURATION_NANOS,
        DEFAULT_SNAPSHOT_INTERVAL_NANOS,
        DEFAULT_SNAPSHOT_SKEW_NANOS,
        DEFAULT_RING_SLOTS,
        DEFAULT_BYTES,
        DEFAULT_COPY_BYTES_PER_SECOND,
        DEFAULT_REDUCE_BYTES_PER_SECOND,
        DEFAULT_LINK_LATENCY_NANOS,
        DEFAULT_PUBLISH_NANOS,
        DEFAULT_POLL_NANOS,
        DEFAULT_COMPUTE_GAP_NANOS,
        DEFAULT_COMPUTE_JITTER_NANOS,
        DEFAULT_PHASE_JITTER,
        DEFAULT_WAIT_BUDGET_NANOS,
        DEFAULT_HISTOGRAM_BUCKETS,
        DEFAULT_SEED);
  }

  /** Copy time of one collective without jitter, ns. */
  public long copyNanos() {
    return Math.round(bytes * 1e9 / copyBytesPerSecond);
  }

  /** Reduce time of one collective without jitter (reads every rank's slot), ns. */
  public long reduceNanos() {
    return Math.round((double) bytes * worldSize * 1e9 / reduceBytesPerSecond);
  }

  public SimSpec withDurationNanos(long v) {
    return edit(b -> b.durationNanos = v);
  }

  /** Snapshot interval and skew; the skew must stay below the interval. */
  public SimSpec withSnapshots(long intervalNanos, long skewNanos) {
    return edit(
        b -> {
          b.snapshotIntervalNanos = intervalNanos;
          b.snapshotSkewNanos = skewNanos;
        });
  }

  public SimSpec withRingSlots(int v) {
    return edit(b -> b.ringSlots = v);
  }

  public SimSpec withBytes(long v) {
    return edit(b -> b.bytes = v);
  }

  public SimSpec withLinkLatencyNanos(long v) {
    return edit(b -> b.linkLatencyNanos = v);
  }

  /** The work between two collectives: a fixed part and the mean of an exponential part. */
  public SimSpec withComputeGap(long gapNanos, long jitterNanos) {
    return edit(
        b -> {
          b.computeGapNanos = gapNanos;
          b.computeJitterNanos = jitterNanos;
        });
  }

  public SimSpec withWaitBudgetNanos(long v) {
    return edit(b -> b.waitBudgetNanos = v);
  }

  public SimSpec withSeed(long v) {
    return edit(b -> b.seed = v);
  }

  /** This spec with {@code change} applied to a copy of its components, checked anew. */
  private SimSpec edit(Consumer<Components> change) {
    Components c = new Components(this);
    change.accept(c);
    return c.spec();
  }

  /** The components as fields, for the {@code with*} methods: one place lists them all. */
  private static final class Components {
    int worldSize;
    long durationNanos;
    long snapshotIntervalNanos;
    long snapshotSkewNanos;
    int ringSlots;
    long bytes;
    double copyBytesPerSecond;
    double reduceBytesPerSecond;
    long linkLatencyNanos;
    long publishNanos;
    long pollNanos;
    long computeGapNanos;
    long computeJitterNanos;
    double phaseJitter;
    long waitBudgetNanos;
    int histogramBuckets;
    long seed;

    Components(SimSpec s) {
      worldSize = s.worldSize;
      durationNanos = s.durationNanos;
      snapshotIntervalNanos = s.snapshotIntervalNanos;
      snapshotSkewNanos = s.snapshotSkewNanos;
      ringSlots = s.ringSlots;
      bytes = s.bytes;
      copyBytesPerSecond = s.copyBytesPerSecond;
      reduceBytesPerSecond = s.reduceBytesPerSecond;
      linkLatencyNanos = s.linkLatencyNanos;
      publishNanos = s.publishNanos;
      pollNanos = s.pollNanos;
      computeGapNanos = s.computeGapNanos;
      computeJitterNanos = s.computeJitterNanos;
      phaseJitter = s.phaseJitter;
      waitBudgetNanos = s.waitBudgetNanos;
      histogramBuckets = s.histogramBuckets;
      seed = s.seed;
    }

    SimSpec spec() {
      return new SimSpec(
          worldSize,
          durationNanos,
          snapshotIntervalNanos,
          snapshotSkewNanos,
          ringSlots,
          bytes,
          copyBytesPerSecond,
          reduceBytesPerSecond,
          linkLatencyNanos,
          publishNanos,
          pollNanos,
          computeGapNanos,
          computeJitterNanos,
          phaseJitter,
          waitBudgetNanos,
          histogramBuckets,
          seed);
    }
  }
}
