package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.LatenessMatrix.meanUs;
import static io.collscope.flink.attribution.RobustStatistics.clamp;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.Phase;
import java.util.Locale;

/**
 * Uniform slowdown: the collective's own cost over its baseline, when no other finding explains the
 * window, by {@link Thresholds#uniformRel()} of the baseline, {@link Attributor#UNIFORM_SPREADS} of
 * its upper spread and z(1) standard errors of the cost, in {@link Attributor#UNIFORM_WINDOWS}
 * windows in a row. Why against the baseline and not the matrix: when every path is slower no rank
 * is later than another and the matrix is quiet. Its cause is that of the phase that grew most
 * (LINK when it is the wait).
 */
final class UniformSlowdownRule {

  private UniformSlowdownRule() {}

  /**
   * Whether the cost cleared the band in this window (the baseline counts the windows in a row,
   * named or not) and the finding, null until it has done so in enough of them.
   */
  record Result(boolean slowerThanBaseline, Finding finding) {}

  /** The collective got slower than its baseline with no culprit that explains it. */
  static Result judge(WindowEffects effects, WindowBaseline baseline, double baselineUs) {
    LatenessMatrix x = effects.x;
    // Judged against the baseline's own spread, not the window's matrix: a slowdown that reaches
    // every rank makes every cell wider too, which says nothing about the cost. Smaller
    // regressions are the alerts' to find, over several windows.
    double excess = x.cost - baselineUs;
    double needed =
        Math.max(
            Math.max(
                effects.t.uniformRel() * baselineUs,
                Attributor.UNIFORM_SPREADS * baseline.upperSpread()),
            effects.t.z(1) * costSe(effects));
    boolean slowerThanBaseline = excess >= needed;
    if (!slowerThanBaseline || baseline.slowerInARow + 1 < Attributor.UNIFORM_WINDOWS) {
      return new Result(slowerThanBaseline, null);
    }
    Phase grew = null;
    double growth = 0;
    StringBuilder phases = new StringBuilder();
    for (Phase p : Phase.values()) {
      double now = x.median(w -> meanUs(w, p), -1);
      double was = baseline.phase(p);
      phases.append(String.format(Locale.ROOT, " %s %.1f/%.1f", p.fieldName(), now, was));
      if (grew == null || now - was > growth) {
        grew = p;
        growth = now - was;
      }
    }
    Cause cause = grew.blame() != null ? grew.blame() : Cause.LINK;
    return new Result(
        true,
        new Finding(
            FindingKind.UNIFORM_SLOWDOWN,
            -1,
            -1,
            cause,
            clamp(1 - Math.exp(-excess / needed)) * x.callsFactor(effects.t),
            excess,
            String.format(
                Locale.ROOT,
                "the collective costs %.1fus/call, %.0f%% over its baseline of %.1fus, with no rank"
                    + " or link later than the others; median phases now/baseline (us/call):%s",
                x.cost,
                100 * excess / baselineUs,
                baselineUs,
                phases),
            "",
            io.collscope.avro.HardwareCause.NONE,
            ""));
  }

  /**
   * The standard error of the cost, as its rank's lateness errors show it: its wait is the last of
   * its peers' arrivals, as uncertain as a typical one. A host that stalls the ranks widens every
   * collective's spread, and this with it; a slowdown of every path moves the mean alone.
   */
  static double costSe(WindowEffects effects) {
    LatenessMatrix x = effects.x;
    if (x.costRow < 0 || !x.lateness) return 0;
    return Math.sqrt(x.row(effects.se2, x.costRow).median());
  }
}
