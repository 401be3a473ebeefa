package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.RobustStatistics.median;
import static io.collscope.flink.attribution.RobustStatistics.trimmedCenterAndSpread;

import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.model.SampledCalls;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Intermittently slow ranks: the tail test (three ranks or more). A rank late in only a few
 * collectives barely moves its mean lateness, but it shows in its peers' tails: the share of their
 * collectives in which it was beyond their tail edge, less each row's typical share. Its median
 * over the rows must clear {@link Thresholds#minTailShare()} and z × the shares' spread and
 * binomial error, most rows must see it, it must not see its peers in its own tail as much, it must
 * have gated some but not nearly all of their collectives ({@link Thresholds#minGatedShare()},
 * {@link Attributor#INTERMITTENT_MAX_GATED}: a rank last by a hair every time is placement, not a
 * fault), and it must be late by {@link Attributor#TAIL_MARGIN} floors in the collectives it was
 * late in. The same tail effects give a steadily slow rank's evidence its note ({@link #tailNote}).
 */
final class IntermittentRule {
  private final WindowEffects effects;

  IntermittentRule(WindowEffects effects) {
    this.effects = effects;
  }

  /**
   * The tail test for column j: its share of collectives beyond each row's tail edge over the row's
   * typical share, against the shares' between-peer spread and binomial error; named once {@code
   * confirmation} confirms it.
   */
  Finding find(int j, Confirmation confirmation) {
    LatenessMatrix x = effects.x;
    int k = effects.k;
    if (tailRowsBut(j) < 2) return null;
    boolean[] tailRows = x.hasTail;
    TailEffects te = tails();
    double tau = te.effect[j] - te.center;
    if (tau < te.bar) return null;
    // Most rows must see it.
    int seen = 0;
    int rowsOf = 0;
    for (int i = 0; i < k; i++) {
      if (!tailRows[i] || i == j) continue;
      rowsOf++;
      if (x.at(te.shifted, i, j) - te.center >= te.bar) seen++;
    }
    if ((double) seen / rowsOf < effects.t.columnFraction()) return null;
    // It waits little itself: no peer is in its own tail as much as it is in theirs.
    if (tailRows[j]) {
      double own = 0;
      for (double v : te.shifted.listed[j]) own = Math.max(own, v - te.center);
      if (x.otherCount[j] > 0) own = Math.max(own, te.shifted.other[j] - te.center);
      if (own > effects.t.rowRatio() * tau) return null;
    }
    double lastShare = x.columnSums(x.lastShare, tailRows)[j] / x.columnCounts(tailRows)[j];
    if (lastShare < effects.t.minGatedShare() || lastShare > Attributor.INTERMITTENT_MAX_GATED)
      return null;
    int rank = x.present.get(j);
    double meanExcess = Math.max(0, effects.colEffect[j] - effects.center);
    // Its excess is the lateness in the collectives it was late in: the mean spread over them.
    List<Double> edges = new ArrayList<>();
    for (int i = 0; i < k; i++) if (tailRows[i]) edges.add(x.rows[i].getLateTailEdgeUs());
    // ... and at least the tail edge it was beyond there.
    double whenLate = Math.max(meanExcess / Math.max(tau, effects.t.minTailShare()), median(edges));
    // Late in those by less than the floor is the placement's own skew (the last of several
    // ranks one dispatcher launches on a shared GPU), not a culprit.
    if (whenLate < Attributor.TAIL_MARGIN * effects.floor) return null;
    if (!confirmation.confirmed(rank, tau / te.bar)) return null;
    return new Finding(
        FindingKind.SLOW_RANK,
        rank,
        -1,
        SlowRankRule.cause(effects, x.byRank.get(rank), meanExcess),
        effects.confidence((double) seen / rowsOf, tau, te.bar),
        whenLate,
        String.format(
            Locale.ROOT,
            "%d of %d peers saw rank %d late in a few collectives: beyond the %.0fus tail edge in"
                + " %.1f%% more of them than a typical peer (bar %.1f%%), about %.0fus late in"
                + " those (%.1fus/call over a typical peer on the mean); it gated %.0f%% of"
                + " their collectives",
            seen,
            rowsOf,
            rank,
            median(edges),
            100 * tau,
            100 * te.bar,
            whenLate,
            meanExcess,
            100 * lastShare),
        "",
        io.collscope.avro.HardwareCause.NONE,
        "");
  }

  /**
   * For a slow rank late in only some collectives (its tail share clears the tail test's bar, in
   * under half of them): how its lateness is spread, so the evidence says both.
   */
  String tailNote(int j) {
    if (effects.k < 3 || tailRowsBut(j) < 2) return "";
    TailEffects te = tails();
    double tau = te.effect[j] - te.center;
    if (tau < te.bar || tau >= 0.5) return "";
    return String.format(
        Locale.ROOT,
        "; late in a few collectives: beyond the tail edge in %.1f%% more of them than a typical"
            + " peer (bar %.1f%%)",
        100 * tau,
        100 * te.bar);
  }

  /** The tail shares' effects: rows centred on their median share, columns by median. */
  private final class TailEffects {
    final Cells shifted;
    final double[] effect;
    final double center;
    final double bar;

    TailEffects() {
      LatenessMatrix x = effects.x;
      int k = effects.k;
      boolean[] tailRows = x.hasTail;
      double[] typical = new double[k];
      List<Double> typicals = new ArrayList<>();
      long minSampled = Long.MAX_VALUE;
      for (int i = 0; i < k; i++) {
        if (!tailRows[i]) continue;
        typical[i] = x.row(x.tail, i).median();
        typicals.add(typical[i]);
        minSampled = Math.min(minSampled, SampledCalls.of(x.rows[i]));
      }
      shifted = x.tail.map((i, v) -> v - typical[i]);
      boolean[] excluded = new boolean[k];
      for (int i = 0; i < k; i++) excluded[i] = !tailRows[i];
      ColumnMedians medians = new ColumnMedians(x, shifted, excluded);
      effect = new double[k];
      for (int j = 0; j < k; j++) effect[j] = medians.of(j).medianWithout(-1);
      double[] stats = trimmedCenterAndSpread(effect.clone());
      center = stats[0];
      double spreadShare = stats[1];
      double p0 = Math.max(median(typicals), 1.0 / Math.max(1, minSampled));
      double binomial = Math.sqrt(p0 * (1 - p0) / Math.max(1, minSampled));
      bar =
          Math.max(
              effects.t.minTailShare(),
              effects.t.z(k) * Math.sqrt(spreadShare * spreadShare + binomial * binomial));
    }
  }

  /** The tail effects over the rows that have tails, computed once a window when first asked. */
  private TailEffects tails() {
    if (tails == null) tails = new TailEffects();
    return tails;
  }

  private TailEffects tails;

  /** The rows with tails other than row j. */
  private int tailRowsBut(int j) {
    LatenessMatrix x = effects.x;
    int k = effects.k;
    int n = 0;
    for (int i = 0; i < k; i++) if (x.hasTail[i] && i != j) n++;
    return n;
  }
}
