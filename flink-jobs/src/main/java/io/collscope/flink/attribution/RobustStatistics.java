package io.collscope.flink.attribution;

import java.util.Arrays;
import java.util.List;

/**
 * The robust statistics the attribution rule is built on: medians and selection without a full
 * sort, and the trimmed centre and spread of a set of effects. Culprits only ever raise an effect,
 * so the rule's centres and spreads are medians and median absolute deviations, which a few of them
 * do not move; {@link Weighted} and {@link CorrectedSorted} give the same quantiles over a sparse
 * matrix's rows and columns without building them.
 */
final class RobustStatistics {

  private RobustStatistics() {}

  /** A median absolute deviation times this estimates a normal distribution's deviation. */
  static final double MAD_TO_SD = 1.4826;

  /** The median of the values, 0 when there are none. */
  static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    if (a.length == 0) return 0;
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  /** The median of the first n values (reordered). */
  static double median(double[] a, int n) {
    if (n == 0) return 0;
    double hi = select(a, n, n / 2);
    return n % 2 == 1 ? hi : (select(a, n / 2, n / 2 - 1) + hi) / 2;
  }

  /**
   * The value of rank {@code k} (from 0) among the first n values; afterwards the values below k
   * are no greater and those above no smaller (Hoare's selection, median-of-three pivots).
   */
  static double select(double[] a, int n, int k) {
    int lo = 0;
    int hi = n - 1;
    while (hi > lo) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] < a[lo]) swap(a, mid, lo);
      if (a[hi] < a[lo]) swap(a, hi, lo);
      if (a[hi] < a[mid]) swap(a, hi, mid);
      double pivot = a[mid];
      int i = lo;
      int j = hi;
      while (i <= j) {
        while (a[i] < pivot) i++;
        while (a[j] > pivot) j--;
        if (i <= j) {
          swap(a, i, j);
          i++;
          j--;
        }
      }
      if (k <= j) hi = j;
      else if (k >= i) lo = i;
      else return a[k];
    }
    return a[k];
  }

  private static void swap(double[] a, int i, int j) {
    double t = a[i];
    a[i] = a[j];
    a[j] = t;
  }

  /**
   * The centre (median) and spread (1.4826 × median absolute deviation) of the lowest two thirds of
   * the values (reordered): culprits only ever raise an effect, so up to a third of them — and, in
   * small worlds, as many as half — leave both where the clean peers put them. Trimming the top
   * third of clean values lowers both a little, which the bar's z (about 5) more than covers.
   */
  static double[] trimmedCenterAndSpread(double[] v) {
    int kept = v.length - v.length / 3;
    if (kept == 0) return new double[] {0, 0};
    Arrays.sort(v);
    double center = median(Arrays.copyOf(v, kept), kept);
    double[] dev = new double[kept];
    for (int i = 0; i < kept; i++) dev[i] = Math.abs(v[i] - center);
    return new double[] {center, MAD_TO_SD * median(dev, kept)};
  }

  /** A confidence: x within [0, 1], NaN as 0. */
  static double clamp(double x) {
    return Double.isNaN(x) ? 0 : Math.max(0, Math.min(1, x));
  }
}
