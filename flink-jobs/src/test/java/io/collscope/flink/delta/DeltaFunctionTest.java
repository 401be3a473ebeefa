package io.collscope.flink.delta;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.flink.decode.DeadLetters;
import io.collscope.flink.decode.RankRecord;
import io.collscope.model.CompactPeers;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;
import io.collscope.schema.SnapshotFixtures;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DeltaFunctionTest {

  private KeyedOneInputStreamOperatorTestHarness<RankKey, RankRecord, SnapshotDelta> harness;
  private static final Duration TTL = Duration.ofSeconds(30);

  /** Event time of the first snapshot: records are validated where they are decoded, here. */
  private static final long T0 = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  private long offset;

  @BeforeEach
  void setUp() throws Exception {
    harness = newHarness();
    harness.open();
  }

  private static KeyedOneInputStreamOperatorTestHarness<RankKey, RankRecord, SnapshotDelta>
      newHarness() throws Exception {
    return new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new DeltaFunction(TTL)),
        RankRecord::key,
        TypeInformation.of(RankKey.class));
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  /** Snapshot {@code seq} of boot {@code boot}; every counter grows with {@code calls}. */
  private static CounterSnapshot snap(String boot, long seq, long calls) {
    return SnapshotFixtures.snapshot("c", 1, 2)
        .setBootId(boot)
        .setSeq(seq)
        .setEventTime(Instant.ofEpochMilli(T0 + 1_000 * seq + (boot.equals("b2") ? 1_000_000 : 0)))
        .setCalls(calls)
        .setBytes(4096 * calls)
        .setWaitCycles(100 * calls)
        .setPeerWaitCycles(List.of(100 * calls, 0L))
        .build();
  }

  @Test
  void networkWaitsAreDeltasPerPeerAndAPeerNewInTheLaterRecordCountsFromZero() {
    // rank 1 of 4: network peer 2 in both records, peer 3 only in the later one
    CounterSnapshot a =
        SnapshotFixtures.snapshot("c", 1, 4)
            .setNetPeers(List.of(2))
            .setNetSendWaitNs(List.of(1_000L))
            .setNetSendSteps(List.of(10L))
            .setNetRecvWaitNs(List.of(2_000L))
            .setNetRecvSteps(List.of(10L))
            .build();
    CounterSnapshot b =
        SnapshotFixtures.snapshot("c", 1, 4)
            .setNetPeers(List.of(2, 3))
            .setNetSendWaitNs(List.of(5_000L, 700L))
            .setNetSendSteps(List.of(30L, 7L))
            .setNetRecvWaitNs(List.of(2_500L, 900L))
            .setNetRecvSteps(List.of(30L, 7L))
            .build();
    SnapshotDelta d = DeltaFunction.delta(b, a);
    assertThat(d.netPeers).containsExactly(2, 3);
    assertThat(d.netSendNs).containsExactly(4_000L, 700L);
    assertThat(d.netSendSteps).containsExactly(20L, 7L);
    assertThat(d.netRecvNs).containsExactly(500L, 900L);
    assertThat(d.netRecvSteps).containsExactly(20L, 7L);
    // a record of an emitter without them: none
    assertThat(DeltaFunction.delta(SnapshotFixtures.snapshot("c", 1, 4).build(), null).netPeers)
        .isEmpty();
  }

  private void feed(CounterSnapshot s) throws Exception {
    harness.processElement(
        new StreamRecord<>(
            RankRecord.of(s, "snapshots", 0, offset++), s.getEventTime().toEpochMilli()));
  }

  private static long calls(SnapshotDelta d) {
    return d.totals.get(Counter.CALLS);
  }

  private List<SnapshotDelta> out() {
    return harness.extractOutputValues();
  }

  private List<DeadLetter> dead() {
    return harness.getSideOutput(DeadLetters.TAG) == null
        ? List.of()
        : harness.getSideOutput(DeadLetters.TAG).stream().map(StreamRecord::getValue).toList();
  }

  @Test
  void theFirstSnapshotOfABootIsADeltaFromZero() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 25));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 15L);
    assertThat(out().get(1).totals.cycles(Phase.WAIT)).isEqualTo(1500);
    assertThat(out().get(1).totals.peerWaitCycles()).containsExactly(1500L, 0L);
    assertThat(out().get(1).totals.get(Counter.BYTES)).isEqualTo(4096 * 15);
  }

  @Test
  void joiningMidBootOnlySetsTheBaseline() throws Exception {
    feed(snap("b1", 7, 1000));
    feed(snap("b1", 8, 1010));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L);
  }

  @Test
  void duplicatesAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 20));
    feed(snap("b1", 2, 20));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 10L);
    assertThat(dead()).isEmpty();
  }

  @Test
  void outOfOrderRecordsAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 3, 30));
    feed(snap("b1", 2, 20)); // late: already covered by the 1 -> 3 delta
    feed(snap("b1", 4, 40));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 20L, 10L);
  }

  @Test
  void aGapIsSpannedByOneDelta() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 5, 50));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 40L);
    assertThat(out().get(1).eventTimeMs).isEqualTo(T0 + 5_000);
  }

  @Test
  void aNewBootRestartsTheBaselineAndTheOldBootsStragglersAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 500));
    feed(snap("b2", 1, 3)); // emitter restarted: counters start again from zero
    feed(snap("b1", 3, 600)); // late record of the old incarnation
    feed(snap("b2", 2, 8));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 490L, 3L, 5L);
    assertThat(out()).extracting(d -> d.bootId).containsExactly("b1", "b1", "b2", "b2");
    assertThat(dead()).isEmpty();
  }

  @Test
  void aCounterGoingBackwardsIsADeadLetterAndTheBaselineStays() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 20));
    CounterSnapshot broken = CounterSnapshot.newBuilder(snap("b1", 3, 30)).setWaitCycles(5).build();
    feed(broken);
    feed(snap("b1", 4, 40));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 10L, 20L);
    assertThat(dead())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.getReason()).isEqualTo(DeadLetterReason.COUNTER_WENT_BACKWARDS);
              assertThat(d.getStage()).isEqualTo(Stage.DELTA);
              assertThat(d.getDetail()).contains("wait_cycles went backwards 2000 -> 5");
              assertThat(d.getOffset()).isEqualTo(2);
              assertThat(d.getRaw().remaining()).isPositive();
            });
  }

  @Test
  void aRecordWhoseKeyReadsButWhoseBodyDoesNotDecodeIsADeadLetterOfTheDecodeStage()
      throws Exception {
    feed(snap("b1", 1, 10));
    // The key stage read the key from the first fields; the rest is cut off, as a torn write would.
    RankRecord torn = RankRecord.of(snap("b1", 2, 20), "snapshots", 0, 41);
    torn.value = java.util.Arrays.copyOf(torn.value, torn.value.length / 2);
    harness.processElement(new StreamRecord<>(torn, T0 + 2_000));
    // And one that decodes but breaks the contract (a rank outside its world).
    feed(CounterSnapshot.newBuilder(snap("b1", 3, 30)).setWorldSize(1).build());
    feed(snap("b1", 4, 40));

    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 30L);
    assertThat(dead())
        .extracting(DeadLetter::getReason, DeadLetter::getStage, DeadLetter::getOffset)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(DeadLetterReason.CORRUPT_BODY, Stage.DECODE, 41L),
            org.assertj.core.groups.Tuple.tuple(DeadLetterReason.INVALID, Stage.DECODE, 1L));
    assertThat(dead().get(0).getRaw()).isEqualTo(java.nio.ByteBuffer.wrap(torn.value));
  }

  /**
   * A compact record (200 ranks) of rank 1 after {@code calls} collectives: peer 7 {@code late7}
   * cycles of wait, every other peer 10 per call; listing the rank itself and {@code listed}.
   */
  private static CounterSnapshot compactSnap(long seq, long calls, long late7, int... listed) {
    int n = 200;
    CounterSnapshot s =
        SnapshotFixtures.snapshot("c", 1, n)
            .setBootId("b1")
            .setSeq(seq)
            .setEventTime(Instant.ofEpochMilli(T0 + 1_000 * seq))
            .setCalls(calls)
            .setWaitCycles(calls * 10 * n + late7)
            .build();
    RankTotals t = RankTotals.of(s);
    for (int p = 0; p < n; p++) if (p != 1) t.peerWaitCycles()[p] = 10 * calls;
    t.peerWaitCycles()[7] = late7;
    int[] index =
        java.util.stream.IntStream.concat(
                java.util.stream.IntStream.of(1), java.util.Arrays.stream(listed))
            .sorted()
            .distinct()
            .toArray();
    return CompactPeers.writeCompact(s, t, index);
  }

  @Test
  void compactRecordsGiveCompactDeltasOfTheirListedPeersAndTheOthersMean() throws Exception {
    feed(compactSnap(1, 100, 5_000, 7));
    feed(compactSnap(2, 300, 90_000, 9)); // peer 7 left the list: its estimate dips, no dead letter
    assertThat(dead()).isEmpty();
    SnapshotDelta d = out().get(1);
    assertThat(d.compact()).isTrue();
    // The peers either record listed: 1 (itself), 7 and 9.
    assertThat(d.peerIndex).containsExactly(1, 7, 9);
    assertThat(d.totals.peerWaitCycles()).hasSize(3);
    // Peer 9: listed now (3,000), the others' mean before (1,000); peer 7: the others' mean now,
    // (3,000 * 197 + 90,000) / 198 = 3,439, minus 5,000 listed before: negative, clamped to 0.
    assertThat(d.totals.peerWaitCycles()[2]).isEqualTo(2_000);
    assertThat(d.totals.peerWaitCycles()[1]).isZero();
    // Everyone else: the others' mean now minus before (3,439 - 1,000).
    assertThat(d.othersWaitCycles).isEqualTo((3_000L * 197 + 90_000) / 198 - 1_000);
    assertThat(calls(d)).isEqualTo(200);
  }

  @Test
  void aCompactRecordsCounterGoingBackwardsIsADeadLetter() throws Exception {
    feed(compactSnap(1, 100, 5_000, 7));
    feed(compactSnap(2, 90, 6_000, 7));
    assertThat(out()).hasSize(1);
    assertThat(dead())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.getReason()).isEqualTo(DeadLetterReason.COUNTER_WENT_BACKWARDS);
              assertThat(d.getDetail()).contains("calls went backwards 100 -> 90");
            });
  }

  /** {@code snap}, from an emitter that accounts 1 collective in 16 and has sampled {@code n}. */
  private static CounterSnapshot sampled(long seq, long calls, long n) {
    return CounterSnapshot.newBuilder(snap("b1", seq, calls))
        .setSampleEvery(16)
        .setSampledCalls(n)
        .build();
  }

  @Test
  void aDeltaCarriesItsSampleAndTheCollectivesItStandsFor() throws Exception {
    feed(sampled(1, 160, 9));
    feed(sampled(2, 320, 20));
    feed(snap("b1", 3, 330)); // an emitter that accounts every call again: its sample is its calls
    assertThat(out()).extracting(d -> d.sampledCalls).containsExactly(9L, 11L, 310L);
    assertThat(out()).extracting(d -> d.accountedCalls).containsExactly(144L, 176L, 310L);
  }

  @Test
  void aSampleThatGoesBackwardsIsADeadLetter() throws Exception {
    feed(sampled(1, 160, 9));
    feed(sampled(2, 320, 8));
    assertThat(out()).hasSize(1);
    assertThat(dead())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.getReason()).isEqualTo(DeadLetterReason.COUNTER_WENT_BACKWARDS);
              assertThat(d.getDetail()).contains("sampled_calls went backwards 9 -> 8");
            });
  }

  @Test
  void aSampleLargerThanTheCallsDoesNotValidate() throws Exception {
    feed(sampled(1, 160, 161));
    assertThat(out()).isEmpty();
    assertThat(dead())
        .singleElement()
        .satisfies(
            d -> assertThat(d.getDetail()).contains("sampled_calls 161 outside [0, calls 160]"));
  }

  @Test
  void aChangedWorldSizeWithinABootIsADeadLetter() throws Exception {
    feed(snap("b1", 1, 10));
    feed(
        CounterSnapshot.newBuilder(snap("b1", 2, 20))
            .setWorldSize(3)
            .setPeerWaitCycles(List.of(0L, 0L, 0L))
            .setPeerArrivedLast(List.of(0L, 0L, 0L))
            .setRank(1)
            .build());
    assertThat(dead())
        .singleElement()
        .satisfies(d -> assertThat(d.getReason()).isEqualTo(DeadLetterReason.WORLD_SIZE_CHANGED));
  }

  @Test
  void aBaselineRestoredFromACheckpointIsDecodedFromItsBytes() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 20));
    var checkpoint = harness.snapshot(1, 1);
    harness.close();
    harness = newHarness();
    harness.initializeState(checkpoint);
    harness.open();
    feed(snap("b1", 3, 35));
    feed(snap("b1", 3, 35)); // a duplicate of the restored rank is still one
    // The restored baseline (seq 2, 20 calls) is the subtrahend: 15, not 35 from zero.
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(15L);
  }

  @Test
  void aBaselineOfAnEarlierJobsStateIsTakenOver() throws Exception {
    // A job before Baseline kept the last snapshot itself in state "baseline".
    restoreFrom(
        new StateWriter<>(
            "baseline", CounterSnapshot.class, r -> io.collscope.schema.Snapshots.decode(r.value)),
        snap("b1", 4, 40));
    feed(snap("b1", 5, 52));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(12L);
    assertThat(harness.numKeyedStateEntries()).isEqualTo(2); // the new baseline and last seen
  }

  @Test
  void aRestoredBaselineThatNoLongerDecodesIsDroppedAndTheJobGoesOn() throws Exception {
    // Bytes cut short stand for a record that today's rules refuse.
    restoreFrom(
        new StateWriter<>(
            "baselineRecord",
            Baseline.class,
            r -> Baseline.of(java.util.Arrays.copyOf(r.value, r.value.length / 2))),
        snap("b1", 4, 40));
    feed(snap("b1", 5, 52)); // no baseline left: a first sighting mid-boot, as after a restart
    feed(snap("b1", 6, 60));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(8L);
    assertThat(dead()).isEmpty();
  }

  /** Restores {@link #harness} from the state {@code writer} leaves for the record of {@code s}. */
  private void restoreFrom(StateWriter<?> writer, CounterSnapshot s) throws Exception {
    var earlier =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(writer), RankRecord::key, TypeInformation.of(RankKey.class));
    earlier.open();
    earlier.processElement(
        new StreamRecord<>(RankRecord.of(s, "snapshots", 0, 0), s.getEventTime().toEpochMilli()));
    var checkpoint = earlier.snapshot(1, 1);
    earlier.close();
    harness.close();
    harness = newHarness();
    harness.initializeState(checkpoint);
    harness.open();
  }

  /** Writes one value state per record, as an earlier (or a broken) job left it. */
  private static final class StateWriter<T>
      extends org.apache.flink.streaming.api.functions.KeyedProcessFunction<
          RankKey, RankRecord, SnapshotDelta> {
    private final String name;
    private final Class<T> type;
    private final org.apache.flink.util.function.FunctionWithException<RankRecord, T, Exception>
        value;

    StateWriter(
        String name,
        Class<T> type,
        org.apache.flink.util.function.FunctionWithException<RankRecord, T, Exception> value) {
      this.name = name;
      this.type = type;
      this.value = value;
    }

    @Override
    public void processElement(RankRecord in, Context ctx, Collector<SnapshotDelta> out)
        throws Exception {
      getRuntimeContext()
          .getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>(name, type))
          .update(value.apply(in));
    }
  }

  @Test
  void aRankThatFellSilentLeavesNoStateAndNoTimerBehind() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 20));
    feed(snap("b1", 3, 30));
    assertThat(harness.numKeyedStateEntries()).isEqualTo(2); // baseline and last seen
    assertThat(harness.numEventTimeTimers()).isEqualTo(1); // one timer per rank, not per record

    // The timer set by the first record fires before the timeout since the last one: kept.
    harness.processWatermark(T0 + 1_000 + TTL.toMillis());
    assertThat(harness.numKeyedStateEntries()).isEqualTo(2);
    assertThat(harness.numEventTimeTimers()).isEqualTo(1);

    harness.processWatermark(T0 + 3_000 + TTL.toMillis());
    assertThat(harness.numKeyedStateEntries()).isZero();
    assertThat(harness.numEventTimeTimers()).isZero();

    // Coming back mid-boot after expiry only sets a new baseline: no history dumped in a delta.
    feed(snap("b1", 40, 400));
    feed(snap("b1", 41, 410));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 10L, 10L, 10L);
  }

  @Test
  void twoJobsWithCommunicatorsOfTheSameNameKeepSeparateBaselines() throws Exception {
    feed(snap("b1", 1, 10));
    CounterSnapshot otherJob =
        CounterSnapshot.newBuilder(snap("b9", 1, 1000)).setJob("another-job").build();
    feed(otherJob);
    feed(snap("b1", 2, 20));
    assertThat(out()).extracting(DeltaFunctionTest::calls).containsExactly(10L, 1000L, 10L);
    assertThat(out()).extracting(d -> d.job).containsExactly("test-job", "another-job", "test-job");
    assertThat(dead()).isEmpty();
  }
}
