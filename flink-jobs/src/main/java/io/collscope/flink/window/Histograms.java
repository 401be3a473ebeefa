package io.collscope.flink.window;

import io.collscope.model.RankTotals;

/** Quantiles from the counter block's log2 latency histogram. */
public final class Histograms {

  private Histograms() {}

  /**
   * The upper edge, in microseconds, of the bucket holding quantile {@code q} (bucket i covers
   * [2^i, 2^(i+1)) cycles). An upper bound, exact to a factor of two; 0 for an empty histogram.
   */
  public static double quantileUs(long[] histogram, double q, double cyclesPerSecond) {
    long total = 0;
    for (long c : histogram) total += c;
    if (total == 0 || cyclesPerSecond <= 0) return 0;
    long rank = (long) Math.ceil(q * total);
    long seen = 0;
    for (int i = 0; i < histogram.length; i++) {
      seen += histogram[i];
      if (seen >= Math.max(rank, 1)) {
        return Math.scalb(1.0, i + 1) / cyclesPerSecond * 1e6;
      }
    }
    return Math.scalb(1.0, histogram.length) / cyclesPerSecond * 1e6;
  }

  /**
   * The upper edge, in microseconds, of the bucket holding quantile {@code q} of one peer's
   * lateness histogram: the {@link RankTotals#LATE_BUCKETS} entries from {@code from} (bucket b
   * ends at 2^(b + LATE_SHIFT + 1) cycles; the open last bucket reports its lower edge). 0 when the
   * peer has no counts.
   */
  public static double lateQuantileUs(long[] hist, int from, double q, double cyclesPerSecond) {
    long total = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) total += hist[from + b];
    if (total == 0 || cyclesPerSecond <= 0) return 0;
    long rank = Math.max(1, (long) Math.ceil(q * total));
    long seen = 0;
    int b = 0;
    for (; b < RankTotals.LATE_BUCKETS - 1; b++) {
      seen += hist[from + b];
      if (seen >= rank) break;
    }
    int edge = b + RankTotals.LATE_SHIFT + (b == RankTotals.LATE_BUCKETS - 1 ? 0 : 1);
    return Math.scalb(1.0, edge) / cyclesPerSecond * 1e6;
  }
}
