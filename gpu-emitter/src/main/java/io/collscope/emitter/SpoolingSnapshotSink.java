package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import io.collscope.schema.Snapshots;
import io.collscope.spool.SpoolLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes snapshots through an on-disk spool ({@link SpoolLog}): the reporter appends to the
 * spool (a local write, never a wait on the network), and one drain thread sends from the spool to
 * Kafka in order, moving the spool's cursor only past records the broker acknowledged. A broker
 * that is down or slow therefore costs disk, not snapshots; when it returns the backlog goes out
 * oldest first, and records per rank stay in order because one thread sends them all.
 *
 * <p>Delivery is at least once: a batch that failed part-way is sent again from its first record,
 * and a crash between an acknowledgement and the cursor's update re-sends after restart. The job
 * drops a snapshot whose (rank, boot, sequence) it has already seen, so the topic's duplicates
 * never reach a window. When the spool is full its oldest records are dropped and counted; every
 * record carries the running count in the header {@value #DROPPED_HEADER} (and {@value
 * #TORN_HEADER} for torn frames skipped after a crash), so the loss is itself published.
 */
public final class SpoolingSnapshotSink implements SnapshotSink {

  private static final Logger LOG = LoggerFactory.getLogger(SpoolingSnapshotSink.class);

  public static final String DROPPED_HEADER = "collscope.spool.dropped";
  public static final String TORN_HEADER = "collscope.spool.torn";

  /** Records sent per batch before waiting for their acknowledgements. */
  static final int BATCH = 256;

  private final SpoolLog spool;
  private final Producer<byte[], byte[]> producer;
  private final String topic;
  private final Thread drainer;
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong spoolErrors = new AtomicLong();
  private final AtomicLong outages = new AtomicLong();
  private volatile boolean closing;
  private volatile boolean stopDraining;

  /** In an outage: no acknowledgement for {@link #STALL}. Drain thread only. */
  private boolean stalled;

  public SpoolingSnapshotSink(SpoolLog spool, Producer<byte[], byte[]> producer, String topic) {
    this.spool = spool;
    this.producer = producer;
    this.topic = topic;
    this.drainer = new Thread(this::drain, "collscope-spool-drain");
    drainer.setDaemon(true);
    drainer.start();
  }

  @Override
  public void send(CounterSnapshot s) {
    byte[] key = KafkaSnapshotSink.key(s);
    byte[] value = Snapshots.encode(s);
    ByteBuffer b = ByteBuffer.allocate(8 + 4 + key.length + value.length);
    b.putLong(s.getEventTime().toEpochMilli()).putInt(key.length).put(key).put(value);
    try {
      spool.append(b.array());
    } catch (IOException e) {
      // A full or failing disk: this snapshot is lost, counted; the next one is tried again.
      spoolErrors.incrementAndGet();
      LOG.error("spool {}: cannot append: {}", spool.dir(), e.toString());
    }
  }

  private void drain() {
    int failures = 0; // in a row
    while (!stopDraining) {
      SpoolLog.Batch batch;
      try {
        batch = spool.peek(BATCH, 200);
      } catch (InterruptedException e) {
        return;
      } catch (IOException | RuntimeException e) {
        LOG.error("spool {}: cannot read: {}", spool.dir(), e.toString());
        sleep(retryDelay(++failures));
        continue;
      }
      if (batch.records().isEmpty()) continue;
      if (sendAll(batch.records())) {
        try {
          spool.commit(batch);
        } catch (IOException e) {
          LOG.error("spool {}: cannot move the cursor: {}", spool.dir(), e.toString());
        }
        delivered.addAndGet(batch.records().size());
        failures = 0;
      } else {
        sleep(retryDelay(++failures));
      }
    }
  }

  /** 100 ms, doubling to at most 2 s: a returning broker is found within 2 s. */
  static Duration retryDelay(int failures) {
    return Duration.ofMillis(Math.min(2000, 100L << Math.min(failures - 1, 5)));
  }

  /**
   * Sends a batch in order and waits for every acknowledgement; false if any failed. The producer
   * retries on its own until its delivery timeout (30 s), so a short outage ends in a late
   * acknowledgement rather than a failure; a wait of {@link #STALL} already counts as an outage.
   */
  private boolean sendAll(List<byte[]> records) {
    List<Future<RecordMetadata>> acks = new ArrayList<>(records.size());
    try {
      // send() itself can block through an outage (waiting for the partition's metadata, up to
      // max.block.ms) and return once the broker is back: a call that took longer than STALL
      // counts too, or such an outage would go uncounted.
      long last = System.nanoTime();
      for (byte[] r : records) {
        acks.add(producer.send(record(r)));
        long now = System.nanoTime();
        if (now - last > STALL.toNanos()) stalled();
        last = now;
      }
      for (Future<RecordMetadata> f : acks) {
        while (true) {
          try {
            f.get(STALL.toMillis(), TimeUnit.MILLISECONDS);
            break;
          } catch (java.util.concurrent.TimeoutException e) {
            stalled();
          }
        }
      }
      if (stalled) {
        stalled = false;
        LOG.info("broker acknowledging again; {} snapshots spooled", spool.pending());
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopDraining = true;
      return false;
    } catch (Exception e) {
      LOG.debug("batch not delivered: {}", e.toString());
      stalled();
      return false;
    }
  }

  /** How long without an acknowledgement counts as an outage. */
  static final Duration STALL = Duration.ofSeconds(2);

  private void stalled() {
    if (stalled) return;
    stalled = true;
    outages.incrementAndGet();
    LOG.warn("broker not acknowledging {}: spooling to {} until it does", topic, spool.dir());
  }

  private ProducerRecord<byte[], byte[]> record(byte[] spooled) {
    ByteBuffer b = ByteBuffer.wrap(spooled);
    long eventTime = b.getLong();
    byte[] key = new byte[b.getInt()];
    b.get(key);
    byte[] value = new byte[b.remaining()];
    b.get(value);
    RecordHeaders h = new RecordHeaders();
    h.add(DROPPED_HEADER, Long.toString(dropped()).getBytes(StandardCharsets.US_ASCII));
    h.add(TORN_HEADER, Long.toString(spool.tornRecords()).getBytes(StandardCharsets.US_ASCII));
    return new ProducerRecord<>(topic, null, eventTime, key, value, h);
  }

  /**
   * Waits until the spool is drained or {@code timeout} passes; true when everything appended so
   * far was delivered.
   */
  public boolean awaitDrained(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (spool.pending() > 0 && System.nanoTime() < deadline) Thread.sleep(20);
    return spool.pending() == 0;
  }

  /** Flushes the spool to disk (the broker may be down: this does not wait for delivery). */
  @Override
  public void flush() {
    try {
      spool.sync();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Snapshots lost: dropped from a full spool, or not appended (disk error). */
  @Override
  public long failed() {
    return dropped() + spoolErrors.get();
  }

  public long dropped() {
    return spool.droppedRecords();
  }

  public long torn() {
    return spool.tornRecords();
  }

  /** Snapshots in the spool not yet acknowledged by the broker. */
  public long pending() {
    return spool.pending();
  }

  public long delivered() {
    return delivered.get();
  }

  /** Times delivery failed after having worked (or from the start). */
  public long outages() {
    return outages.get();
  }

  public java.nio.file.Path dir() {
    return spool.dir();
  }

  /** Stops draining (what is left stays in the spool for the next process) and closes. */
  @Override
  public void close() {
    if (closing) return;
    closing = true;
    stopDraining = true;
    drainer.interrupt();
    try {
      drainer.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    producer.close(Duration.ofSeconds(5));
    try {
      spool.close();
    } catch (IOException e) {
      LOG.error("spool {}: close: {}", spool.dir(), e.toString());
    }
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
