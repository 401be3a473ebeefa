package io.collscope.exporter;

import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.schema.DecodeException;
import io.collscope.schema.RecordTypes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the job's output topics into an {@link ExporterState}: rank windows, attributions, alerts
 * and dead letters, each record decoded by the schema fingerprint in its header (any collscope type
 * on any of them is taken for what it is).
 *
 * <p>It assigns itself every partition of the topics (no consumer group: it commits nothing and
 * needs no rebalance), and finds topics that do not exist yet, or grew partitions, by listing them
 * again every few seconds. Where it starts: the alerts topic from its beginning (a firing alert
 * fired long ago and its state has to be rebuilt), the others at the records written in the last
 * series TTL (older ones would expire at once).
 */
public final class OutputTopicReader {

  private static final Logger LOG = LoggerFactory.getLogger(OutputTopicReader.class);

  /** How often topics are listed while some are still missing. */
  static final Duration DISCOVER_MISSING_EVERY = Duration.ofSeconds(2);

  /** How often topics are listed once all were found (new partitions). */
  static final Duration DISCOVER_EVERY = Duration.ofSeconds(60);

  static final Duration POLL = Duration.ofMillis(200);

  /** Undecodable records logged one by one; after that every {@link #LOG_EVERY}th. */
  static final int LOG_FIRST = 10;

  static final int LOG_EVERY = 1000;

  /** The four output topics of the attribution job. */
  public record Topics(String rankWindows, String attributions, String alerts, String deadLetters) {

    public List<String> all() {
      return List.of(rankWindows, attributions, alerts, deadLetters);
    }
  }

  private final ExporterState state;
  private final Topics topics;
  private final Set<TopicPartition> assigned = new HashSet<>();
  private Instant nextDiscovery = Instant.MIN;
  private long undecodable;
  private volatile boolean stop;
  private volatile Consumer<?, ?> running;

  public OutputTopicReader(ExporterState state, Topics topics) {
    this.state = state;
    this.topics = topics;
  }

