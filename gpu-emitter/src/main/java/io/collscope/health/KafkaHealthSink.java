package io.collscope.health;

import io.collscope.avro.GpuHealth;
import io.collscope.kafka.KafkaClientConfig;
import io.collscope.schema.AvroCodec;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes {@link GpuHealth} records to their own topic, keyed like the rank's snapshots ({@code
 * cluster/job/communicator/rank}), stamped with the read's instant. Best effort, unlike the
 * snapshots: no spool, since a health read left behind in an outage describes a moment that has
 * passed (the job joins reads to the window they were taken in); failures are counted and logged
 * once.
 */
public final class KafkaHealthSink implements Consumer<GpuHealth>, AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(KafkaHealthSink.class);

  private final KafkaProducer<byte[], byte[]> producer;
  private final String topic;
  private final AvroCodec<GpuHealth> codec = AvroCodec.of(GpuHealth.class);
  private final java.util.concurrent.atomic.AtomicLong failed =
      new java.util.concurrent.atomic.AtomicLong();

  private KafkaHealthSink(KafkaProducer<byte[], byte[]> producer, String topic) {
    this.producer = producer;
    this.topic = topic;
  }

  /** Creates the topic if needed (as the snapshot sink does) and connects. */
  public static KafkaHealthSink connect(
      String bootstrap, KafkaClientConfig client, String topic, int partitions, Duration timeout)
      throws io.collscope.kafka.BrokerUnreachableException {
    io.collscope.emitter.KafkaSnapshotSink.ensureTopic(
        bootstrap, client, topic, partitions, timeout);
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "1");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
    p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout.toMillis());
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "collscope-health");
    return new KafkaHealthSink(
        new KafkaProducer<>(
            client.applyTo(p), new ByteArraySerializer(), new ByteArraySerializer()),
        topic);
  }

  @Override
  public void accept(GpuHealth h) {
    String key = h.getCluster() + "/" + h.getJob() + "/" + h.getCommunicator() + "/" + h.getRank();
    producer.send(
        new ProducerRecord<>(
            topic,
            null,
            h.getEventTime().toEpochMilli(),
            key.getBytes(java.nio.charset.StandardCharsets.UTF_8),
            codec.encode(h)),
        (md, e) -> {
          if (e != null && failed.getAndIncrement() == 0) {
            LOG.warn("GPU health not delivered to {} (logged once): {}", topic, e.toString());
          }
        });
  }

  public long failed() {
    return failed.get();
  }

  public void flush() {
    producer.flush();
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(5));
  }
}
