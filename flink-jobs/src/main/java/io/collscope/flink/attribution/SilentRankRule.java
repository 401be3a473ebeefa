package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.LatenessMatrix.meanUs;
import static io.collscope.flink.attribution.RobustStatistics.median;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.model.Phase;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Silent ranks: a rank missing from the window that the present ranks still wait on. A missing rank
 * has no row and no column of its own, but each present rank's lateness of it is still in that
 * rank's row; its column (plus the share of each row's guard time its timeouts stand for: a
 * timed-out guard waited for an ack nobody billed to a peer) takes the slow-rank column test
 * without the row test. Why: a rank that died or hangs and one whose reporter alone is gone both
 * send no data, yet the ranks that wait on it show it; their timeouts tell the two apart (TIMED_OUT
 * or NOT_REPORTING). A missing rank whose column is noise is only listed as missing.
 */
final class SilentRankRule {

  private SilentRankRule() {}

  /**
   * The missing ranks that the present ranks wait on: the column test of the slow rank, without the
   * row test, over each present rank's lateness of the missing rank plus the share of its guard
   * time that its timeouts stand for.
   */
  static List<Finding> find(WindowEffects effects) {
    LatenessMatrix x = effects.x;
    int k = effects.k;
    List<Finding> found = new ArrayList<>();
    if (k == 0) return found;
    for (int s : x.missing) {
      int highCount = 0;
      int lateHighCount = 0;
      long timeouts = 0;
      long calls = 0;
      double[] v = new double[k];
      double se2 = 0;
      for (int i = 0; i < k; i++) {
        RankWindow w = x.rows[i];
        double cell = x.late(i, s);
        double se = x.lateSe(i, s);
        // A timed-out wait counts the peers it never saw late by the whole wait: timeouts on s
        // show in its lateness itself.
        if (cell - effects.rowEffect[i] - effects.center
            >= effects.bar(effects.z, effects.spread, se)) lateHighCount++;
        // A timed-out guard waited for an ack nobody billed to a peer: see this class comment.
        if (w.getTimeouts() > 0 && w.getCalls() > 0) {
          double timedOut = Math.min(1.0, (double) w.getTimeouts() / w.getCalls());
          cell += meanUs(w, Phase.GUARD) * timedOut / x.missing.size();
        }
        v[i] = cell - effects.rowEffect[i] - effects.center;
        se2 += se * se;
        if (v[i] >= effects.bar(effects.z, effects.spread, se)) {
          highCount++;
          timeouts += w.getTimeouts();
          calls += w.getCalls();
        }
      }
      double effect = median(v, k);
      double colBarS = effects.bar(effects.z, effects.spread, Math.sqrt(se2 / k));
      double highFrac = (double) highCount / k;
      if (highFrac < effects.t.columnFraction() || effect < colBarS) continue;
      // The timeouts were on s when its lateness alone is high in most rows (each timed-out wait
      // counts it late by the whole budget), or when they are a share of the collectives too
      // large for a few unrelated aborts (once nothing is acked, every collective times out in
      // guard, with no per-peer wait at all). A rank only late to report has neither.
      boolean timedOut =
          timeouts > 0
              && ((double) lateHighCount / k >= effects.t.columnFraction()
                  || timeouts >= Attributor.TIMED_OUT_SHARE * calls);
      // Alone, a rank has nobody to compare a missing peer with: only timeouts say it is silent.
      if (k < 2 && !timedOut) continue;
      found.add(
          new Finding(
              FindingKind.SILENT_RANK,
              s,
              -1,
              timedOut ? Cause.TIMED_OUT : Cause.NOT_REPORTING,
              effects.confidence(highFrac, effect, colBarS),
              effect,
              String.format(
                  Locale.ROOT,
                  "%d of %d present ranks waited on rank %d, which sent no data, %.1fus/call"
                      + " more than on a typical peer (bar %.1fus); %s",
                  highCount,
                  k,
                  s,
                  effect,
                  colBarS,
                  timedOut
                      ? String.format(
                          Locale.ROOT, "they timed out in %d of their %d calls", timeouts, calls)
                      : timeouts > 0
                          ? String.format(
                              Locale.ROOT,
                              "they timed out in only %d of their %d calls: it runs, but does"
                                  + " not report",
                              timeouts,
                              calls)
                          : "none of them timed out: it runs, but does not report"),
              "",
              io.collscope.avro.HardwareCause.NONE,
              ""));
    }
    return found;
  }
}
