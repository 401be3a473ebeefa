package io.collscope.flink.window;

import io.collscope.model.RankTotals;

/**
 * Running sums of one rank's deltas within one window: the counters themselves (cycles, for the
 * histogram and the clock samples) and the phase and per-peer times in microseconds. Each delta's
 * cycles become microseconds at that delta's own clock rate ({@link RankTotals#clockRate}), so a
 * clock that changes within the window is converted piece by piece, correctly.
 */
public class RankWindowAccumulator {
  public String cluster;
  public String job;
  public String communicator;
  public String collective;
  public int rank = -1;
  public int worldSize;
  public String host;

  /** The start-up rate of the latest delta: the fallback when the window has no clock samples. */
  public long cyclesPerSecond;

  /**
   * The summed counters. Their per-peer arrays (arrived-last counts, lateness histograms; the
   * cycles are kept in microseconds below instead) are indexed by peer in a dense window and by
   * position in {@link #peerIndex} in a compact one. Null between deltas: in {@link #packedCounts}.
   */
  public RankTotals totals;

  /** Index: {@code Phase.ordinal()}. */
  public double[] phaseUs;

  /** By peer, or by position in {@link #peerIndex}. */
  public double[] peerWaitUs;

  /** Empty when the window's snapshots predate per-peer lateness (version 4). As peerWaitUs. */
  public double[] peerLateUs;

  /**
   * Empty: a dense window (the records were dense: 19 longs and 2 doubles per peer). Non-empty: a
   * compact one (read it unpacked: {@link #packedCounts}), the sums of compact deltas — the union
   * of the peers they listed, ascending, and for every other peer one value, the same for all of
   * them (each delta gave all its unlisted peers the same value): {@code others*}. At most the
   * aggregate's cap ({@link RankWindowAggregate#DEFAULT_MAX_WINDOW_PEERS}), whatever the world
   * size.
   */
  public int[] peerIndex = new int[0];

  /**
   * Between deltas: the totals' count arrays (counters, phase cycles, latency histogram, per-peer
   * cycles, arrived-last counts and lateness histograms), {@link #othersLateHistogram} and {@link
   * #peerIndex}, sparse ({@link SparseCounts}); {@link #totals} is then null, the others' histogram
   * and the peer index empty ({@link RankWindowAggregate#readable} decodes them). Empty in an
   * accumulator of the previous version, which holds the arrays in full.
   */
  public byte[] packedCounts = new byte[0];

  /** Compact windows: each unlisted peer's wait, µs summed over the window. */
  public double othersWaitUs;

  /** Compact windows: each unlisted peer's lateness, µs summed over the window. */
  public double othersLateUs;

  /** Compact windows: each unlisted peer's arrived-last count. */
  public long othersArrivedLast;

  /** Compact windows: each unlisted peer's lateness histogram (empty without lateness). */
  public long[] othersLateHistogram = new long[0];

  /** Persistent-CTA kernels: the window's tiles per quarter-round lead bucket (else empty). */
  public long[] leadHistogram = new long[0];

  public long throttleStalls;
  public long tiles;

  /**
   * The deltas' sampled collectives, summed: the sample behind the window's accounted sums. -1 in
   * an accumulator restored from a job before them (Flink's POJO serializer leaves a field the
   * state lacks as the constructor set it; a fresh accumulator's first delta sets both to 0): its
   * window divides by the calls, as that job did.
   */
  public long sampledCalls = -1;

  /** The collectives those sums stand for (each delta's sample times its sample_every), or -1. */
  public long accountedCalls = -1;

  /** The latest delta's sample_every (1: every collective accounted). */
  public int sampleEvery = 1;

  /**
   * Batch means of the lateness, for its standard error ({@link RankWindowFunction}): each delta of
   * a dense window is one batch of {@code n} accounted collectives with lateness sum {@code L} (µs)
   * per peer. By peer: the sum over the deltas of {@code L²} and of {@code L·n}. Empty in a compact
   * window (its peers come and go between deltas: the histogram alone gives its error) and in an
   * accumulator restored from a job before them.
   */
  public double[] peerLateSquares = new double[0];

  /** By peer, as {@link #peerLateSquares}: the sum over the deltas of {@code L·n}. */
  public double[] peerLateCross = new double[0];

  /** The sum over the window's deltas of {@code n²} (their accounted collectives squared). */
  public double batchCallsSquares;

  /** The deltas that went into the batch sums (0: no batches, the histogram alone). */
  public long batches;

  /**
   * NCCL: the window's timed collectives by key, in arrival order ({@link TimedCollectives}); empty
   * for other emitters and in an accumulator restored from a job before them.
   */
  public long[] timedKeys = new long[0];

  /** By position in {@link #timedKeys}: the kernel length in nanoseconds. */
  public long[] timedKernelNs = new long[0];

  /** Timed collectives beyond {@link TimedCollectives#MAX_PER_WINDOW}. */
  public long timedDropped;

  /**
   * NCCL: the window's network waits per peer ({@link NetworkWaits}): the peers, ascending, and by
   * position the send steps' wait ns and count, the receive steps' wait ns and count. Null in an
   * accumulator restored from a job before them.
   */
  public int[] netPeers = new int[0];

  public long[] netSendNs = new long[0];
  public long[] netSendSteps = new long[0];
  public long[] netRecvNs = new long[0];
  public long[] netRecvSteps = new long[0];

  public RankWindowAccumulator() {}
}
