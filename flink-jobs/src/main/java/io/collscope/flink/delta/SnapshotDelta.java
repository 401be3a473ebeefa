package io.collscope.flink.delta;

import io.collscope.model.Counter;
import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;

/**
 * What one rank did between two consecutive snapshots of one boot: the counters' differences, with
 * the start-up clock rate for deltas without clock samples. Timestamped with the later snapshot's
 * event time.
 */
public class SnapshotDelta {
  public String cluster;
  public String job;
  public String communicator;
  public String collective;
  public int rank;
  public int worldSize;
  public String host;
  public String bootId;
  public long eventTimeMs;
  public long cyclesPerSecond;

  /**
   * The counters' differences. Their per-peer arrays are indexed by peer when {@link #peerIndex} is
   * empty (dense records), and by position in it otherwise.
   */
  public RankTotals totals;

  /**
   * Empty: a dense delta. Non-empty: the delta of compact records, kept compact — the peers either
   * record listed, ascending (entry i of the per-peer arrays of {@link #totals} is peer {@code
   * peerIndex[i]}); every other peer's delta is the same, the {@code others*} values below (the
   * others' mean of the later record minus that of the earlier one). Exactly what expanding both
   * records and subtracting them gives ({@code CompactPeers}), without the 19 × world-size
   * counters.
   */
  public int[] peerIndex = new int[0];

  /** Compact deltas: each unlisted peer's wait cycles. */
  public long othersWaitCycles;

  /** Compact deltas: each unlisted peer's arrived-last count. */
  public long othersArrivedLast;

  /** Compact deltas: each unlisted peer's lateness cycles (0 without lateness). */
  public long othersLateCycles;

  /** Compact deltas: each unlisted peer's lateness histogram (empty without lateness). */
  public long[] othersLateHistogram = new long[0];

  /**
   * Persistent-CTA kernels (CounterSnapshot version 5): tiles begun per quarter-round lead bucket,
   * throttle stalls and tiles, as differences; empty / 0 for other collectives.
   */
  public long[] leadHistogram = new long[0];

  public long throttleStalls;
  public long tiles;

  /**
   * Collectives whose accounted fields (phases, per-peer arrays, clock samples, latency histogram)
   * the difference holds: the sample, not weighted ({@code SampledCalls}). The calls where the
   * emitter accounts every one. -1 (as constructed): not said, every call accounted ({@link
   * DeltaFunction} always says).
   */
  public long sampledCalls = -1;

  /**
   * The collectives those accounted differences stand for: {@link #sampledCalls} times the
   * emitter's sample_every. Per-collective means divide by this, not by the calls.
   */
  public long accountedCalls = -1;

  /**
   * NCCL (CounterSnapshot version 8): the collectives the later snapshot says were timed since the
   * one before it, by key, and their kernel lengths (ns); empty for other emitters.
   */
  public long[] timedKeys = new long[0];

  public long[] timedKernelNs = new long[0];

  /**
   * NCCL (CounterSnapshot version 9): the network waits of the interval per peer — the peers
   * (ascending) and, by position, the send steps' wait ns and count and the receive steps' wait ns
   * and count; empty for other emitters.
   */
  public int[] netPeers = new int[0];

  public long[] netSendNs = new long[0];
  public long[] netSendSteps = new long[0];
  public long[] netRecvNs = new long[0];
  public long[] netRecvSteps = new long[0];

  public SnapshotDelta() {}

  /** Whether the per-peer part is compact ({@link #peerIndex}). */
  public boolean compact() {
    return peerIndex.length > 0;
  }

  /** {@link #sampledCalls}, or the calls where it is not said. */
  public long sampled() {
    return sampledCalls < 0 ? totals.get(Counter.CALLS) : sampledCalls;
  }

  /** {@link #accountedCalls}, or the calls where it is not said. */
  public long accounted() {
    return accountedCalls < 0 ? totals.get(Counter.CALLS) : accountedCalls;
  }

  public RankKey key() {
    return new RankKey(cluster, job, communicator, rank);
  }
}
