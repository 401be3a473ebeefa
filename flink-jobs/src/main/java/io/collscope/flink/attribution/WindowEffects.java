package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.RobustStatistics.MAD_TO_SD;
import static io.collscope.flink.attribution.RobustStatistics.clamp;
import static io.collscope.flink.attribution.RobustStatistics.median;
import static io.collscope.flink.attribution.RobustStatistics.trimmedCenterAndSpread;

import io.collscope.flink.baseline.WindowBaseline;
import java.util.Arrays;

/**
 * The effects of one window's delay matrix, which every matrix test of the rule ({@link
 * Attributor}) weighs its findings with: each row's effect (its lower quartile: a rank that waits
 * on everyone), each column's effect (the median of its cells less their rows' effects: a peer that
 * everyone waits on), their centre and between-peer spread, the standard errors, the floors and the
 * bars a column, a cell and a link must clear, and which cells clear their own. Computed once a
 * window, before any test, so that every test reads the same numbers.
 */
final class WindowEffects {
  final LatenessMatrix x;
  final Thresholds t;
  final int k;

  final double[] rowEffect;
  final Cells centred; // L[i][j] less row i's effect
  final double[] colEffect;
  final double center;
  final double spread;
  final double[] colSe;
  final double cellSpread;
  final double floor; // the largest of the absolute and relative floors
  final double z; // over the columns
  final double zLink; // over the cells
  final Cells se2; // the cells' standard errors squared
  final double[] colNoise; // what a column effect is weighed against
  final double[] colBar;
  final Cells excess; // centred less the centre
  final Cells high; // 1 where a cell clears its own bar

