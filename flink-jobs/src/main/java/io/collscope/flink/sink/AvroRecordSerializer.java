package io.collscope.flink.sink;

import io.collscope.schema.AvroCodec;
import java.nio.charset.StandardCharsets;
import org.apache.avro.specific.SpecificRecord;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Writes a generated Avro record to one topic in collscope's wire format (single-object encoding),
 * keyed by a function of the record.
 */
public final class AvroRecordSerializer<T extends SpecificRecord>
    implements KafkaRecordSerializationSchema<T> {

  /** Serializable key extractor. */
  public interface KeyOf<T> extends Function {
    String key(T record);
  }

  private final String topic;
  private final Class<T> type;
  private final KeyOf<T> keyOf;

  public AvroRecordSerializer(String topic, Class<T> type, KeyOf<T> keyOf) {
    this.topic = topic;
    this.type = type;
    this.keyOf = keyOf;
  }

  @Override
  public ProducerRecord<byte[], byte[]> serialize(
      T element, KafkaSinkContext context, Long timestamp) {
    String key = keyOf.key(element);
    return new ProducerRecord<>(
        topic,
        null,
        timestamp,
        key == null ? null : key.getBytes(StandardCharsets.UTF_8),
        AvroCodec.of(type).encode(element));
  }
}
