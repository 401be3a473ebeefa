package io.collscope.flink.attribution;

import java.util.Arrays;
import java.util.Comparator;

/**
 * A multiset of values, most with weight 1 and a few with a weight (a row's unlisted cells): its
 * nearest-rank quantiles as those of the values repeated. A compact rank window gives its unlisted
 * peers one value, so a row of a thousand ranks is its few listed cells and one weighted value,
 * never a thousand cells.
 */
final class Weighted {
  private double[] ones = new double[64];
  private int n1;
  private double[] heavy = new double[8];
  private long[] weight = new long[8];
  private int nh;
  private long size;

  void add(double v, long w) {
    if (w <= 0) return;
    size += w;
    if (w == 1) {
      if (n1 == ones.length) ones = Arrays.copyOf(ones, 2 * n1);
      ones[n1++] = v;
      return;
    }
    if (nh == heavy.length) {
      heavy = Arrays.copyOf(heavy, 2 * nh);
      weight = Arrays.copyOf(weight, 2 * nh);
    }
    heavy[nh] = v;
    weight[nh++] = w;
  }

  long size() {
    return size;
  }

  double min() {
    double m = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n1; i++) m = Math.min(m, ones[i]);
    for (int i = 0; i < nh; i++) m = Math.min(m, heavy[i]);
    return size == 0 ? 0 : m;
  }

  /** Nearest-rank 25th percentile. */
  double lowerQuartile() {
    return at(Math.max(0, (long) Math.ceil(0.25 * size) - 1));
  }

  double median() {
    if (size == 0) return 0;
    double hi = at(size / 2);
    return size % 2 == 1 ? hi : (at(size / 2 - 1) + hi) / 2;
  }

  /** The value of rank r (from 0) of the values repeated by their weights. */
  double at(long r) {
    if (nh == 0) return RobustStatistics.select(ones, n1, (int) r);
    Arrays.sort(ones, 0, n1);
    Integer[] order = new Integer[nh];
    for (int i = 0; i < nh; i++) order[i] = i;
    Arrays.sort(order, Comparator.comparingDouble(i -> heavy[i]));
    long seen = 0;
    int a = 0;
    int b = 0;
    while (a < n1 || b < nh) {
      boolean fromOnes = b >= nh || (a < n1 && ones[a] <= heavy[order[b]]);
      double v = fromOnes ? ones[a] : heavy[order[b]];
      seen += fromOnes ? 1 : weight[order[b]];
      if (fromOnes) a++;
      else b++;
      if (seen > r) return v;
    }
    throw new IllegalArgumentException("rank " + r + " of " + size + " values");
  }
}
