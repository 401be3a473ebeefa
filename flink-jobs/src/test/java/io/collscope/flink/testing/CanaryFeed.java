package io.collscope.flink.testing;

import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.fuzz.FuzzedRecords;
import io.collscope.schema.Snapshots;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A two-rank communicator whose snapshots are known exactly: every {@code interval} both ranks
 * publish {@link FuzzedRecords#canary} at the next sequence, stamped with the wall clock, and the
 * feed remembers each acknowledged record's event time. From those, a test knows which (rank,
 * window) keys the job must produce, each once, whatever was killed in between.
 */
public final class CanaryFeed implements AutoCloseable {

  public static final int RANKS = 2;

  private final KafkaProducer<byte[], byte[]> producer;
  private final String topic;
  private final String communicator;
  private final Duration interval;
  private final List<Long> eventTimes = new CopyOnWriteArrayList<>();
  private final java.util.concurrent.atomic.AtomicLong sent =
      new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong acknowledged =
      new java.util.concurrent.atomic.AtomicLong();
  private final Thread thread;
  private volatile boolean running = true;
  private volatile Exception failure;

  public CanaryFeed(String bootstrap, String topic, String communicator, Duration interval) {
    this.topic = topic;
    this.communicator = communicator;
    this.interval = interval;
    this.producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.ACKS_CONFIG,
                "all"),
            new ByteArraySerializer(),
            new ByteArraySerializer());
    this.thread = new Thread(this::run, "canary-feed-" + communicator);
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    long seq = 0;
    try {
      while (running) {
        seq++;
        long t = System.currentTimeMillis();
        for (int rank = 0; rank < RANKS; rank++) {
          CounterSnapshot s = FuzzedRecords.canary(rank, seq, t);
          s.setCluster("it");
          s.setJob("it");
          s.setCommunicator(communicator);
          s.setBootId("boot-" + communicator);
          sent.incrementAndGet();
          producer
              .send(
                  new ProducerRecord<>(
                      topic, null, t, KafkaSnapshotSink.key(s), Snapshots.encode(s)))
              .get(30, TimeUnit.SECONDS);
          acknowledged.incrementAndGet();
        }
        eventTimes.add(t);
        Thread.sleep(interval.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      failure = e;
    }
  }

  public String communicator() {
    return communicator;
  }

  /** The producer's own count of records it handed to {@code send}. */
  public long sent() {
    return sent.get();
  }

  /** The producer's own count of records the broker acknowledged (acks=all). */
  public long acknowledged() {
    return acknowledged.get();
  }

  /** The boot id every snapshot of the feed carries. */
  public String bootId() {
    return "boot-" + communicator;
  }

  /** Event times of the snapshots every rank published, in order. */
  public List<Long> eventTimes() {
    if (failure != null) throw new AssertionError("the feed failed", failure);
    return List.copyOf(eventTimes);
  }

  /** Stops publishing; what was published stays. */
  public void stop() throws InterruptedException {
    running = false;
    thread.join(TimeUnit.SECONDS.toMillis(40));
    if (failure != null) throw new AssertionError("the feed failed", failure);
  }

  @Override
  public void close() throws InterruptedException {
    stop();
    producer.close(Duration.ofSeconds(5));
  }
}
