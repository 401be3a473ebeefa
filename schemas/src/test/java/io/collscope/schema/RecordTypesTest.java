package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import java.nio.ByteBuffer;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class RecordTypesTest {

  @Test
  void recognisesEachTypeByItsFingerprint() throws Exception {
    CounterSnapshot s = SnapshotFixtures.snapshot("c", 0, 2).build();
    assertThat(RecordTypes.decodeAny(Snapshots.encode(s))).isEqualTo(s);
    DeadLetter d =
        DeadLetter.newBuilder()
            .setReason(DeadLetterReason.BAD_HEADER)
            .setDetail("x \"quoted\"\n")
            .setStage(Stage.DECODE)
            .setSourceTopic("t")
            .setPartition(1)
            .setOffset(2)
            .setKey(null)
            .setRaw(ByteBuffer.wrap(new byte[] {1, 2, 3}))
            .setDetectedAt(Instant.ofEpochMilli(5))
            .build();
    assertThat(RecordTypes.decodeAny(AvroCodec.of(DeadLetter.class).encode(d))).isEqualTo(d);
    assertThat(RecordJson.toJson(d))
        .isEqualTo(
            "{\"reason\":\"BAD_HEADER\",\"detail\":\"x \\\"quoted\\\"\\n\",\"stage\":\"DECODE\","
                + "\"source_topic\":\"t\",\"partition\":1,\"offset\":2,\"key\":null,"
                + "\"raw\":\"AQID\",\"detected_at\":5}");
  }

  @Test
  void garbageIsStillATypedError() {
    assertThatThrownBy(() -> RecordTypes.decodeAny(new byte[] {1, 2}))
        .isInstanceOf(DecodeException.class);
    assertThatThrownBy(() -> RecordTypes.decodeAny("0123456789abcdef".getBytes()))
        .isInstanceOf(DecodeException.class)
        .hasMessageContaining("BAD_HEADER");
  }
}