  /** A consumer for {@link #run}: read_committed (the job's sinks are transactional), no group. */
  public static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
    return consumer(bootstrap, Map.of());
  }

  /** {@link #consumer} with standard client properties (TLS, SASL), which win over these. */
  public static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Map<String, ?> client) {
    Map<String, Object> conf =
        new java.util.HashMap<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                false,
                ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG,
                false,
                ConsumerConfig.CLIENT_ID_CONFIG,
                "collscope-exporter"));
    conf.putAll(client);
    return new KafkaConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /**
   * Fails unless the broker answers a topic listing within {@code timeout}: the exporter's start
   * check, so that a wrong {@code --bootstrap} is an error rather than an empty page of metrics.
   */
  public static void checkReachable(String bootstrap, Duration timeout)
      throws BrokerUnreachableException {
    checkReachable(bootstrap, Map.of(), timeout);
  }

  /** {@link #checkReachable} with standard client properties. */
  public static void checkReachable(String bootstrap, Map<String, ?> client, Duration timeout)
      throws BrokerUnreachableException {
    KafkaConsumer<byte[], byte[]> c = null;
    try {
      c = consumer(bootstrap, client);
      c.listTopics(timeout);
    } catch (KafkaException e) {
      throw new BrokerUnreachableException(
          "cannot reach Kafka at " + bootstrap + " within " + timeout.toMillis() + " ms", e);
    } finally {
      // Nothing to commit or leave: do not wait on a broker that may not be there.
      if (c != null) c.close(CloseOptions.timeout(Duration.ZERO));
    }
  }

  /** Reads until {@link #stop()}; expires idle series between polls. */
  public void run(Consumer<byte[], byte[]> consumer) {
    running = consumer;
    try {
      while (!stop) {
        discover(consumer);
        if (assigned.isEmpty()) {
          sleep(POLL);
          continue;
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) accept(r);
        recordLag(consumer);
        state.expire();
      }
    } catch (WakeupException e) {
      if (!stop) throw e;
    } finally {
      running = null;
    }
  }

  /** Decodes one record into the state; an undecodable one is counted and skipped. */
  void accept(ConsumerRecord<byte[], byte[]> r) {
    try {
      state.accept(RecordTypes.decodeAny(r.value()), r.timestamp());
      state.read(r.topic(), true);
    } catch (DecodeException e) {
      state.read(r.topic(), false);
      if (++undecodable <= LOG_FIRST || undecodable % LOG_EVERY == 0) {
        LOG.warn(
            "{}/{}@{}: not a collscope record, skipped ({} so far): {}",
            r.topic(),
            r.partition(),
            r.offset(),
            undecodable,
            e.getMessage());
      }
    }
  }

  private void discover(Consumer<byte[], byte[]> consumer) {
    Instant now = state.clock().instant();
    if (now.isBefore(nextDiscovery)) return;
    Map<String, List<PartitionInfo>> listed;
    try {
      listed = consumer.listTopics(Duration.ofSeconds(5));
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
      LOG.warn("listing topics failed, trying again: {}", e.toString());
      nextDiscovery = now.plus(DISCOVER_MISSING_EVERY);
      return;
    }
    List<TopicPartition> fresh = new ArrayList<>();
    boolean missing = false;
    for (String topic : topics.all()) {
      List<PartitionInfo> parts = listed.get(topic);
      if (parts == null || parts.isEmpty()) {
        missing = true;
        continue;
      }
      for (PartitionInfo p : parts) {
        TopicPartition tp = new TopicPartition(topic, p.partition());
        if (!assigned.contains(tp)) fresh.add(tp);
      }
    }
    nextDiscovery = now.plus(missing ? DISCOVER_MISSING_EVERY : DISCOVER_EVERY);
    if (fresh.isEmpty()) return;
    assigned.addAll(fresh);
    consumer.assign(new ArrayList<>(assigned));
    seekToStart(consumer, fresh, now);
    LOG.info("reading {}", fresh);
  }

  /**
   * Alerts from the beginning; the other topics from the first record written within the TTL, or
   * their end when there is none.
   */
  private void seekToStart(
      Consumer<byte[], byte[]> consumer, List<TopicPartition> parts, Instant now) {
    List<TopicPartition> fromBeginning = new ArrayList<>();
    Map<TopicPartition, Long> since = new HashMap<>();
    long sinceMs = now.minus(state.ttl()).toEpochMilli();
    for (TopicPartition tp : parts) {
      if (tp.topic().equals(topics.alerts())) fromBeginning.add(tp);
      else since.put(tp, sinceMs);
    }
    if (!fromBeginning.isEmpty()) consumer.seekToBeginning(fromBeginning);
    if (since.isEmpty()) return;
    List<TopicPartition> toEnd = new ArrayList<>();
    for (Map.Entry<TopicPartition, OffsetAndTimestamp> e :
        consumer.offsetsForTimes(since).entrySet()) {
      if (e.getValue() == null) toEnd.add(e.getKey());
      else consumer.seek(e.getKey(), e.getValue().offset());
    }
    if (!toEnd.isEmpty()) consumer.seekToEnd(toEnd);
  }

  private void recordLag(Consumer<byte[], byte[]> consumer) {
    Map<String, Long> byTopic = new HashMap<>();
    for (TopicPartition tp : assigned) {
      OptionalLong lag = consumer.currentLag(tp);
      if (lag.isPresent()) byTopic.merge(tp.topic(), lag.getAsLong(), Long::sum);
    }
    byTopic.forEach(state::consumerLag);
  }

  /** Makes {@link #run} return soon (from any thread). */
  public void stop() {
    stop = true;
    Consumer<?, ?> c = running;
    if (c != null) c.wakeup();
  }

  private void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stop = true;
    }
  }
}
