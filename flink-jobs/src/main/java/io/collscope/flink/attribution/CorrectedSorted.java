package io.collscope.flink.attribution;

import java.util.Arrays;

/**
 * A multiset given as a sorted base less some of its positions plus a few values: the column of a
 * sparse matrix (the rows' common values, less the rows that list the column, plus their cells).
 * Its values by rank in O(changes × log size), without building it.
 */
final class CorrectedSorted {
  private final double[] base; // ascending
  private final int[] removed; // positions in base, ascending, distinct
  private final double[] added; // ascending

  CorrectedSorted(double[] base, int[] removed, double[] added) {
    this.base = base;
    this.removed = removed.clone();
    this.added = added.clone();
    Arrays.sort(this.removed);
    Arrays.sort(this.added);
  }

  int size() {
    return base.length - removed.length + added.length;
  }

  /** The value of rank t (from 0). */
  double at(int t) {
    // A base value at position p has a rank within [p - removed, p + added]: the answer is one
    // of the added values or a base value from positions t - added .. t + removed.
    for (double v : added) if (holdsRank(v, t)) return v;
    int from = Math.max(0, t - added.length);
    int to = Math.min(base.length - 1, t + removed.length);
    for (int p = from; p <= to; p++) {
      if (Arrays.binarySearch(removed, p) < 0 && holdsRank(base[p], t)) return base[p];
    }
    throw new IllegalStateException("rank " + t + " of " + size());
  }

  double median() {
    int m = size();
    if (m % 2 == 1) return at(m / 2);
    return (at(m / 2 - 1) + at(m / 2)) / 2;
  }

  /** Whether rank t falls on value v: fewer than t+1 values below v, more than t up to it. */
  private boolean holdsRank(double v, int t) {
    int below = lowerBound(base, v);
    int upTo = upperBound(base, v);
    long lt = below - countBelow(removed, below) + lowerBound(added, v);
    long le = upTo - countBelow(removed, upTo) + upperBound(added, v);
    return lt <= t && t < le;
  }

  private static int countBelow(int[] sortedPositions, int limit) {
    int i = Arrays.binarySearch(sortedPositions, limit);
    return i >= 0 ? i : -i - 1;
  }

  private static int lowerBound(double[] a, double v) {
    int lo = 0, hi = a.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private static int upperBound(double[] a, double v) {
    int lo = 0, hi = a.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] <= v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
