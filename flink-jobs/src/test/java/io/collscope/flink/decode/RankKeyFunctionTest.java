package io.collscope.flink.decode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.flink.source.RawRecord;
import io.collscope.model.RankKey;
import io.collscope.schema.SnapshotFixtures;
import io.collscope.schema.Snapshots;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.streaming.api.operators.ProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RankKeyFunctionTest {

  private OneInputStreamOperatorTestHarness<RawRecord, RankRecord> harness;
  private long offset;

  @BeforeEach
  void setUp() throws Exception {
    harness = new OneInputStreamOperatorTestHarness<>(new ProcessOperator<>(new RankKeyFunction()));
    harness.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  private static CounterSnapshot snap(String cluster, String communicator, int rank) {
    return SnapshotFixtures.snapshot(communicator, rank, 1024)
        .setCluster(cluster)
        .setEventTime(Instant.now())
        .build();
  }

  private void feed(byte[] value, long timestamp) throws Exception {
    RawRecord r = new RawRecord("snapshots", 3, offset++, timestamp, "k".getBytes(), value);
    harness.processElement(new StreamRecord<>(r, timestamp));
  }

  private List<DeadLetter> dead() {
    return harness.getSideOutput(DeadLetters.TAG) == null
        ? List.of()
        : harness.getSideOutput(DeadLetters.TAG).stream().map(StreamRecord::getValue).toList();
  }

  @Test
  void recordsOfManyCommunicatorsAreKeyedByTheRankTheyCarryAndKeepTheirBytes() throws Exception {
    long now = System.currentTimeMillis();
    List<CounterSnapshot> in =
        List.of(snap("c1", "tp0", 3), snap("c1", "dp/0", 1000), snap("c/2", "tp0", 3));
    for (CounterSnapshot s : in) feed(Snapshots.encode(s), now);

    List<RankRecord> out = harness.extractOutputValues();
    assertThat(out)
        .extracting(RankRecord::key)
        .containsExactlyElementsOf(in.stream().map(RankKey::of).toList());
    assertThat(out.get(1).value).isEqualTo(Snapshots.encode(in.get(1)));
    assertThat(out)
        .extracting(r -> r.partition, r -> r.offset)
        .containsExactly(tuple(3, 0L), tuple(3, 1L), tuple(3, 2L));
    assertThat(dead()).isEmpty();
  }

  @Test
  void whatHasNoReadableKeyIsADeadLetterWithTheDecodersReason() throws Exception {
    long now = System.currentTimeMillis();
    byte[] good = Snapshots.encode(snap("c", "comm", 1));
    byte[] unknownVersion = good.clone();
    unknownVersion[4] ^= 0x7f;
    feed(new byte[0], now);
    feed("not avro".getBytes(), now);
    feed(unknownVersion, now);
    feed(Arrays.copyOf(good, 14), now); // cut inside the key
    feed(good, 0); // stamped 1970

    assertThat(harness.extractOutputValues()).isEmpty();
    assertThat(dead())
        .extracting(DeadLetter::getReason)
        .containsExactly(
            DeadLetterReason.EMPTY,
            DeadLetterReason.BAD_HEADER,
            DeadLetterReason.UNKNOWN_FINGERPRINT,
            DeadLetterReason.CORRUPT_BODY,
            DeadLetterReason.INVALID);
    assertThat(dead()).allMatch(d -> d.getStage() == Stage.DECODE);
    assertThat(dead().get(4).getDetail()).contains("record timestamp 0");
    assertThat(dead().get(2).getRaw()).isEqualTo(ByteBuffer.wrap(unknownVersion));
    assertThat(dead()).extracting(DeadLetter::getOffset).containsExactly(0L, 1L, 2L, 3L, 4L);
  }

  @Test
  void aRecordWhoseKeyReadsIsRoutedEvenIfItsBodyIsBrokenForTheDeltaToDeadLetter() throws Exception {
    byte[] good = Snapshots.encode(snap("c", "comm", 5));
    byte[] torn = Arrays.copyOf(good, good.length - 20);
    feed(torn, System.currentTimeMillis());
    assertThat(harness.extractOutputValues())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.key()).isEqualTo(new RankKey("c", "test-job", "comm", 5));
              assertThat(r.value).isEqualTo(torn);
            });
    assertThat(dead()).isEmpty();
  }
}
