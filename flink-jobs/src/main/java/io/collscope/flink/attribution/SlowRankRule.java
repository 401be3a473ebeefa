package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.LatenessMatrix.meanUs;
import static io.collscope.flink.attribution.RobustStatistics.median;
import static io.collscope.flink.attribution.RobustStatistics.trimmedCenterAndSpread;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.model.Phase;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Slow ranks: the column test. A column whose effect clears its bar and most of whose cells clear
 * theirs, while its own rank waits little (its row's high cells stay under {@link
 * Thresholds#rowRatio()} of its column's excess), is a slow rank: everyone waits on it and it waits
 * on nobody. Why the row test: the receiver of a slow link arrives late at the next collective and
 * raises its column too, but it waits as much as it is waited on — a victim, not a culprit. When no
 * column passes and a minority of rows waits on everyone, the other ranks are late: each is judged
 * against those early rows alone ({@link #mostRanksLate}). Every slow-rank finding says why the
 * rank was slow with {@link #cause}: the phases that exceed its peers' most.
 */
final class SlowRankRule {
  private final WindowEffects effects;
  private final LatenessMatrix x;
  private final int k;
  private final Confirmation confirmation;
  private final IntermittentRule intermittent;
  final boolean[] passes; // by column: it passed the column test
  private final int[] passing; // the columns that pass, ascending
  private final double[] highCount; // by column: its cells that clear their bar
  private final double[] count; // by column: its cells

  /**
   * The column test over every column: a column passes when its effect clears its bar and most of
   * its cells clear theirs. Every column's effect over its bar is also how far its rank leaned
   * towards a finding in this window.
   */
  SlowRankRule(WindowEffects effects, Confirmation confirmation, IntermittentRule intermittent) {
    this.effects = effects;
    this.x = effects.x;
    this.k = effects.k;
    this.confirmation = confirmation;
    this.intermittent = intermittent;
    highCount = x.columnSums(effects.high, WindowEffects.all(k));
    count = x.columnCounts(WindowEffects.all(k));
    passes = new boolean[k];
    List<Integer> pass = new ArrayList<>();
    for (int j = 0; j < k; j++) {
      passes[j] =
          count[j] > 0
              && Math.round(highCount[j]) / count[j] >= effects.t.columnFraction()
              && effects.colEffect[j] - effects.center >= effects.colBar[j];
      if (passes[j]) pass.add(j);
    }
    passing = pass.stream().mapToInt(Integer::intValue).toArray();
    for (int j = 0; j < k; j++) {
      if (effects.colBar[j] > 0) {
        confirmation.lean(
            x.present.get(j), (effects.colEffect[j] - effects.center) / effects.colBar[j]);
      }
    }
  }

  /** The column test's finding for passing column j, or null when j fails the row test. */
  Finding find(int j) {
    long highCount = Math.round(this.highCount[j]);
    double count = this.count[j];
    double colExcess = effects.colEffect[j] - effects.center;
    // Only its high cells count: summed noise over many small cells is not waiting.
    // ... unless q waits on j as well: then neither is simply later than the other.
    double rowExcess = 0;
    int[] cols = x.listed[j];
    for (int c = 0; c < cols.length; c++) {
      int q = cols[c];
      if (effects.high.listed[j][c] > 0 && (!passes[q] || x.at(effects.high, q, j) > 0)) {
        rowExcess += effects.excess.listed[j][c];
      }
    }
    if (x.otherCount[j] > 0 && effects.high.other[j] > 0) {
      int excluded = 0;
      for (int q : passing) {
        if (q != j && x.cellOf(j, q) < 0 && x.at(effects.high, q, j) == 0) excluded++;
      }
      rowExcess += effects.excess.other[j] * (x.otherCount[j] - excluded);
    }
    if (rowExcess > effects.t.rowRatio() * colExcess) return null;
    int rank = x.present.get(j);
    if (!confirmation.confirmed(rank, colExcess / effects.colBar[j])) return null;
    RankWindow w = x.byRank.get(rank);
    double lastShare = x.columnSums(x.lastShare, WindowEffects.all(k))[j] / count;
    double highFrac = highCount / count;
    double seen = highRowsMedian(j);
    return new Finding(
        FindingKind.SLOW_RANK,
        rank,
        -1,
        cause(effects, w, colExcess),
        effects.confidence(highFrac, colExcess, effects.colBar[j])
            * (rowExcess > 0 ? Math.max(0, 1 - rowExcess / colExcess / 2) : 1),
        colExcess,
        String.format(
            Locale.ROOT,
            "%d of %d peers saw rank %d late by %.1fus/call (median of those; %.1fus over a"
                + " typical peer over all of them), bar %.1fus%s%s; it saw its peers %.1fus late"
                + " itself and gated %.0f%% of their collectives; %s",
            highCount,
            (long) count,
            rank,
            seen,
            colExcess,
            effects.colBar[j],
            barReason(effects.colBar[j], effects.colNoise[j]),
            intermittent.tailNote(j),
            rowExcess,
            100 * lastShare,
            causeEvidence(x, w)),
        "",
        io.collscope.avro.HardwareCause.NONE,
        "");
  }

  /** The median excess of column j over the rows whose cell clears its bar. */
  private double highRowsMedian(int j) {
    List<Double> v = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      if (i == j) continue;
      int c = x.cellOf(i, j);
      if (c >= 0) {
        if (effects.high.listed[i][c] > 0) v.add(effects.excess.listed[i][c]);
      } else if (effects.high.other[i] > 0) {
        v.add(effects.excess.other[i]);
      }
    }
    return median(v);
  }

  /** What set the bar: the floors, or the statistics. */
  private String barReason(double b, double noiseUs) {
    if (effects.z * noiseUs >= b) {
      return String.format(
          Locale.ROOT,
          " = z %.1f x noise %.1fus (spread %.1fus)",
          effects.z,
          noiseUs,
          effects.spread);
    }
    return String.format(
        Locale.ROOT,
        " = the floor (max of %.1fus and %.0f%% of the %.1fus collective)",
        x.lateness ? effects.t.absFloorUs() : effects.t.minExcessUs(),
        100 * effects.t.relExcess(),
        x.cost);
  }

  /**
   * Most ranks late: when no column passed and a minority of rows waits on everyone (their row
   * effects clear a bar like the columns'), every other rank is judged over those early rows alone,
   * against the late ranks' own lower quartile of lateness: each late rank must clear its cell's
   * bar in every early row and the column's bar in their median.
   */
  List<Finding> mostRanksLate(boolean[] slow) {
    List<Finding> found = new ArrayList<>();
    if (!x.lateness) return found;
    double[] rowStats = trimmedCenterAndSpread(effects.rowEffect.clone());
    double rowCenter = rowStats[0];
    double rowSpread = rowStats[1];
    boolean[] early = new boolean[k];
    int earlyCount = 0;
    for (int i = 0; i < k; i++) {
      double rowSe = Math.sqrt(x.row(effects.se2, i).median());
      early[i] = effects.rowEffect[i] - rowCenter >= effects.bar(effects.z, rowSpread, rowSe);
      if (early[i]) earlyCount++;
    }
    if (earlyCount == 0 || 2 * earlyCount >= k) return found;
    Weighted lateCells = new Weighted();
    for (int i = 0; i < k; i++) {
      if (early[i]) continue;
      for (double v : x.mean.listed[i]) lateCells.add(v, 1);
      lateCells.add(x.mean.other[i], x.otherCount[i]);
    }
    double base = lateCells.size() == 0 ? 0 : lateCells.lowerQuartile();
    for (int j = 0; j < k; j++) {
      if (early[j]) continue;
      List<Double> v = new ArrayList<>();
      double se2 = 0;
      boolean everyRow = true;
      for (int i = 0; i < k; i++) {
        if (!early[i]) continue;
        double e = x.at(x.mean, i, j) - base;
        double se = x.at(x.se, i, j);
        se2 += se * se;
        everyRow &= e >= effects.bar(effects.z, rowSpread, se);
        v.add(e);
      }
      double effect = median(v);
      double b = effects.bar(effects.z, rowSpread, Math.sqrt(se2 / earlyCount));
      if (!everyRow || effect < b) continue;
      int rank = x.present.get(j);
      if (!confirmation.confirmed(rank, effect / b)) continue;
      slow[j] = true;
      RankWindow w = x.byRank.get(rank);
      found.add(
          new Finding(
              FindingKind.SLOW_RANK,
              rank,
              -1,
              cause(effects, w, effect),
              effects.confidence(1.0, effect, b),
              effect,
              String.format(
                  Locale.ROOT,
                  "most ranks were late: the %d early rank(s) saw rank %d late by %.1fus/call"
                      + " over the late ranks' own %.1fus (bar %.1fus); %s",
                  earlyCount,
                  rank,
                  effect,
                  base,
                  b,
                  causeEvidence(x, w)),
              "",
              io.collscope.avro.HardwareCause.NONE,
              ""));
    }
    return found;
  }

  /**
   * Why a slow rank was slow: the cause whose phases exceed the peers' median the most, if they
   * explain enough of the excess; otherwise it arrived late (the time went before the collective,
   * in compute or launch).
   */
  static Cause cause(WindowEffects effects, RankWindow w, double excessUs) {
    LatenessMatrix x = effects.x;
    Cause best = null;
    double bestExcess = 0;
    for (Phase p : Phase.values()) {
      Cause c = p.blame();
      if (c == null || c == best) continue;
      double e = blamedUs(w, c) - x.median(o -> blamedUs(o, c), w.getRank());
      if (best == null || e > bestExcess) {
        best = c;
        bestExcess = e;
      }
    }
    if (best == null
        || bestExcess < effects.t.causeShare() * excessUs
        || bestExcess < effects.typicalBar() / 2) {
      return Cause.ARRIVED_LATE;
    }
    return best;
  }

  static String causeEvidence(LatenessMatrix x, RankWindow w) {
    StringBuilder sb = new StringBuilder("its phases vs its peers' median (us/call):");
    for (Phase p : Phase.values()) {
      if (p.blame() == null) continue;
      sb.append(
          String.format(
              Locale.ROOT,
              " %s %.1f/%.1f",
              p.fieldName(),
              meanUs(w, p),
              x.median(o -> meanUs(o, p), w.getRank())));
    }
    return sb.toString();
  }

  /** The time a rank spent in the phases a cause blames, per collective. */
  private static double blamedUs(RankWindow w, Cause c) {
    double us = 0;
    for (Phase p : Phase.values()) if (p.blame() == c) us += meanUs(w, p);
    return us;
  }
}
