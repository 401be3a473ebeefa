package io.collscope.flink.delta;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.flink.decode.DeadLetters;
import io.collscope.flink.decode.SourcedSnapshot;
import io.collscope.schema.SnapshotFixtures;
import java.time.Instant;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DeltaFunctionTest {

  private KeyedOneInputStreamOperatorTestHarness<String, SourcedSnapshot, SnapshotDelta> harness;
  private long offset;

  @BeforeEach
  void setUp() throws Exception {
    harness =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(new DeltaFunction()), SourcedSnapshot::key, Types.STRING);
    harness.open();
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
        .setEventTimeMs(Instant.ofEpochMilli(1_000 * seq + (boot.equals("b2") ? 1_000_000 : 0)))
        .setCalls(calls)
        .setBytes(4096 * calls)
        .setWaitCycles(100 * calls)
        .setPeerWaitCycles(List.of(100 * calls, 0L))
        .build();
  }

  private void feed(CounterSnapshot s) throws Exception {
    harness.processElement(
        new StreamRecord<>(
            new SourcedSnapshot(s, "snapshots", 0, offset++), s.getEventTimeMs().toEpochMilli()));
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
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 15L);
    assertThat(out().get(1).waitCycles).isEqualTo(1500);
    assertThat(out().get(1).peerWaitCycles).containsExactly(1500L, 0L);
    assertThat(out().get(1).bytes).isEqualTo(4096 * 15);
  }

  @Test
  void joiningMidBootOnlySetsTheBaseline() throws Exception {
    feed(snap("b1", 7, 1000));
    feed(snap("b1", 8, 1010));
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L);
  }

  @Test
  void duplicatesAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 20));
    feed(snap("b1", 2, 20));
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 10L);
    assertThat(dead()).isEmpty();
  }

  @Test
  void outOfOrderRecordsAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 3, 30));
    feed(snap("b1", 2, 20)); // late: already covered by the 1 -> 3 delta
    feed(snap("b1", 4, 40));
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 20L, 10L);
  }

  @Test
  void aGapIsSpannedByOneDelta() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 5, 50));
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 40L);
    assertThat(out().get(1).eventTimeMs).isEqualTo(5_000);
  }

  @Test
  void aNewBootRestartsTheBaselineAndTheOldBootsStragglersAreDropped() throws Exception {
    feed(snap("b1", 1, 10));
    feed(snap("b1", 2, 500));
    feed(snap("b2", 1, 3)); // emitter restarted: counters start again from zero
    feed(snap("b1", 3, 600)); // late record of the old incarnation
    feed(snap("b2", 2, 8));
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 490L, 3L, 5L);
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
    assertThat(out()).extracting(d -> d.calls).containsExactly(10L, 10L, 20L);
    assertThat(dead())
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.getReason()).isEqualTo("COUNTER_WENT_BACKWARDS");
              assertThat(d.getStage()).isEqualTo("delta");
              assertThat(d.getDetail()).contains("wait_cycles went backwards 2000 -> 5");
              assertThat(d.getOffset()).isEqualTo(2);
              assertThat(d.getRaw().remaining()).isPositive();
            });
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
        .satisfies(d -> assertThat(d.getReason()).isEqualTo("WORLD_SIZE_CHANGED"));
  }
}
