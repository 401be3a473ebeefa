package io.collscope.flink.attribution;

import java.io.Serializable;

/**
 * Knobs of the attribution rule ({@link Attributor}). A peer's effect on the delay matrix must
 * clear a bar, the largest of:
 *
 * <ul>
 *   <li>{@code absFloorUs} — an absolute floor: a perfectly quiet GPU window does not flag
 *       nanoseconds;
 *   <li>{@code relExcess} × the collective's own cost — a 4 KB GPU collective that doubles from 10
 *       to 20 µs is flagged, a 10 ms one is not flagged for 20 µs;
 *   <li>z × the effect's noise — the between-peer spread of the window's column effects and the
 *       standard error of the effect's own mean, added in quadrature; z is the normal quantile that
 *       keeps the chance of any false finding in a window of k peers at {@code falseFindingRate}
 *       (Bonferroni: 1 − rate / k). The noise shrinks as a window holds more collectives, so a
 *       steady shift smaller than a host's jitter is found once the evidence piles up;
 *   <li>{@code minExcessUs} — only for counters without per-peer lateness (older emitters), where
 *       no standard error exists: the fixed floor of earlier versions.
 * </ul>
 *
 * @param minExcessUs floor for counters without per-peer lateness (mean microseconds per
 *     collective)
 * @param columnFraction share of a column's cells that must clear their own bar to call its rank
 *     slow (or, for a rank missing from the window, silent)
 * @param rowRatio a slow rank's own excess wait must stay below this share of what its peers wait
 *     on it ("arrives last and waits least"); a rank that itself waits as much as it is waited on
 *     is a victim, not a culprit
 * @param causeShare a phase of the blamed rank must explain at least this share of the excess to be
 *     named the cause; otherwise the rank arrived late
 * @param abortShare in a window where a silent rank made its peers time out, a finding against a
 *     present rank must have at least this share of the silent rank's excess wait: the aborts throw
 *     the present ranks out of step, and the waits that leaves are a small share of the timeouts
 * @param absFloorUs absolute floor when per-peer lateness is present
 * @param relExcess share of the collective's own cost an effect must reach
 * @param falseFindingRate the chance, per window, that noise alone clears the statistical bar of
 *     some peer (family-wise over the window's peers; links over its cells)
 * @param uniformRel the collective's own cost must exceed its baseline by this share (and by four
 *     of the baseline's window-to-window deviations) to be a UNIFORM_SLOWDOWN; 5 %, the regression
 *     alerts' minimum effect
 * @param baselineWindows clean windows needed before the baseline judges a uniform slowdown (and,
 *     with two ranks, before their learned asymmetry spread is used)
 * @param minCalls ranks that measured fewer collectives in the window (their sample, {@code
 *     SampledCalls}) lower the confidence proportionally
 * @param minGatedShare a rank named from its tail alone (late in a few collectives) must have been
 *     the last arrival in at least this share of its peers' collectives: a rank slow now and then
 *     gates the ones it is slow in, while a rank that is merely last to launch in a shared device's
 *     queue has a tail without gating anything
 * @param minTailShare a rank named from its tail must be late beyond the window's tail edge in at
 *     least this share of the collectives more than a typical peer: 5 %, since on a busy 2-core
 *     host any rank thread is descheduled for milliseconds in 2-4 % of its collectives now and then
 */
public record Thresholds(
    double minExcessUs,
    double columnFraction,
    double rowRatio,
    double causeShare,
    double abortShare,
    double absFloorUs,
    double relExcess,
    double falseFindingRate,
    double uniformRel,
    int baselineWindows,
    long minCalls,
    double minGatedShare,
    double minTailShare)
    implements Serializable {

  public static final Thresholds DEFAULT =
      new Thresholds(20.0, 0.5, 0.5, 0.3, 0.1, 5.0, 0.25, 1e-6, 0.05, 5, 20, 0.01, 0.05);

  public Thresholds withMinExcessUs(double us) {
    return new Thresholds(
        us,
        columnFraction,
        rowRatio,
        causeShare,
        abortShare,
        absFloorUs,
        relExcess,
        falseFindingRate,
        uniformRel,
        baselineWindows,
        minCalls,
        minGatedShare,
        minTailShare);
  }

  public Thresholds withAbsFloorUs(double us) {
    return new Thresholds(
        minExcessUs,
        columnFraction,
        rowRatio,
        causeShare,
        abortShare,
        us,
        relExcess,
        falseFindingRate,
        uniformRel,
        baselineWindows,
        minCalls,
        minGatedShare,
        minTailShare);
  }

  /**
   * The standard normal quantile that one of {@code tests} independent tests clears by chance with
   * probability {@link #falseFindingRate} at most: Φ⁻¹(1 − rate / tests), one-sided.
   */
  public double z(long tests) {
    return Normal.quantile(1 - falseFindingRate / Math.max(1, tests));
  }
}
