package io.collscope.bench;

import java.util.Arrays;

/**
 * Classifies a candidate's timed rounds against a baseline's as {@link Verdict#FASTER}, {@link
 * Verdict#PARITY}, {@link Verdict#SLOWER} or {@link Verdict#INCONCLUSIVE}, against the rounds' own
 * noise. Values are times (lower is faster), one per round; {@code minEffect} is in the same unit:
 * the smallest difference that matters.
 *
 * <p><b>Paired</b> ({@link #classify}: both ran in the same program, interleaved, so round i of the
 * candidate and of the baseline ran under the same conditions):
 *
 * <ol>
 *   <li>fewer than {@value #MIN_ROUNDS} rounds: INCONCLUSIVE;
 *   <li>{@code d = median(candidate) - median(baseline)}; {@code noise} = max - min of the
 *       baseline's rounds without its fastest and its slowest round (one hiccup in a round does not
 *       widen the noise and turn a real difference into parity);
 *   <li>{@code |d| <= max(noise, minEffect)}: PARITY;
 *   <li>otherwise, if the paired differences {@code candidate[i] - baseline[i]} have the sign of
 *       {@code d} in at least ceil(8n/9) of the n rounds (8 of 9; a zero difference does not
 *       count): FASTER ({@code d < 0}) or SLOWER ({@code d > 0}); with 9 fair coin flips, 8 or more
 *       alike happens 4% of the time;
 *   <li>otherwise INCONCLUSIVE: the medians differ, but round by round the candidate is not
 *       consistently on one side.
 * </ol>
 *
 * <p><b>Unpaired</b> ({@link #classifyUnpaired}: separate programs, no round corresponds to
 * another): fewer than {@value #MIN_ROUNDS} rounds on either side: INCONCLUSIVE; {@code |d| <=
 * minEffect}: PARITY; otherwise FASTER or SLOWER by the sign of {@code d} if the min..max ranges of
 * the two are separated, INCONCLUSIVE if they overlap.
 *
 * <p>INCONCLUSIVE is an answer in its own right (the measurement cannot tell), never parity.
 */
public final class Classification {

  /** The outcome of a comparison. */
  public enum Verdict {
    FASTER,
    PARITY,
    SLOWER,
    INCONCLUSIVE
  }

  /** Fewer rounds than this classify as INCONCLUSIVE whatever they hold. */
  public static final int MIN_ROUNDS = 5;

  /** {@link #classify}'s rule in one paragraph, for printing under a table. */
  public static final String PAIRED_RULE =
      "paired (rounds interleaved): fewer than "
          + MIN_ROUNDS
          + " rounds: INCONCLUSIVE; d = median(candidate) - median(baseline); noise = max - min of"
          + " the baseline's rounds without its fastest and slowest; |d| <= max(noise, minEffect):"
          + " PARITY; else if candidate[i] - baseline[i] has d's sign (a tie does not count) in at"
          + " least ceil(8n/9) of n rounds (8 of 9): FASTER (d < 0) / SLOWER (d > 0); else"
          + " INCONCLUSIVE.";

  /** {@link #classifyUnpaired}'s rule in one paragraph, for printing under a table. */
  public static final String UNPAIRED_RULE =
      "unpaired (separate programs): fewer than "
          + MIN_ROUNDS
          + " rounds on either side: INCONCLUSIVE; |d| <= minEffect: PARITY; else if the min..max"
          + " ranges are separated: FASTER (d < 0) / SLOWER (d > 0); overlapping: INCONCLUSIVE.";

  private Classification() {}

  /**
   * The paired rule (see the class comment): {@code candidate[i]} and {@code baseline[i]} were
   * measured in the same round.
   *
   * @throws IllegalArgumentException if the arrays differ in length, a value is not finite, or
   *     {@code minEffect} is negative or not finite
   */
  public static Verdict classify(double[] candidate, double[] baseline, double minEffect) {
    if (candidate.length != baseline.length) {
      throw new IllegalArgumentException(
          "paired rounds differ in number: "
              + candidate.length
              + " candidate, "
              + baseline.length
              + " baseline");
    }
    requireValid(candidate, baseline, minEffect);
    int n = candidate.length;
    if (n < MIN_ROUNDS) return Verdict.INCONCLUSIVE;
    double d = median(candidate) - median(baseline);
    if (Math.abs(d) <= Math.max(noise(baseline), minEffect)) return Verdict.PARITY;
    int agreeing = 0;
    for (int i = 0; i < n; i++) {
      if (Math.signum(candidate[i] - baseline[i]) == Math.signum(d)) agreeing++;
    }
    if (agreeing < agreeingRoundsNeeded(n)) return Verdict.INCONCLUSIVE;
    return d < 0 ? Verdict.FASTER : Verdict.SLOWER;
  }

  /**
   * The unpaired rule (see the class comment): the two sides were measured apart, so only their
   * distributions compare; their numbers of rounds may differ.
   *
   * @throws IllegalArgumentException if a value is not finite, or {@code minEffect} is negative or
   *     not finite
   */
  public static Verdict classifyUnpaired(double[] candidate, double[] baseline, double minEffect) {
    requireValid(candidate, baseline, minEffect);
    if (candidate.length < MIN_ROUNDS || baseline.length < MIN_ROUNDS) {
      return Verdict.INCONCLUSIVE;
    }
    double d = median(candidate) - median(baseline);
    if (Math.abs(d) <= minEffect) return Verdict.PARITY;
    boolean separated = max(candidate) < min(baseline) || max(baseline) < min(candidate);
    if (!separated) return Verdict.INCONCLUSIVE;
    return d < 0 ? Verdict.FASTER : Verdict.SLOWER;
  }

  /**
   * Rounds whose paired difference must share the medians' sign: ceil(8n/9), so 8 of 9 and all of 5
   * to 8.
   */
  static int agreeingRoundsNeeded(int n) {
    return (8 * n + 8) / 9;
  }

  /** The paired rule's noise: max - min of the rounds without the lowest and the highest. */
  public static double noise(double[] baseline) {
    double[] s = baseline.clone();
    Arrays.sort(s);
    return s[s.length - 2] - s[1];
  }

  /** The median; the mean of the two middle values for an even count. */
  public static double median(double[] v) {
    if (v.length == 0) throw new IllegalArgumentException("no rounds");
    double[] s = v.clone();
    Arrays.sort(s);
    int m = s.length / 2;
    return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  public static double min(double[] v) {
    return Arrays.stream(v).min().orElseThrow(() -> new IllegalArgumentException("no rounds"));
  }

  public static double max(double[] v) {
    return Arrays.stream(v).max().orElseThrow(() -> new IllegalArgumentException("no rounds"));
  }

  private static void requireValid(double[] candidate, double[] baseline, double minEffect) {
    if (!(minEffect >= 0) || Double.isInfinite(minEffect)) {
      throw new IllegalArgumentException("minEffect must be finite and >= 0: " + minEffect);
    }
    for (double[] side : new double[][] {candidate, baseline}) {
      for (double x : side) {
        if (!Double.isFinite(x)) throw new IllegalArgumentException("round value not finite: " + x);
      }
    }
  }
}
