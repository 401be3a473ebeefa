package io.collscope.flink.alert;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.Verdict;
import io.collscope.model.CommunicatorKey;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AlertFunctionTest {

  private static final CommunicatorKey KEY = new CommunicatorKey("cl", "job", "tp0");
  private static final long WINDOW = 1000;
  private static final long T0 = 1_000_000;

  private KeyedOneInputStreamOperatorTestHarness<CommunicatorKey, Attribution, Alert> harness;
  private int window;
  private CommunicatorKey key = KEY;

  /** Extra copy time of one rank (µs) in the windows sent while set; the others wait for it. */
  private int slowRank = -1;

  private double slowCopyUs;
  private final List<Attribution> attributionsSoFar = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    start(BaselineFile.empty());
  }

  private void start(BaselineFile seeds) throws Exception {
    if (harness != null) harness.close();
    harness =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(
                new AlertFunction(RegressionRule.DEFAULT, 3, 3, Duration.ofSeconds(60), seeds)),
            CommunicatorKey::of,
            org.apache.flink.api.common.typeinfo.TypeInformation.of(CommunicatorKey.class));
    harness.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  /** One window: 4 ranks whose mean time per collective is {@code latencyUs}, mostly wait. */
  private void window(double latencyUs, long calls, Finding... findings) throws Exception {
    window(latencyUs, calls, null, findings);
  }

  /** As above, from an emitter that measured {@code sampled} of the calls (null: every one). */
  private void window(double latencyUs, long calls, Long sampled, Finding... findings)
      throws Exception {
    long start = T0 + window * WINDOW;
    window++;
    List<RankPhases> ranks = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      // a little spread between windows, as real ones have
      double wobble = (window % 3) * 0.3;
      double copy = 1.0 + (r == slowRank ? slowCopyUs : 0);
      double wait = latencyUs - 4 + wobble - (r == slowRank ? slowCopyUs : 0);
      ranks.add(
          new RankPhases(
              r, calls, 0.5, copy, 0.5, wait, 2.0, 2 * latencyUs, 0.0, 0.0, 0.0, sampled));
    }
    Attribution a =
        Attribution.newBuilder()
            .setCluster(key.cluster())
            .setJob(key.job())
            .setCommunicator(key.communicator())
            .setCollective("allreduce_oneshot_f32")
            .setWindowStart(Instant.ofEpochMilli(start))
            .setWindowEnd(Instant.ofEpochMilli(start + WINDOW))
            .setWorldSize(4)
            .setRanks(ranks)
            .setMaxWaitRank(0)
            .setMaxWaitMeanUs(latencyUs)
            .setVerdict(findings.length == 0 ? Verdict.NONE : Verdict.SLOW_RANK)
            .setFindings(List.of(findings))
            .setConfidence(1.0)
            .setMissingRanks(List.of())
            .setBytesPerCall(4096)
            .build();
    attributionsSoFar.add(a);
    harness.processElement(a, start + WINDOW - 1);
    harness.processWatermark(start + WINDOW - 1);
  }

  private List<Alert> alerts() {
    List<Alert> out = new ArrayList<>();
    for (Object o : harness.getOutput()) {
      if (o instanceof StreamRecord<?> r) out.add((Alert) r.getValue());
    }
    return out;
  }

  private static Finding slowRank(int r) {
    return new Finding(
        FindingKind.SLOW_RANK,
        r,
        -1,
        Cause.ARRIVED_LATE,
        0.9,
        200.0,
        "evidence",
        "",
        io.collscope.avro.HardwareCause.NONE,
        "");
  }

  @Test
  void aSampledEmittersWindowsCountTheirSampleNotTheirCalls() throws Exception {
    // 1,000 calls a window, of which the emitter measured 10 (1 in 16 would be ~62; fewer than the
    // rule's 20): nothing to compare, so no baseline is learnt and no regression can fire
    for (int i = 0; i < 12; i++) window(100, 1000, 10L);
    for (int i = 0; i < 6; i++) window(130, 1000, 10L);
    assertThat(alerts()).isEmpty();
    // the same windows with a sample of 62: the baseline grows and the regression fires
    for (int i = 0; i < 12; i++) window(100, 1000, 62L);
    for (int i = 0; i < 3; i++) window(130, 1000, 62L);
    assertThat(alerts())
        .singleElement()
        .satisfies(a -> assertThat(a.getKind()).isEqualTo(AlertKind.LATENCY_REGRESSION));
  }

  @Test
  void aRegressionFiresAfterThreeSlowerWindowsAndResolvesAfterThreeGoodOnes() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    assertThat(alerts()).isEmpty();
    window(130, 1000);
    window(130, 1000);
    assertThat(alerts()).as("two SLOWER windows are not yet an alert").isEmpty();
    window(130, 1000);
    assertThat(alerts()).hasSize(1);
    Alert fired = alerts().get(0);
    assertThat(fired.getState()).isEqualTo(AlertState.FIRING);
    assertThat(fired.getKind()).isEqualTo(AlertKind.LATENCY_REGRESSION);
    assertThat(fired.getLabels())
        .containsEntry("alertname", "CollscopeLatencyRegression")
        .containsEntry("cluster", "cl")
        .containsEntry("job", "job")
        .containsEntry("communicator", "tp0")
        .containsEntry("size_bucket", "4KiB")
        .containsEntry("severity", "warning");
    assertThat(fired.getAnnotations()).containsEntry("phase", "wait");
    assertThat(fired.getStartsAt()).isEqualTo(Instant.ofEpochMilli(T0 + 13 * WINDOW));
    assertThat(fired.getEndsAt()).isNull();
    assertThat(fired.getBaseline()).isBetween(99.0, 101.0);

    for (int i = 0; i < 5; i++) window(130, 1000);
    assertThat(alerts()).as("a firing alert is written once per transition").hasSize(1);

    window(100, 1000);
    window(100, 1000);
    assertThat(alerts()).hasSize(1);
    window(100, 1000);
    assertThat(alerts()).hasSize(2);
    Alert resolved = alerts().get(1);
    assertThat(resolved.getState()).isEqualTo(AlertState.RESOLVED);
    assertThat(resolved.getAlertId()).isEqualTo(fired.getAlertId());
    assertThat(resolved.getLabels()).isEqualTo(fired.getLabels());
    assertThat(resolved.getEndsAt()).isEqualTo(Instant.ofEpochMilli(T0 + window * WINDOW));
  }

  @Test
  void aSmallDifferenceWithinTheNoiseOrTheMinimumEffectIsParity() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    for (int i = 0; i < 10; i++) window(102.5, 1000); // 2.5 %: below the 3 % minimum effect
    assertThat(alerts()).isEmpty();

    start(BaselineFile.empty());
    window = 100;
    for (int i = 0; i < 12; i++) window(100, 1000);
    for (int i = 0; i < 3; i++) window(104, 1000); // 4 %: beyond it, and beyond 3 spreads
    assertThat(alerts()).as("a 4 %% regression alerts").hasSize(1);
  }

  @Test
  void inconclusiveWindowsNeitherFireNorBreakARun() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    window(130, 1000);
    window(130, 1000);
    window(130, 3); // too few calls: INCONCLUSIVE, the run goes on
    assertThat(alerts()).isEmpty();
    window(130, 1000);
    assertThat(alerts()).hasSize(1);
  }

  @Test
  void beforeTheBaselineHasEnoughWindowsNothingIsSlower() throws Exception {
    for (int i = 0; i < 5; i++) window(100, 1000);
    for (int i = 0; i < 5; i++) window(200, 1000);
    assertThat(alerts()).isEmpty();
  }

  @Test
  void aLongSlowdownNeverBecomesTheBaseline() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    for (int i = 0; i < 80; i++) window(150, 1000);
    assertThat(alerts()).hasSize(1);
    assertThat(alerts().get(0).getState()).isEqualTo(AlertState.FIRING);
  }

  @Test
  void aSlowRankWhoseGpuShowedACauseCarriesItAsALabelUntilItResolves() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    Finding hot = slowRank(2);
    hot.setHardwareCause(io.collscope.avro.HardwareCause.THERMAL);
    hot.setHardwareEvidence("GPU 2 of n (rank 2): SM 1,386/1,980 MHz, 87 °C");
    window(100, 1000, slowRank(2));
    window(100, 1000, slowRank(2));
    window(100, 1000, hot);
    Alert fired = alerts().get(0);
    assertThat(fired.getLabels()).containsEntry("hardware_cause", "THERMAL");
    assertThat(fired.getAnnotations())
        .containsEntry("hardware_evidence", "GPU 2 of n (rank 2): SM 1,386/1,980 MHz, 87 °C");
    for (int i = 0; i < 3; i++) window(100, 1000);
    Alert resolved = alerts().get(1);
    assertThat(resolved.getState()).isEqualTo(AlertState.RESOLVED);
    assertThat(resolved.getLabels()).isEqualTo(fired.getLabels());
    assertThat(resolved.getAlertId()).isEqualTo(fired.getAlertId());
  }

  @Test
  void withoutAHardwareCauseTheLabelsAreThoseOfBefore() throws Exception {
    for (int i = 0; i < 15; i++)
      window(100, 1000, i < 12 ? new Finding[0] : new Finding[] {slowRank(2)});
    assertThat(alerts().get(0).getLabels()).doesNotContainKey("hardware_cause");
    assertThat(alerts().get(0).getAnnotations()).doesNotContainKey("hardware_evidence");
  }

  @Test
  void aSustainedSlowRankFiresItsOwnAlertAndResolvesWhenItIsGone() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    window(100, 1000, slowRank(2));
    window(100, 1000, slowRank(2));
    assertThat(alerts()).isEmpty();
    window(100, 1000, slowRank(2));
    assertThat(alerts()).hasSize(1);
    Alert fired = alerts().get(0);
    assertThat(fired.getKind()).isEqualTo(AlertKind.SLOW_RANK);
    assertThat(fired.getLabels())
        .containsEntry("rank", "2")
        .containsEntry("alertname", "CollscopeSlowRank");
    assertThat(fired.getAnnotations()).containsEntry("description", "evidence");
    for (int i = 0; i < 3; i++) window(100, 1000);
    assertThat(alerts()).hasSize(2);
    assertThat(alerts().get(1).getState()).isEqualTo(AlertState.RESOLVED);
    assertThat(alerts().get(1).getAlertId()).isEqualTo(fired.getAlertId());
  }

  @Test
  void aCommunicatorThatStopsReportingResolvesItsAlertsAndLeavesNoState() throws Exception {
    for (int i = 0; i < 12; i++) window(100, 1000);
    for (int i = 0; i < 3; i++) window(100, 1000, slowRank(1));
    assertThat(alerts()).hasSize(1);
    harness.processWatermark(T0 + window * WINDOW + 61_000);
    assertThat(alerts()).hasSize(2);
    assertThat(alerts().get(1).getState()).isEqualTo(AlertState.RESOLVED);
    assertThat(alerts().get(1).getMessage()).contains("stopped reporting");
    assertThat(harness.numKeyedStateEntries()).isZero();
  }

  @Test
  void aBaselineFileLetsANewCommunicatorBeJudgedFromItsFirstWindows(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    // Learn a baseline from a first run's clean windows, write it, read it into a fresh job.
    for (int i = 0; i < 20; i++) {
      window(100, 1000);
    }
    for (Object o : harness.getOutput()) assertThat(o).isNotInstanceOf(StreamRecord.class);
    List<BaselineFile.Row> rows = BaselineFile.learn(attributionsSoFar, 60);
    assertThat(rows).extracting(BaselineFile.Row::scope).containsExactly("communicator", "class");
    assertThat(rows.get(0).medianUs()).isBetween(99.0, 101.0);
    assertThat(rows.get(0).windows())
        .as("the first %d windows are warm-up", AlertFunction.WARMUP_WINDOWS)
        .isEqualTo(20 - AlertFunction.WARMUP_WINDOWS);
    java.nio.file.Path file = dir.resolve("baselines.csv");
    java.nio.file.Files.writeString(file, BaselineFile.format(rows));

    start(BaselineFile.read(file));
    window = 100; // a later run
    window(130, 1000);
    window(130, 1000);
    window(130, 1000);
    assertThat(alerts()).as("no minute of relearning: SLOWER from the first window").hasSize(1);

    start(BaselineFile.empty());
    window = 200;
    for (int i = 0; i < 5; i++) window(130, 1000);
    assertThat(alerts()).as("without the file there is nothing to compare with yet").isEmpty();
  }

  @Test
  void learningAccountsForEveryWindowItPassesOver() throws Exception {
    // the demo's own history: a slow rank named in every window after the first learns nothing,
    // and the account says why (clean windows only), not just "0 baselines"
    window(100, 1000);
    for (int i = 0; i < 8; i++) window(400, 1000, slowRank(5));
    BaselineFile.Learning faulty = BaselineFile.learning(attributionsSoFar, 60);
    assertThat(faulty.rows()).isEmpty();
    assertThat(faulty.windows()).isEqualTo(9);
    assertThat(faulty.warmingUp()).isEqualTo(AlertFunction.WARMUP_WINDOWS);
    assertThat(faulty.withFindings()).isEqualTo(9 - AlertFunction.WARMUP_WINDOWS);
    assertThat(faulty.used()).isZero();
    // three clean windows more: learnt from exactly those
    for (int i = 0; i < 3; i++) window(100, 1000);
    BaselineFile.Learning mixed = BaselineFile.learning(attributionsSoFar, 60);
    assertThat(mixed.used()).isEqualTo(3);
    assertThat(mixed.rows().get(0).windows()).isEqualTo(3);
    assertThat(mixed.rows()).isEqualTo(BaselineFile.learn(attributionsSoFar, 60));
  }

  @Test
  void aNewCommunicatorStartsFromItsClasssPooledBaseline(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    // Two communicators of one class (cluster, collective, world size, message size) at about
    // 100 us; a third, never seen, is judged against their pooled baseline from its first window.
    for (String c : List.of("tp0", "tp1")) {
      key = new CommunicatorKey("cl", "job", c);
      for (int i = 0; i < 12; i++) window(c.equals("tp0") ? 99 : 101, 1000);
    }
    List<BaselineFile.Row> rows = BaselineFile.learn(attributionsSoFar, 60);
    BaselineFile.Row pooled =
        rows.stream().filter(BaselineFile.Row::pooled).findFirst().orElseThrow();
    assertThat(pooled.key().communicator()).isEmpty();
    assertThat(pooled.collective()).isEqualTo("allreduce_oneshot_f32");
    assertThat(pooled.medianUs()).isBetween(99.5, 100.5);
    assertThat(pooled.madUs())
        .as("at least the communicators' own difference")
        .isGreaterThanOrEqualTo(1.0);
    java.nio.file.Path file = dir.resolve("baselines.csv");
    java.nio.file.Files.writeString(file, BaselineFile.format(rows));

    start(BaselineFile.read(file));
    key = new CommunicatorKey("cl", "job-2", "tp9");
    for (int i = 0; i < 3; i++) window(130, 1000);
    assertThat(alerts())
        .as("a 30 % regression against the class, from the first windows")
        .hasSize(1);
    assertThat(alerts().get(0).getLabels()).containsEntry("collective", "allreduce_oneshot_f32");

    start(BaselineFile.read(file));
    key = new CommunicatorKey("other-cluster", "job-2", "tp9");
    for (int i = 0; i < 3; i++) window(130, 1000);
    assertThat(alerts()).as("another cluster is another class: nothing to compare with").isEmpty();
  }

  @Test
  void readsBaselineFilesOfTheFirstFormat(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path file = dir.resolve("v1.csv");
    java.nio.file.Files.writeString(
        file, BaselineFile.HEADER_V1 + "\ncl,job,tp0,4096,100.000,0.300,20\n");
    BaselineFile seeds = BaselineFile.read(file);
    assertThat(seeds.size()).isEqualTo(1);
    assertThat(seeds.seed(KEY, "anything", 4, 4096, 60).median()).isBetween(99.0, 101.0);
    java.nio.file.Files.writeString(
        file, BaselineFile.HEADER + "\nnot-a-scope,cl,,,c,4,4096,1,1,1\n");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> BaselineFile.read(file))
        .hasMessageContaining("v1.csv:2");
  }

  @Test
  void aRegressionNamesTheRanksSlowerThanTheirOwnBaseline() throws Exception {
    for (int i = 0; i < 15; i++) window(100, 1000);
    // Rank 2's copy takes 30 us more; the others wait that long for it: every rank's latency is
    // 130 us, but only rank 2's own time grew.
    slowRank = 2;
    slowCopyUs = 30;
    for (int i = 0; i < 3; i++) window(130, 1000);
    assertThat(alerts()).hasSize(1);
    assertThat(alerts().get(0).getAnnotations().get("ranks_slower_than_own"))
        .isEqualTo("2:copy+30.0us");

    // Without the rank's excess (a regression all in the waits) no rank is named.
    start(BaselineFile.empty());
    slowRank = -1;
    window = 100;
    for (int i = 0; i < 15; i++) window(100, 1000);
    for (int i = 0; i < 3; i++) window(130, 1000);
    assertThat(alerts()).hasSize(1);
    assertThat(alerts().get(0).getAnnotations().get("ranks_slower_than_own")).isEmpty();
  }
}
