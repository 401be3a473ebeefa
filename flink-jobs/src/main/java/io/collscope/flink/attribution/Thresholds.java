package io.collscope.flink.attribution;

import java.io.Serializable;

/**
 * Knobs of the attribution rule.
 *
 * @param minExcessUs a delay-matrix cell must exceed the noise floor by at least this much (mean
 *     microseconds per collective) to count
 * @param cellFactor ... and be at least this many times the noise floor
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
 */
public record Thresholds(
    double minExcessUs,
    double cellFactor,
    double columnFraction,
    double rowRatio,
    double causeShare,
    double abortShare)
    implements Serializable {

  public static final Thresholds DEFAULT = new Thresholds(20.0, 3.0, 0.5, 0.5, 0.3, 0.1);

  public Thresholds withMinExcessUs(double us) {
    return new Thresholds(us, cellFactor, columnFraction, rowRatio, causeShare, abortShare);
  }
}
