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

  public RankTotals totals;

  /** Index: {@code Phase.ordinal()}. */
  public double[] phaseUs;

  public double[] peerWaitUs;

  /** Empty when the window's snapshots predate per-peer lateness (version 4). */
  public double[] peerLateUs;

  /** Persistent-CTA kernels: the window's tiles per quarter-round lead bucket (else empty). */
  public long[] leadHistogram = new long[0];

  public long throttleStalls;
  public long tiles;

  public RankWindowAccumulator() {}
}
