package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.kafka.KafkaClientConfig;
import io.collscope.model.RankKey;
import io.collscope.schema.Snapshots;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes snapshots to Kafka: key {@code cluster/job/communicator/rank}, value Avro single-object
 * encoding, record timestamp = event time. Idempotent producer with acks=all and lz4 compression,
 * so retries never duplicate and records per key stay in order.
 */
public final class KafkaSnapshotSink implements SnapshotSink {

  private static final Logger LOG = LoggerFactory.getLogger(KafkaSnapshotSink.class);

  private final KafkaProducer<byte[], byte[]> producer;
  private final String topic;
  private final AtomicLong failed = new AtomicLong();
  private final AtomicReference<Exception> lastError = new AtomicReference<>();

  private KafkaSnapshotSink(KafkaProducer<byte[], byte[]> producer, String topic) {
    this.producer = producer;
    this.topic = topic;
  }

  /**
   * Connects, checking within {@code timeout} that the broker answers and the topic exists
   * (creating it with {@code partitions} if not).
   *
   * @throws BrokerUnreachableException when no broker answers within the timeout
   */
  public static KafkaSnapshotSink connect(
      String bootstrap, String topic, int partitions, Duration timeout)
      throws BrokerUnreachableException {
    return connect(bootstrap, KafkaClientConfig.none(), topic, partitions, timeout);
  }

  /** {@link #connect} with the client properties of {@code --kafka-config} (TLS, SASL). */
  public static KafkaSnapshotSink connect(
      String bootstrap, KafkaClientConfig client, String topic, int partitions, Duration timeout)
      throws BrokerUnreachableException {
    ensureTopic(bootstrap, client, topic, partitions, timeout);
    return new KafkaSnapshotSink(producer(bootstrap, client, timeout), topic);
  }

