package io.collscope.bench;

import static io.collscope.bench.Classification.Verdict.FASTER;
import static io.collscope.bench.Classification.Verdict.INCONCLUSIVE;
import static io.collscope.bench.Classification.Verdict.PARITY;
import static io.collscope.bench.Classification.Verdict.SLOWER;
import static io.collscope.bench.Classification.classify;
import static io.collscope.bench.Classification.classifyUnpaired;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Each verdict of both rules from synthetic rounds (µs per collective). */
class ClassificationTest {

  /** Nine interleaved rounds of a plain kernel: median 10.2, 10.0..10.3. */
  private static final double[] PLAIN = {10.0, 10.2, 10.1, 10.3, 10.0, 10.2, 10.1, 10.3, 10.2};

  private static double[] plus(double[] v, double delta) {
    return Arrays.stream(v).map(x -> x + delta).toArray();
  }

  @Test
  void aConsistentShiftBeyondTheNoiseIsSlowerOrFaster() {
    assertThat(classify(plus(PLAIN, 1.7), PLAIN, 0.1)).isEqualTo(SLOWER);
    assertThat(classify(plus(PLAIN, -1.0), PLAIN, 0.1)).isEqualTo(FASTER);
  }

  @Test
  void aShiftWithinTheBaselinesNoiseIsParity() {
    // noise: 10.0..10.3 without the extremes is still 0.3; a 0.05 shift is within it
    assertThat(classify(plus(PLAIN, 0.05), PLAIN, 0.0)).isEqualTo(PARITY);
    assertThat(classify(PLAIN.clone(), PLAIN, 0.0)).isEqualTo(PARITY);
  }

  @Test
  void aConsistentShiftBelowMinEffectIsParityEvenOnQuietRounds() {
    double[] quiet = {10.000, 10.001, 10.000, 10.001, 10.000, 10.001, 10.000, 10.001, 10.000};
    assertThat(classify(plus(quiet, 0.05), quiet, 0.1)).isEqualTo(PARITY);
    assertThat(classify(plus(quiet, 0.05), quiet, 0.01)).isEqualTo(SLOWER);
  }

  @Test
  void overlappingNoisyRoundsWithAMedianShiftAreInconclusive() {
    // median 10.7 vs 10.2 (shift 0.5 > noise 0.3), but the candidate is below the plain kernel
    // in 3 of 9 rounds
    double[] noisy = {10.9, 9.6, 10.8, 9.7, 10.7, 10.9, 9.8, 10.8, 10.6};
    assertThat(Classification.median(noisy) - Classification.median(PLAIN)).isGreaterThan(0.3);
    assertThat(classify(noisy, PLAIN, 0.1)).isEqualTo(INCONCLUSIVE);
  }

  @Test
  void eightOfNineRoundsAgreeingIsEnoughSevenIsNot() {
    double[] eight = plus(PLAIN, 1.0);
    eight[4] = PLAIN[4] - 0.05;
    assertThat(classify(eight, PLAIN, 0.1)).isEqualTo(SLOWER);
    double[] seven = eight.clone();
    seven[7] = PLAIN[7]; // a tie does not count as agreeing
    assertThat(classify(seven, PLAIN, 0.1)).isEqualTo(INCONCLUSIVE);
  }

  @Test
  void fewerThanFiveRoundsAreInconclusiveWhateverTheyHold() {
    double[] four = {10.0, 10.1, 10.0, 10.1};
    assertThat(classify(plus(four, 5.0), four, 0.1)).isEqualTo(INCONCLUSIVE);
    assertThat(classify(four.clone(), four, 0.1)).isEqualTo(INCONCLUSIVE);
    double[] five = {10.0, 10.1, 10.0, 10.1, 10.0};
    assertThat(classify(plus(five, 5.0), five, 0.1)).isEqualTo(SLOWER);
    assertThat(classifyUnpaired(plus(four, 5.0), PLAIN, 0.1)).isEqualTo(INCONCLUSIVE);
    assertThat(classifyUnpaired(PLAIN, four, 0.1)).isEqualTo(INCONCLUSIVE);
  }

  @Test
  void oneHiccupRoundDoesNotHideARealDifference() {
    // round 3 hit something that slowed both variants; min..max of the baseline would be 5.0 and
    // call a consistent +1.0 parity
    double[] hiccup = PLAIN.clone();
    hiccup[3] = 15.0;
    assertThat(classify(plus(hiccup, 1.0), hiccup, 0.1)).isEqualTo(SLOWER);
  }

  @Test
  void theAgreementNeededIsEightNinthsRoundedUp() {
    assertThat(Classification.agreeingRoundsNeeded(5)).isEqualTo(5);
    assertThat(Classification.agreeingRoundsNeeded(8)).isEqualTo(8);
    assertThat(Classification.agreeingRoundsNeeded(9)).isEqualTo(8);
    assertThat(Classification.agreeingRoundsNeeded(10)).isEqualTo(9);
    assertThat(Classification.agreeingRoundsNeeded(18)).isEqualTo(16);
  }

  @Test
  void unpairedSeparatedRangesBeyondMinEffectAreFasterOrSlower() {
    double[] nccl = {14.4, 13.9, 14.6, 14.2, 14.3, 14.5, 14.1, 14.4, 14.0, 14.3, 14.2};
    assertThat(classifyUnpaired(PLAIN, nccl, 0.1)).isEqualTo(FASTER);
    assertThat(classifyUnpaired(nccl, PLAIN, 0.1)).isEqualTo(SLOWER);
  }

  @Test
  void unpairedMediansWithinMinEffectAreParityOverlappingOrNot() {
    double[] close = plus(PLAIN, 0.05);
    assertThat(classifyUnpaired(close, PLAIN, 0.1)).isEqualTo(PARITY);
    double[] tightAbove = {10.35, 10.36, 10.35, 10.36, 10.35};
    assertThat(classifyUnpaired(tightAbove, PLAIN, 0.2)).isEqualTo(PARITY);
    assertThat(classifyUnpaired(tightAbove, PLAIN, 0.1)).isEqualTo(SLOWER);
  }

  @Test
  void unpairedOverlappingRangesWithMediansApartAreInconclusive() {
    double[] wide = {9.9, 10.8, 10.9, 10.7, 10.8, 10.6, 10.9, 10.7, 10.8};
    assertThat(classifyUnpaired(wide, PLAIN, 0.1)).isEqualTo(INCONCLUSIVE);
  }

  @Test
  void badInputIsRefused() {
    assertThatThrownBy(() -> classify(new double[9], new double[8], 0.1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("differ in number");
    double[] nan = PLAIN.clone();
    nan[0] = Double.NaN;
    assertThatThrownBy(() -> classify(nan, PLAIN, 0.1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> classifyUnpaired(PLAIN, PLAIN, -1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertThat(Classification.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
    assertThat(Classification.median(PLAIN)).isEqualTo(10.2);
  }
}
