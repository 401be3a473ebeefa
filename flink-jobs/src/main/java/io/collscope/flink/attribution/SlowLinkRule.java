package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.RobustStatistics.median;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Slow links: one cell (r, p) that stands out of its column — r sees p late, the ranks not named
 * otherwise do not — by the bar of one cell of k(k−1) (z over the cells, the cell's own error and
 * residual and those of its column's median). Why a cell: a slow path between two ranks delays only
 * what one of them sees; its receiver then arrives late at the next collective, so its column rises
 * too, which {@link SlowRankRule}'s row test keeps from being named. With two ranks of waits only
 * (no lateness) the one high cell is the only link there is: named at half confidence, its
 * direction cannot be told.
 */
final class SlowLinkRule {

  private SlowLinkRule() {}

  /** Single cells that stand out of their column: the slow links. */
  static List<Finding> find(WindowEffects effects, boolean[] slow) {
    LatenessMatrix x = effects.x;
    int k = effects.k;
    List<Finding> links = new ArrayList<>();
    ColumnMedians medians = null;
    for (int j = 0; j < k; j++) {
      if (slow[j]) continue;
      ColumnMedians.ColumnMedian column = null;
      for (int i = 0; i < k; i++) {
        if (i == j || slow[i]) continue;
        double e = x.at(effects.excess, i, j);
        double se = x.at(x.se, i, j);
        // The cell against the median of its column's other cells: the cell's own error and
        // residual, and the median's (π/2 × the residual² over the other rows, and their errors).
        double others2 = Math.PI / 2 * effects.cellSpread * effects.cellSpread / Math.max(1, k - 2);
        double b =
            Math.max(
                effects.floor,
                effects.zLink
                    * Math.sqrt(
                        effects.cellSpread * effects.cellSpread
                            + se * se
                            + others2
                            + effects.colSe[j] * effects.colSe[j]));
        if (e < b) continue;
        // The other ranks' view of j, from ranks that are not late themselves: a late rank sees
        // everyone early. With no such rank left there is nothing to compare the cell with.
        if (column == null) {
          if (medians == null) medians = new ColumnMedians(x, effects.excess, slow);
          column = medians.of(j);
        }
        int others = column.size() - (column.holds(i) ? 1 : 0);
        if (others == 0) continue;
        double med = column.medianWithout(i);
        if (e - med < b) continue;
        int receiver = x.present.get(i);
        int sender = x.present.get(j);
        double share = x.at(x.tail, i, j);
        double othersShare = median(columnValues(x, x.tail, j, i, slow));
        links.add(
            new Finding(
                FindingKind.SLOW_LINK,
                receiver,
                sender,
                Cause.LINK,
                effects.confidence(1.0, e - med, b),
                e - med,
                String.format(
                    Locale.ROOT,
                    "rank %d saw rank %d %.1fus/call later than the other ranks saw it (bar"
                        + " %.1fus); beyond the %.0fus tail edge in %.0f%% of the collectives"
                        + " against %.0f%% for the others",
                    receiver,
                    sender,
                    e - med,
                    b,
                    x.rows[i].getLateTailEdgeUs(),
                    100 * share,
                    100 * othersShare),
                "",
                io.collscope.avro.HardwareCause.NONE,
                ""));
      }
    }
    return links;
  }

  /**
   * Two ranks with waits only (counters without lateness): a high cell that no rank explains is the
   * only link there is, reported once, the larger cell's direction, at half confidence.
   */
  static Finding twoRankLink(WindowEffects effects) {
    LatenessMatrix x = effects.x;
    int j = effects.colEffect[1] >= effects.colEffect[0] ? 1 : 0;
    int i = 1 - j;
    double e = effects.colEffect[j] - effects.center;
    if (x.at(effects.high, i, j) == 0 || e < effects.colBar[j]) return null;
    int receiver = x.present.get(i);
    int sender = x.present.get(j);
    return new Finding(
        FindingKind.SLOW_LINK,
        receiver,
        sender,
        Cause.LINK,
        effects.confidence(1.0, e, effects.colBar[j]) * 0.5,
        e,
        String.format(
            Locale.ROOT,
            "rank %d waited %.1fus/call on rank %d (bar %.1fus); with 2 ranks the link's"
                + " direction cannot be told from waits alone",
            receiver,
            e,
            sender,
            effects.colBar[j]),
        "",
        io.collscope.avro.HardwareCause.NONE,
        "");
  }

  /** Column j's values of q over the rows neither excluded nor {@code except} nor j. */
  private static List<Double> columnValues(
      LatenessMatrix x, Cells q, int j, int except, boolean[] excluded) {
    List<Double> v = new ArrayList<>();
    for (int i = 0; i < x.k; i++) {
      if (i == j || i == except || excluded[i]) continue;
      v.add(x.at(q, i, j));
    }
    return v;
  }
}