  WindowEffects(LatenessMatrix x, Thresholds t, WindowBaseline baseline) {
    this.x = x;
    this.t = t;
    k = x.k;

    rowEffect = new double[k];
    boolean centring = x.lateness && k >= 3;
    if (centring) {
      for (int i = 0; i < k; i++) rowEffect[i] = x.row(x.mean, i).lowerQuartile();
    }
    centred = x.mean.map((i, v) -> v - rowEffect[i]);
    colEffect = new double[k];
    if (k == 2) {
      colEffect[0] = x.at(centred, 1, 0);
      colEffect[1] = x.at(centred, 0, 1);
    } else if (k >= 3) {
      ColumnMedians medians = new ColumnMedians(x, centred, new boolean[k]);
      for (int j = 0; j < k; j++) colEffect[j] = medians.of(j).medianWithout(-1);
    }
    double[] effects = colEffect.clone();
    if (k == 2) {
      // One cell each way: one direction is clean unless both are slow. Without lateness the
      // cells are waits, billed to the gater only: 0 is the floor, as it was for those counters.
      center = x.lateness ? Math.min(colEffect[0], colEffect[1]) : 0;
    } else if (centring) {
      center = trimmedCenterAndSpread(effects)[0];
    } else {
      // Waits without lateness: the lower quartile of the cells, the floor of those counters.
      Weighted cells = new Weighted();
      for (int i = 0; i < k; i++) {
        for (double v : x.mean.listed[i]) cells.add(v, 1);
        cells.add(x.mean.other[i], x.otherCount[i]);
      }
      center = cells.size() == 0 ? 0 : cells.lowerQuartile();
    }
    if (centring) {
      spread = trimmedCenterAndSpread(colEffect.clone())[1];
    } else if (k == 2 && x.lateness) {
      spread = baseline.asymmetryReady(t.baselineWindows()) ? baseline.asymmetrySpread() : 0;
    } else {
      spread = 0;
    }
    colSe = new double[k];
    se2 = x.se.map((i, v) -> v * v);
    if (k == 2) {
      double s = Math.sqrt(x.at(se2, 0, 1) + x.at(se2, 1, 0));
      colSe[0] = colSe[1] = s;
    } else if (k >= 3) {
      double[] sums = x.columnSums(se2, all(k));
      double[] counts = x.columnCounts(all(k));
      for (int j = 0; j < k; j++) colSe[j] = counts[j] > 0 ? Math.sqrt(sums[j] / counts[j]) : 0;
    }
    // The residual of a single cell: how far cells stray from their row and column effects.
    if (centring) {
      Weighted residuals = new Weighted();
      for (int i = 0; i < k; i++) {
        for (int c = 0; c < x.listed[i].length; c++) {
          residuals.add(Math.abs(centred.listed[i][c] - colEffect[x.listed[i][c]]), 1);
        }
        residuals.add(Math.abs(centred.other[i] - center), x.otherCount[i]);
      }
      cellSpread = MAD_TO_SD * residuals.median();
    } else {
      cellSpread = spread;
    }
    floor = Math.max(x.lateness ? t.absFloorUs() : t.minExcessUs(), t.relExcess() * x.cost);
    z = x.lateness ? t.z(k) : 0;
    zLink = x.lateness ? t.z((long) k * Math.max(1, k - 1)) : 0;
    // A column effect is the median of its cells: besides the spread between columns and its
    // cells' own errors, it carries their residuals' error, π/2 × σ² / rows for a median. With
    // few peers the spread (a median of a handful of effects) can come out near 0 by chance;
    // this term cannot.
    colNoise = new double[k];
    colBar = new double[k];
    double[] rowsOf = x.columnCounts(all(k));
    for (int j = 0; j < k; j++) {
      double cellTerm =
          k >= 3 && rowsOf[j] > 0 ? Math.PI / 2 * cellSpread * cellSpread / rowsOf[j] : 0;
      colNoise[j] = Math.sqrt(spread * spread + colSe[j] * colSe[j] + cellTerm);
      colBar[j] = Math.max(floor, z * colNoise[j]);
    }
    excess = centred.map((i, v) -> v - center);
    Cells cellSe = x.se;
    // Each cell against its own bar: the same spread, the cell's own standard error.
    high = excess.map((i, v) -> 0.0);
    for (int i = 0; i < k; i++) {
      for (int c = 0; c < x.listed[i].length; c++) {
        double b = bar(z, spread, cellSe.listed[i][c]);
        high.listed[i][c] = excess.listed[i][c] >= b ? 1 : 0;
      }
      high.other[i] = excess.other[i] >= bar(z, spread, cellSe.other[i]) ? 1 : 0;
    }
  }

  /** Every row (or column) of k. */
  static boolean[] all(int k) {
    boolean[] a = new boolean[k];
    Arrays.fill(a, true);
    return a;
  }

  /** The bar an effect of this noise must clear: floors, or z × sqrt(spread² + se²). */
  double bar(double zValue, double spreadUs, double seUs) {
    return Math.max(floor, zValue * Math.sqrt(spreadUs * spreadUs + seUs * seUs));
  }

  /** The median column bar: the window's threshold_us. */
  double typicalBar() {
    return k == 0 ? 0 : median(colBar.clone(), k);
  }

  /** The median noise a column effect was weighed against: the window's noise_us. */
  double typicalNoise() {
    if (k == 0) return 0;
    return median(colNoise.clone(), k);
  }

  /** The largest column effect over the centre, in bars (0 when none is above it). */
  double largestRatio() {
    double max = 0;
    for (int j = 0; j < k; j++) {
      if (colBar[j] > 0) max = Math.max(max, (colEffect[j] - center) / colBar[j]);
    }
    return max;
  }

  /** Two ranks with lateness: rank 1's lateness less rank 0's, as their cells show; else NaN. */
  double asymmetry() {
    return k == 2 && x.lateness ? colEffect[1] - colEffect[0] : Double.NaN;
  }

  /** Grows with how far the effect clears its bar and the share that sees it. */
  double confidence(double share, double effect, double bar) {
    return clamp(share * (1 - Math.exp(-effect / Math.max(bar, 1e-9)))) * x.callsFactor(t);
  }
}
