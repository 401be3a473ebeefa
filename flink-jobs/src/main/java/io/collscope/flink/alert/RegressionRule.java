package io.collscope.flink.alert;

import io.collscope.avro.Classification;
import io.collscope.flink.baseline.WindowBaseline;
import java.io.Serializable;

/**
 * Classifies one window's latency against a {@link WindowBaseline}, after the benchmark rule of the
 * fused-kernel review (io.collscope.bench.Classification): a difference counts only beyond the
 * measured noise and a stated minimum effect, and a measurement that cannot tell says so.
 *
 * <ol>
 *   <li>fewer than {@code minWindows} baseline windows, or fewer than {@code minCalls} measured
 *       collectives on some rank in the window: INCONCLUSIVE (too little to compare);
 *   <li>a baseline whose spread exceeds {@code maxNoise} of its median: INCONCLUSIVE (too noisy to
 *       tell anything that small from chance);
 *   <li>{@code d = current - median}; {@code band = max(noiseFactor × spread, minEffect × median)}:
 *       |d| within the band is PARITY, beyond it SLOWER or FASTER by its sign.
 * </ol>
 *
 * A single window beyond the band is not yet an alert: {@link AlertFunction} fires after several in
 * a row, which is what rounds are to the benchmark rule. INCONCLUSIVE is never PARITY.
 *
 * @param minWindows clean baseline windows needed
 * @param minCalls collectives every rank must have measured in the window (its sample, {@code
 *     SampledCalls}: the calls where the emitter accounts every one)
 * @param minEffect smallest relative regression that matters (0.05: 5 %)
 * @param noiseFactor standard deviations of the baseline's spread the difference must exceed
 * @param maxNoise a baseline spread above this share of its median is too noisy
 */
public record RegressionRule(
    int minWindows, long minCalls, double minEffect, double noiseFactor, double maxNoise)
    implements Serializable {

  /**
   * 3 % and 3 standard deviations: on two H200s a 4 % regression of a 4 KB all-reduce alerts and an
   * hour of clean simulated windows and every recorded clean GPU and CPU window raise none
   * (docs/ALERTING.md, "Choosing the band"); 5 % and 4 missed everything under 9 %.
   */
  public static final RegressionRule DEFAULT = new RegressionRule(10, 20, 0.03, 3.0, 0.5);

  public Classification classify(double currentUs, long calls, WindowBaseline b) {
    if (!b.ready(minWindows) || calls < minCalls) return Classification.INCONCLUSIVE;
    double median = b.median();
    if (median <= 0 || b.spread() > maxNoise * median) return Classification.INCONCLUSIVE;
    double d = currentUs - median;
    if (Math.abs(d) <= band(b)) return Classification.PARITY;
    return d > 0 ? Classification.SLOWER : Classification.FASTER;
  }

  /** Half-width of the PARITY band around the baseline's median, µs. */
  public double band(WindowBaseline b) {
    return Math.max(noiseFactor * b.spread(), minEffect * b.median());
  }

  /**
   * Message size bucket by powers of two: 4KiB, 64KiB, 1MiB, ... (the alerts' size_bucket label).
   * Here, not in AlertFunction, so that readers of the history use it without Flink.
   */
  public static String sizeBucket(long bytes) {
    if (bytes <= 0) return "unknown";
    int log = 63 - Long.numberOfLeadingZeros(bytes);
    long b = 1L << log;
    if (b >= 1L << 30) return (b >> 30) + "GiB";
    if (b >= 1L << 20) return (b >> 20) + "MiB";
    if (b >= 1L << 10) return (b >> 10) + "KiB";
    return b + "B";
  }
}
