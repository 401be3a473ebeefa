package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.model.CommunicatorKey;
import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AttributionFunctionTest {

  private static final Duration TTL = Duration.ofSeconds(60);

  private KeyedOneInputStreamOperatorTestHarness<CommunicatorKey, RankWindow, Attribution> harness;

  private static final long GRACE = 2_000;

  @BeforeEach
  void setUp() throws Exception {
    open(new AttributionFunction(Thresholds.DEFAULT, TTL));
  }

  private void open(AttributionFunction f) throws Exception {
    if (harness != null) harness.close();
    harness =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(f),
            (RankWindow w) -> CommunicatorKey.of(w),
            TypeInformation.of(CommunicatorKey.class));
    harness.open();
  }

  private void openWithGrace() throws Exception {
    open(new AttributionFunction(Thresholds.DEFAULT, TTL, Duration.ofMillis(GRACE)));
  }

  @Test
  void aRankThatReportsLateWithinTheGraceIsAttributedWithItsWindowNotAsMissing() throws Exception {
    openWithGrace();
    List<RankWindow> ranks = new Windows(4, 10).slowRank(2, 300).build();
    for (RankWindow w : ranks.subList(0, 3)) harness.processElement(w, Windows.END - 1);
    harness.processWatermark(Windows.END - 1);
    assertThat(output()).as("rank 3's window is still to come").isEmpty();
    harness.processWatermark(Windows.END + GRACE / 2);
    harness.processElement(ranks.get(3), Windows.END - 1);
    assertThat(output()).as("complete: attributed at once").hasSize(1);
    assertThat(output().get(0).getMissingRanks()).isEmpty();
    assertThat(output().get(0).getFindings().get(0).getRank()).isEqualTo(2);
    harness.processWatermark(Windows.END + 10 * GRACE);
    assertThat(output()).hasSize(1);
  }

  @Test
  void aCompleteWindowDoesNotWaitForTheGrace() throws Exception {
    openWithGrace();
    for (RankWindow w : new Windows(4, 10).build()) harness.processElement(w, Windows.END - 1);
    harness.processWatermark(Windows.END - 1);
    assertThat(output()).hasSize(1);
  }

  @Test
  void anIncompleteWindowIsAttributedWhenTheGraceHasPassed() throws Exception {
    openWithGrace();
    for (RankWindow w : new Windows(4, 10).absent(1).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 2 + GRACE);
    assertThat(output()).isEmpty();
    harness.processWatermark(Windows.END - 1 + GRACE);
    assertThat(output())
        .singleElement()
        .satisfies(a -> assertThat(a.getMissingRanks()).containsExactly(1));
  }

  @Test
  void aNewerWindowThatFiresFirstAttributesTheWaitingOneBeforeIt() throws Exception {
    long window = Windows.END - Windows.START;
    // a grace longer than a window: the next window completes before it passes
    open(new AttributionFunction(Thresholds.DEFAULT, TTL, Duration.ofMillis(3 * window)));
    for (RankWindow w : new Windows(4, 10).absent(1).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    for (RankWindow w : new Windows(4, 10).build()) {
      RankWindow next = RankWindow.newBuilder(w).build();
      next.setWindowStart(next.getWindowStart().plusMillis(window));
      next.setWindowEnd(next.getWindowEnd().plusMillis(window));
      harness.processElement(next, Windows.END - 1 + window);
    }
    harness.processWatermark(Windows.END - 2 + window);
    assertThat(output()).isEmpty();
    harness.processWatermark(Windows.END - 1 + window);
    assertThat(output())
        .extracting(a -> a.getWindowEnd().toEpochMilli() + ":" + a.getMissingRanks())
        .containsExactly(Windows.END + ":[1]", (Windows.END + window) + ":[]");
    harness.processWatermark(Windows.END + 10 * window);
    assertThat(output()).hasSize(2);
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  private List<Attribution> output() {
    return harness.extractOutputValues();
  }

  @Test
  void waitsForTheWatermarkThenAttributesTheWholeWindowOnce() throws Exception {
    List<RankWindow> ranks = new Windows(4, 10).slowRank(2, 300).build();
    for (RankWindow w : ranks.subList(0, 3)) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 2);
    assertThat(output()).isEmpty();
    harness.processElement(ranks.get(3), Windows.END - 1);
    harness.processWatermark(Windows.END - 1);
    assertThat(output()).hasSize(1);
    Attribution a = output().get(0);
    assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_RANK);
    assertThat(a.getFindings().get(0).getRank()).isEqualTo(2);
    assertThat(a.getMissingRanks()).isEmpty();
    assertThat(a.getCluster()).isEqualTo(Windows.KEY.cluster());
    assertThat(a.getJob()).isEqualTo(Windows.KEY.job());
    assertThat(a.getWindowStart().toEpochMilli()).isEqualTo(Windows.START);
    assertThat(a.getWindowEnd().toEpochMilli()).isEqualTo(Windows.END);

    // a straggling rank window of an attributed window is dropped, not attributed again
    harness.processElement(ranks.get(0), Windows.END - 1);
    harness.processWatermark(Windows.END + 10_000);
    assertThat(output()).hasSize(1);
  }

  @Test
  void aQuietCommunicatorLeavesNoStateAndNoTimerBehind() throws Exception {
    for (RankWindow w : new Windows(4, 10).slowRank(2, 300).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    assertThat(output()).hasSize(1);
    // what remains: the end of the last attributed window (to drop late rank windows), its
    // clean-up timer, and the baseline with the rank the window leaned towards (rank 2)
    assertThat(harness.numKeyedStateEntries()).isEqualTo(3);
    assertThat(harness.numEventTimeTimers()).isEqualTo(1);

    harness.processWatermark(Windows.END - 2 + TTL.toMillis());
    assertThat(harness.numKeyedStateEntries()).isEqualTo(3);

    harness.processWatermark(Windows.END - 1 + TTL.toMillis());
    assertThat(harness.numKeyedStateEntries()).isZero();
    assertThat(harness.numEventTimeTimers()).isZero();
  }

  @Test
  void aCommunicatorBackAfterItsIdleTimeoutWaitsForItsWindowWithOneTimer() throws Exception {
    for (RankWindow w : new Windows(4, 10).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    // back after the idle timeout: a window ending two windows past the clean-up time
    long window = Windows.END - Windows.START;
    long shift = TTL.toMillis() + 2 * window;
    for (RankWindow w : new Windows(4, 10).build()) {
      RankWindow back = RankWindow.newBuilder(w).build();
      back.setWindowStart(back.getWindowStart().plusMillis(shift));
      back.setWindowEnd(back.getWindowEnd().plusMillis(shift));
      harness.processElement(back, back.getWindowEnd().toEpochMilli() - 1);
    }
    // past the clean-up time, before the pending window's end: its timer, and no clean-up timer
    // re-armed a millisecond ahead (that one fired every millisecond up to the window's end)
    harness.processWatermark(Windows.END - 1 + TTL.toMillis() + 5);
    assertThat(harness.numEventTimeTimers()).isEqualTo(1);
    assertThat(output()).hasSize(1);

    harness.processWatermark(Windows.END - 1 + shift);
    assertThat(output()).hasSize(2);
    assertThat(output().get(1).getMissingRanks()).isEmpty();
    // and it is cleaned up once quiet for the idle timeout after that window
    harness.processWatermark(Windows.END - 1 + shift + TTL.toMillis());
    assertThat(harness.numKeyedStateEntries()).isZero();
    assertThat(harness.numEventTimeTimers()).isZero();
  }

  @Test
  void aCommunicatorThatKeepsReportingKeepsItsState() throws Exception {
    long window = Windows.END - Windows.START;
    for (int k = 0; k < 10; k++) {
      for (RankWindow w : new Windows(2, 5).build()) {
        RankWindow shifted = RankWindow.newBuilder(w).build();
        shifted.setWindowStart(shifted.getWindowStart().plusMillis(k * window));
        shifted.setWindowEnd(shifted.getWindowEnd().plusMillis(k * window));
        harness.processElement(shifted, shifted.getWindowEnd().toEpochMilli() - 1);
      }
      harness.processWatermark(Windows.END - 1 + k * window);
    }
    assertThat(output()).hasSize(10);
    // 10 windows (100 s) is past the 60 s TTL, but the communicator never went quiet: the last
    // window fired, the cleanup timer and the baseline stay
    assertThat(harness.numKeyedStateEntries()).isEqualTo(3);
    assertThat(harness.numEventTimeTimers()).isEqualTo(1);
  }

  @Test
  void aRankWithoutAWindowByTheWatermarkIsMissing() throws Exception {
    for (RankWindow w : new Windows(4, 10).absent(1).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    assertThat(output())
        .singleElement()
        .satisfies(a -> assertThat(a.getMissingRanks()).containsExactly(1));
  }

  @Test
  void communicatorsOfTheSameNameInDifferentJobsAreIndependent() throws Exception {
    for (RankWindow w : new Windows(2, 5).slowRank(1, 300).build()) {
      harness.processElement(w, Windows.END - 1);
      RankWindow otherComm = RankWindow.newBuilder(w).setCommunicator("d").build();
      harness.processElement(otherComm, Windows.END - 1);
      RankWindow otherJob = RankWindow.newBuilder(w).setJob("another-job").build();
      harness.processElement(otherJob, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    assertThat(output())
        .extracting(a -> a.getJob() + "/" + a.getCommunicator())
        .containsExactlyInAnyOrder("job/c", "job/d", "another-job/c");
    assertThat(output()).allSatisfy(a -> assertThat(a.getMissingRanks()).isEmpty());
  }

  /** Feeds window k of {@code w} and fires it; returns its attribution. */
  private Attribution window(int k, Windows w) throws Exception {
    long end = Windows.START + (k + 1) * (Windows.END - Windows.START);
    for (RankWindow r : w.window(k).build()) harness.processElement(r, end - 1);
    harness.processWatermark(end - 1);
    return output().get(output().size() - 1);
  }

  @Test
  void aHostsShortExcursionJoinsTheBaselineAndALastingSlowdownIsNamed() throws Exception {
    int k = 0;
    for (; k < 8; k++) assertThat(window(k, new Windows(8, 2)).getFindings()).isEmpty();
    // Windows 10 us dearer, one short of a verdict, then calm again: a host's excursion.
    for (int i = 0; i < Attributor.UNIFORM_WINDOWS - 1; i++, k++) {
      assertThat(window(k, new Windows(8, 2).everyCopyReduce(10)).getFindings()).isEmpty();
    }
    assertThat(window(k++, new Windows(8, 2)).getFindings()).isEmpty();
    // A slowdown that lasts: named in its UNIFORM_WINDOWS-th window over the band.
    for (int i = 0; i < Attributor.UNIFORM_WINDOWS - 1; i++) {
      assertThat(window(k++, new Windows(8, 2).everyCopyReduce(40)).getFindings()).isEmpty();
    }
    assertThat(window(k++, new Windows(8, 2).everyCopyReduce(40)).getVerdict())
        .isEqualTo(Verdict.UNIFORM_SLOWDOWN);
  }
}
