package io.collscope.flink.attribution;

import java.io.Serializable;

/**
 * Knobs of the attribution rule. A delay-matrix cell counts as high when its excess over the noise
 * floor reaches the window's threshold, the largest of:
 *
 * <ul>
 *   <li>{@code absFloorUs} — an absolute floor, for windows whose counters carry per-peer tails
 *       (snapshot version 4); the noise term below does the work, this only stops a perfectly quiet
 *       GPU window from flagging nanoseconds;
 *   <li>{@code relExcess} × the collective's own cost — a 4 KB GPU collective that doubles from 10
 *       to 20 µs is flagged, a 10 ms one is not flagged for 20 µs;
 *   <li>{@code noiseFactor} × the measured noise — how far a typical peer's p99 lateness lies above
 *       its mean in this very window, so a loaded CPU host needs more than an idle GPU;
 *   <li>{@code minExcessUs} — only for counters without per-peer tails (older emitters), where no
 *       noise can be measured: the fixed floor of earlier versions.
 * </ul>
 *
 * @param minExcessUs floor for counters without per-peer tails (mean microseconds per collective)
 * @param cellFactor a high cell must also be at least this many times the noise floor
 * @param columnFraction share of a column's cells that must be high to call its rank slow (or, for
 *     a rank missing from the window, silent)
 * @param rowRatio a slow rank's own excess wait must stay below this share of what its peers wait
 *     on it ("arrives last and waits least"); a rank that itself waits as much as it is waited on
 *     is a victim, not a culprit
 * @param causeShare a phase of the blamed rank must explain at least this share of the excess to be
 *     named the cause; otherwise the rank arrived late
 * @param abortShare in a window where a silent rank made its peers time out, a finding against a
 *     present rank must have at least this share of the silent rank's excess wait: the aborts throw
 *     the present ranks out of step, and the waits that leaves are a small share of the timeouts
 * @param absFloorUs absolute floor when per-peer tails are present
 * @param relExcess share of the collective's own cost a cell's excess must reach
 * @param noiseFactor multiple of the measured noise a cell's excess must reach
 * @param uniformRel the collective's own cost must exceed its baseline by this share (and by four
 *     of the baseline's window-to-window deviations) to be a UNIFORM_SLOWDOWN; 5 %, the regression
 *     alerts' minimum effect
 * @param baselineWindows clean windows needed before the baseline judges a uniform slowdown
 * @param minCalls ranks that measured fewer collectives in the window (their sample, {@code
 *     SampledCalls}) lower the confidence proportionally
 * @param minGatedShare a rank named from its tails alone (late in a few collectives) must have been
 *     the last arrival in at least this share of its peers' collectives: a rank slow now and then
 *     gates the ones it is slow in, while a rank that is merely last to launch in a shared device's
 *     queue has a tail without gating anything
 */
public record Thresholds(
    double minExcessUs,
    double cellFactor,
    double columnFraction,
    double rowRatio,
    double causeShare,
    double abortShare,
    double absFloorUs,
    double relExcess,
    double noiseFactor,
    double uniformRel,
    int baselineWindows,
    long minCalls,
    double minGatedShare)
    implements Serializable {

  public static final Thresholds DEFAULT =
      new Thresholds(20.0, 3.0, 0.5, 0.5, 0.3, 0.1, 5.0, 0.25, 1.0, 0.05, 5, 20, 0.01);

  public Thresholds withMinExcessUs(double us) {
    return new Thresholds(
        us,
        cellFactor,
        columnFraction,
        rowRatio,
        causeShare,
        abortShare,
        absFloorUs,
        relExcess,
        noiseFactor,
        uniformRel,
        baselineWindows,
        minCalls,
        minGatedShare);
  }

  public Thresholds withAbsFloorUs(double us) {
    return new Thresholds(
        minExcessUs,
        cellFactor,
        columnFraction,
        rowRatio,
        causeShare,
        abortShare,
        us,
        relExcess,
        noiseFactor,
        uniformRel,
        baselineWindows,
        minCalls,
        minGatedShare);
  }
}
