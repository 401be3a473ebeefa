package io.collscope.flink.decode;

import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import java.nio.ByteBuffer;
import java.time.Instant;
import org.apache.flink.util.OutputTag;

/** The dead-letter side output shared by every stage, and how its records are built. */
public final class DeadLetters {

  public static final OutputTag<DeadLetter> TAG = new OutputTag<>("dead-letters") {};

  private DeadLetters() {}

  public static DeadLetter of(
      DeadLetterReason reason,
      String detail,
      Stage stage,
      String topic,
      int partition,
      long offset,
      byte[] key,
      byte[] raw) {
    return DeadLetter.newBuilder()
        .setReason(reason)
        .setDetail(detail)
        .setStage(stage)
        .setSourceTopic(topic == null ? "" : topic)
        .setPartition(partition)
        .setOffset(offset)
        .setKey(key == null ? null : ByteBuffer.wrap(key))
        .setRaw(ByteBuffer.wrap(raw == null ? new byte[0] : raw))
        .setDetectedAt(Instant.now())
        .build();
  }
}
