package io.collscope.flink.window;

import java.util.Arrays;

/**
 * A rank window's timed collectives (NCCL: the collectives whose kernels the plugin timed), kept
 * for the attribution's cross-node join: their keys and kernel lengths, in the order they came.
 *
 * <p>Capped at {@link #MAX_PER_WINDOW} a window, the first ones kept: every rank of a communicator
 * times the same collectives in the same order, so the first ones are (but for the window's edges)
 * the same keys on every rank, and the join loses nothing it could have paired. The rest are
 * counted ({@link RankWindowAccumulator#timedDropped}). At NCCL's default sampling (1 collective in
 * 64) a window of 10 s holds a few hundred; the cap bounds the state of a job that times every
 * collective (16 bytes an entry: 8 KB a rank window).
 */
public final class TimedCollectives {

  /** Timed collectives a rank window keeps. */
  public static final int MAX_PER_WINDOW = 512;

  private TimedCollectives() {}

  /** Appends {@code keys}/{@code ns} (same length) to a's, up to the cap; counts the rest. */
  static void append(RankWindowAccumulator a, long[] keys, long[] ns, long dropped) {
    a.timedDropped += dropped;
    if (keys.length == 0) return;
    int have = a.timedKeys.length;
    int take = Math.min(keys.length, MAX_PER_WINDOW - have);
    a.timedDropped += keys.length - Math.max(0, take);
    if (take <= 0) return;
    a.timedKeys = Arrays.copyOf(a.timedKeys, have + take);
    a.timedKernelNs = Arrays.copyOf(a.timedKernelNs, have + take);
    System.arraycopy(keys, 0, a.timedKeys, have, take);
    System.arraycopy(ns, 0, a.timedKernelNs, have, take);
  }

  /** Empties a's timed collectives (a rank that changed shape within the window). */
  static void clear(RankWindowAccumulator a) {
    a.timedKeys = new long[0];
    a.timedKernelNs = new long[0];
    a.timedDropped = 0;
  }
}
