package io.collscope.broker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The one helper that reads a topic from the beginning (read_committed) until a condition holds or
 * a timeout passes. Used by tests and by {@code collscope tail}.
 */
public final class TopicDrainer {

  private TopicDrainer() {}

  public static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, boolean fromBeginning) {
    return consumer(bootstrap, fromBeginning, Map.of());
  }

  /**
   * A read_committed consumer of its own group; {@code client} adds standard client properties
   * (TLS, SASL: a {@code --kafka-config} file's), which win over these defaults.
   */
  public static KafkaConsumer<byte[], byte[]> consumer(
      String bootstrap, boolean fromBeginning, Map<String, ?> client) {
    Map<String, Object> conf =
        new java.util.HashMap<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG,
                "collscope-drain-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                fromBeginning ? "earliest" : "latest",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                false,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"));
    conf.putAll(client);
    return new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /**
   * Reads {@code topic} from the beginning until {@code done} accepts the records so far, or {@code
   * timeout} passes; returns everything read.
   */
  public static List<ConsumerRecord<byte[], byte[]>> drain(
      String bootstrap,
      String topic,
      Duration timeout,
      Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
    return drain(bootstrap, Map.of(), topic, timeout, done);
  }

  /** {@link #drain} with standard client properties (TLS, SASL). */
  public static List<ConsumerRecord<byte[], byte[]>> drain(
      String bootstrap,
      Map<String, ?> client,
      String topic,
      Duration timeout,
      Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, true, client)) {
      c.subscribe(List.of(topic));
      while (System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          out.add(r);
        }
        if (done.test(out)) {
          break;
        }
      }
    }
    return out;
  }

  /**
   * Every record of {@code topic} from the beginning up to its end offsets as they stand when
   * called (read_committed: up to the last stable offset), however many there are: what counts
   * duplicates must not stop at the count it expects.
   *
   * @throws IllegalStateException when the end is not reached within {@code timeout}
   */
  public static List<ConsumerRecord<byte[], byte[]>> drainToEnd(
      String bootstrap, String topic, Duration timeout) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, true, Map.of())) {
      List<org.apache.kafka.common.TopicPartition> parts = new ArrayList<>();
      for (var p : c.partitionsFor(topic, timeout)) {
        parts.add(new org.apache.kafka.common.TopicPartition(topic, p.partition()));
      }
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<org.apache.kafka.common.TopicPartition, Long> end = c.endOffsets(parts, timeout);
      while (true) {
        boolean reached = true;
        for (var tp : parts) reached &= c.position(tp, timeout) >= end.get(tp);
        if (reached) return out;
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              topic
                  + ": end offsets "
                  + end
                  + " not reached in "
                  + timeout
                  + "; read "
                  + out.size());
        }
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
      }
    }
  }

  /** Reads until at least {@code count} records arrived or the timeout passed. */
  public static List<ConsumerRecord<byte[], byte[]>> drain(
      String bootstrap, String topic, int count, Duration timeout) {
    return drain(bootstrap, topic, timeout, l -> l.size() >= count);
  }
}
