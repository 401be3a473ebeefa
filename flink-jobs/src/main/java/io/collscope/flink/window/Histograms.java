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
   * Quantile {@code q} of one peer's lateness histogram, in microseconds: the {@link
   * RankTotals#LATE_BUCKETS} entries from {@code from} (bucket b covers [2^(b + LATE_SHIFT), 2^(b +
   * LATE_SHIFT + 1)) cycles; bucket 0 from 0; the last is open and reports its lower edge),
   * interpolated linearly within the bucket that holds it: an upper edge would overstate a tail by
   * up to twice, enough to make a merely skewed peer look intermittently slow. 0 when the peer has
   * no counts.
   */
  public static double lateQuantileUs(long[] hist, int from, double q, double cyclesPerSecond) {
    long total = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) total += hist[from + b];
    if (total == 0 || cyclesPerSecond <= 0) return 0;
    double rank = Math.max(1, q * total);
    long seen = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
      long c = hist[from + b];
      double lo = b == 0 ? 0 : Math.scalb(1.0, b + RankTotals.LATE_SHIFT);
      if (b == RankTotals.LATE_BUCKETS - 1) return lo / cyclesPerSecond * 1e6;
      if (seen + c >= rank) {
        double hi = Math.scalb(1.0, b + RankTotals.LATE_SHIFT + 1);
        return (lo + (hi - lo) * (rank - seen) / c) / cyclesPerSecond * 1e6;
      }
      seen += c;
    }
    return 0; // not reached: the last bucket returns
  }

  /**
   * The variance of one peer's lateness per collective, in µs², from its histogram's {@link
   * RankTotals#LATE_BUCKETS} entries from {@code from}: each count at its bucket's middle (bucket 0
   * at half its upper edge, the open last bucket at 1.5 × its lower edge). Exact to the buckets'
   * factor of two, which is what a standard error needs; 0 when the peer has no counts.
   */
  public static double lateVarianceUs2(long[] hist, int from, double cyclesPerSecond) {
    double n = 0, sum = 0, sq = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
      long c = hist[from + b];
      if (c == 0) continue;
      double v = lateBucketMiddleUs(b, cyclesPerSecond);
      n += c;
      sum += c * v;
      sq += c * v * v;
    }
    if (n == 0) return 0;
    double mean = sum / n;
    return Math.max(0, sq / n - mean * mean);
  }

  /** The middle of lateness bucket b in µs (see {@link #lateVarianceUs2}). */
  static double lateBucketMiddleUs(int b, double cyclesPerSecond) {
    double cycles =
        b == 0
            ? Math.scalb(1.0, RankTotals.LATE_SHIFT)
            : 1.5 * Math.scalb(1.0, b + RankTotals.LATE_SHIFT);
    return cycles / cyclesPerSecond * 1e6;
  }

  /** The lower edge of lateness bucket b in µs (0 for bucket 0). */
  public static double lateBucketLowerUs(int b, double cyclesPerSecond) {
    return b == 0 ? 0 : Math.scalb(1.0, b + RankTotals.LATE_SHIFT) / cyclesPerSecond * 1e6;
  }

  /** The bucket that holds quantile q of one peer's lateness histogram, -1 when it is empty. */
  public static int lateQuantileBucket(long[] hist, int from, double q) {
    long total = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) total += hist[from + b];
    if (total == 0) return -1;
    double rank = Math.max(1, q * total);
    long seen = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
      seen += hist[from + b];
      if (seen >= rank) return b;
    }
    return RankTotals.LATE_BUCKETS - 1;
  }

  /** The share of one peer's counts in buckets {@code edge} and above; 0 when it has none. */
  public static double lateShareFrom(long[] hist, int from, int edge) {
    long total = 0, above = 0;
    for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
      total += hist[from + b];
      if (b >= edge) above += hist[from + b];
    }
    return total == 0 ? 0 : (double) above / total;
  }

  /** Quarter-round buckets of the CTA lead histogram (CounterSnapshot.cta_lead_histogram). */
  public static final int LEAD_PER_ROUND = 4;

  /**
   * Upper edge, in persistent rounds, of the quarter-round bucket holding quantile q of a CTA lead
   * histogram; 0 when it is empty (no persistent-CTA kernel, or no tile in the window).
   */
  public static double leadQuantileRounds(long[] hist, double q) {
    long total = 0;
    for (long h : hist) total += h;
    if (total == 0) return 0;
    long need = (long) Math.ceil(q * total);
    long seen = 0;
    for (int b = 0; b < hist.length; b++) {
      seen += hist[b];
      if (seen >= need) return (b + 1) / (double) LEAD_PER_ROUND;
    }
    return hist.length / (double) LEAD_PER_ROUND;
  }
}
