package io.collscope.load;

import java.io.PrintStream;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes a {@link LoadGenerator}'s rounds to a Kafka topic, paced or as fast as the broker takes
 * them.
 *
 * <p>Producer settings, chosen for throughput of many small records (about 0.3–1 KB each) on one
 * co-located broker, each overridable: {@code compression.type=lz4} (the emitter's choice: cheap on
 * the CPU the broker shares, and the per-peer varints compress about 3:1), {@code linger.ms=20} and
 * {@code batch.size=512 KiB} (a round of 100,000 records fills batches before the linger ends, so
 * the linger only caps the delay of small loads), {@code acks=1} without idempotence (a load
 * generator has nothing to retry into order; the emitter itself keeps {@code acks=all} and
 * idempotence), {@code buffer.memory=128 MiB} so that sending blocks only when the broker falls
 * behind: the backpressure that sets the "as fast as the broker takes it" rate.
 */
public final class LoadProducer implements AutoCloseable {

  /** What a run published. */
  public record Result(long rounds, long records, long bytes, long failed, double wallSeconds) {
    public String summary() {
      return String.format(
          Locale.ROOT,
          "load: %d rounds, %d records (%d failed), %.1f MB, %.0f bytes/record, %.1f s, %.0f records/s",
          rounds,
          records,
          failed,
          bytes / 1e6,
          records == 0 ? 0.0 : (double) bytes / records,
          wallSeconds,
          records / Math.max(1e-9, wallSeconds));
    }
  }

  private final KafkaProducer<byte[], byte[]> producer;
  private final String topic;
  private final AtomicLong failed = new AtomicLong();

  /** {@code client}: the connection's settings (TLS, SASL) from {@code --kafka-config}. */
  public LoadProducer(
      String bootstrap,
      io.collscope.kafka.KafkaClientConfig client,
      String topic,
      Map<String, String> overrides) {
    this.topic = topic;
    Map<String, Object> p = new HashMap<>(client.applyTo(defaults(bootstrap)));
    p.putAll(overrides);
    this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** The load's producer settings (see the class comment). */
  public static Map<String, Object> defaults(String bootstrap) {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "collscope-load");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(512 << 10));
    p.put(ProducerConfig.ACKS_CONFIG, "1");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
    p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(128L << 20));
    p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(4 << 20));
    return p;
  }

  /**
   * Sends {@code rounds} rounds; with {@code acceleration} > 0 round j leaves no earlier than j ×
   * interval / acceleration after the first, else at once. Progress every 5 s to {@code progress}.
   */
  public Result run(LoadGenerator gen, long rounds, double acceleration, PrintStream progress)
      throws InterruptedException {
    if (acceleration > 0) {
      // Paced: round 1 is stamped now, so event time and the wall clock start together.
      gen.startAt(java.time.Instant.now());
    }
    long t0 = System.nanoTime();
    long[] records = {0};
    long[] bytes = {0};
    long nextReport = t0 + 5_000_000_000L;
    long first = gen.roundTimeMs(1);
    for (long j = 1; j <= rounds; j++) {
      if (acceleration > 0) {
        long dueNanos = t0 + (long) ((gen.roundTimeMs(j) - first) * 1e6 / acceleration);
        long wait = dueNanos - System.nanoTime();
        if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      }
      gen.nextRound(
          (key, value, ts) -> {
            records[0]++;
            bytes[0] += value.length;
            producer.send(
                new ProducerRecord<>(topic, null, ts, key, value),
                (md, e) -> {
                  if (e != null) failed.incrementAndGet();
                });
          });
      long now = System.nanoTime();
      if (now >= nextReport && progress != null) {
        progress.printf(
            Locale.ROOT,
            "load: round %d/%d, %d records, %.0f records/s%n",
            j,
            rounds,
            records[0],
            records[0] / ((now - t0) / 1e9));
        nextReport = now + 5_000_000_000L;
      }
    }
    producer.flush();
    return new Result(rounds, records[0], bytes[0], failed.get(), (System.nanoTime() - t0) / 1e9);
  }

  @Override
  public void close() {
    producer.close();
  }
}