  /** The emitters' producer: idempotent, acks=all, lz4. */
  static KafkaProducer<byte[], byte[]> producer(
      String bootstrap, KafkaClientConfig client, Duration timeout) {
    Map<String, Object> p = new java.util.HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
    p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout.toMillis());
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "collscope-emitter");
    // Reconnect quickly to a returning broker (the default backs off to 1 s already; keep it so),
    // and give up on a batch after 30 s instead of 2 minutes: the spool keeps it and resends.
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
    return new KafkaProducer<>(
        client.applyTo(p), new ByteArraySerializer(), new ByteArraySerializer());
  }

  /**
   * Connects as {@link #connect} does (the broker must answer at start: a wrong address is an
   * error, not an outage), then publishes through a spool in {@code spoolDir} holding at most
   * {@code spoolBytes}: an outage later on is spooled, not dropped.
   */
  public static SpoolingSnapshotSink connectSpooled(
      String bootstrap,
      String topic,
      int partitions,
      Duration timeout,
      java.nio.file.Path spoolDir,
      long spoolBytes)
      throws BrokerUnreachableException, java.io.IOException {
    return connectSpooled(
        bootstrap, KafkaClientConfig.none(), topic, partitions, timeout, spoolDir, spoolBytes);
  }

  /** {@link #connectSpooled} with the client properties of {@code --kafka-config}. */
  public static SpoolingSnapshotSink connectSpooled(
      String bootstrap,
      KafkaClientConfig client,
      String topic,
      int partitions,
      Duration timeout,
      java.nio.file.Path spoolDir,
      long spoolBytes)
      throws BrokerUnreachableException, java.io.IOException {
    ensureTopic(bootstrap, client, topic, partitions, timeout);
    io.collscope.spool.SpoolLog spool =
        io.collscope.spool.SpoolLog.open(
            spoolDir, spoolBytes, Math.max(64 << 10, Math.min(16 << 20, spoolBytes / 16)));
    return new SpoolingSnapshotSink(spool, producer(bootstrap, client, timeout), topic);
  }

  /**
   * Checks that the broker answers and accepts this client, and that the topic exists, creating it
   * with {@code partitions} if not (a client allowed only to write it never needs to create it).
   */
  public static void ensureTopic(
      String bootstrap, KafkaClientConfig client, String topic, int partitions, Duration timeout)
      throws BrokerUnreachableException {
    Map<String, Object> conf =
        client.applyTo(
            Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis()));
    try (Admin admin = Admin.create(conf)) {
      try {
        admin.describeCluster().clusterId().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException | ExecutionException e) {
        throw new BrokerUnreachableException(refusal(bootstrap, client, timeout, e), e);
      }
      try {
        if (admin
            .describeTopics(List.of(topic))
            .allTopicNames()
            .get(timeout.toMillis(), TimeUnit.MILLISECONDS)
            .containsKey(topic)) {
          return;
        }
      } catch (ExecutionException e) {
        if (e.getCause() instanceof AuthorizationException) {
          throw new BrokerUnreachableException(
              "not authorised to use topic " + topic + ": " + e.getCause().getMessage(), e);
        }
        // UnknownTopicOrPartitionException: create it below
      } catch (TimeoutException e) {
        throw new BrokerUnreachableException("describing topic " + topic + " timed out", e);
      }
      try {
        admin
            .createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
            .all()
            .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        LOG.info("created topic {} with {} partitions", topic, partitions);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw new BrokerUnreachableException(
              "cannot create topic " + topic + ": " + e.getCause(), e);
        }
      } catch (TimeoutException e) {
        throw new BrokerUnreachableException("creating topic " + topic + " timed out", e);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BrokerUnreachableException("interrupted while connecting to " + bootstrap, e);
    }
  }

  /**
   * One line saying why the broker did not accept this client: refused credentials, a TLS failure,
   * or no answer (then, when no client properties were given, that a secured broker needs them).
   */
  public static String refusal(
      String bootstrap, KafkaClientConfig client, Duration timeout, Exception e) {
    Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    if (c instanceof org.apache.kafka.common.errors.SaslAuthenticationException) {
      return "Kafka at " + bootstrap + " refused the credentials: " + c.getMessage();
    }
    if (c instanceof org.apache.kafka.common.errors.SslAuthenticationException) {
      return "TLS handshake with Kafka at "
          + bootstrap
          + " failed: "
          + (c.getCause() != null ? c.getCause().getMessage() : c.getMessage());
    }
    if (c instanceof org.apache.kafka.common.errors.AuthenticationException) {
      return "Kafka at " + bootstrap + " refused this client: " + c.getMessage();
    }
    if (c instanceof AuthorizationException) {
      return "Kafka at " + bootstrap + ": not authorised: " + c.getMessage();
    }
    return "cannot reach Kafka at "
        + bootstrap
        + " within "
        + timeout.toMillis()
        + " ms"
        + (client.isEmpty()
            ? " (a broker that requires TLS or SASL needs --kafka-config FILE)"
            : " with " + client);
  }

  /** The record key: the rank's series, so a series stays in one partition and in order. */
  public static byte[] key(CounterSnapshot s) {
    return RankKey.of(s).toString().getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void send(CounterSnapshot s) {
    ProducerRecord<byte[], byte[]> rec =
        new ProducerRecord<>(
            topic, null, s.getEventTime().toEpochMilli(), key(s), Snapshots.encode(s));
    try {
      producer.send(
          rec,
          (md, e) -> {
            if (e != null) {
              failed.incrementAndGet();
              if (lastError.getAndSet(e) == null) {
                LOG.error("delivery to {} failed: {}", topic, e.toString());
              }
            }
          });
    } catch (RuntimeException e) {
      failed.incrementAndGet();
      lastError.set(e);
      LOG.error("send to {} failed: {}", topic, e.toString());
    }
  }

  @Override
  public void flush() {
    producer.flush();
  }

  @Override
  public long failed() {
    return failed.get();
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(10));
  }
}
