package io.collscope.cli;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.broker.TopicDrainer;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * Follows the attribution topic (and, when given one, the alert topic) on a thread of its own and
 * hands each window and each alert transition of the fed communicators to a consumer, so the
 * command's thread is free to run the feed meanwhile. Remembers the latest window end seen, so the
 * command can wait for the last window before it shuts the pipeline down.
 */
final class AttributionReader implements AutoCloseable {

  private static final AvroCodec<Attribution> CODEC = AvroCodec.of(Attribution.class);
  private static final AvroCodec<Alert> ALERTS = AvroCodec.of(Alert.class);

  private final String bootstrap;
  private final Map<String, String> client;
  private final String topic;
  private final Set<CommunicatorKey> communicators;
  private final Consumer<Attribution> onWindow;
  private final String alertTopic;
  private final Consumer<Alert> onAlert;
  private final PrintWriter err;
  private final AtomicLong lastWindowEnd = new AtomicLong(Long.MIN_VALUE);
  private final Thread thread;
  private volatile boolean stop;

  private AttributionReader(
      String bootstrap,
      Map<String, String> client,
      String topic,
      Set<CommunicatorKey> communicators,
      Consumer<Attribution> onWindow,
      String alertTopic,
      Consumer<Alert> onAlert,
      PrintWriter err) {
    this.bootstrap = bootstrap;
    this.client = Map.copyOf(client);
    this.topic = topic;
    this.communicators = Set.copyOf(communicators);
    this.onWindow = onWindow;
    this.alertTopic = alertTopic;
    this.onAlert = onAlert;
    this.err = err;
    this.thread = new Thread(this::read, "collscope-attribution-reader");
    thread.setDaemon(true);
  }

  /** Starts reading {@code topic} from its beginning; undecodable records are reported on err. */
  static AttributionReader start(
      String bootstrap,
      String topic,
      Set<CommunicatorKey> communicators,
      Consumer<Attribution> onWindow,
      PrintWriter err) {
    return start(bootstrap, Map.of(), topic, communicators, onWindow, null, a -> {}, err);
  }

  /**
   * As above with the client properties {@code client} (TLS, SASL, a group id), and the alert
   * transitions of {@code alertTopic} to {@code onAlert}.
   */
  static AttributionReader start(
      String bootstrap,
      Map<String, String> client,
      String topic,
      Set<CommunicatorKey> communicators,
      Consumer<Attribution> onWindow,
      String alertTopic,
      Consumer<Alert> onAlert,
      PrintWriter err) {
    AttributionReader r =
        new AttributionReader(
            bootstrap, client, topic, communicators, onWindow, alertTopic, onAlert, err);
    r.thread.start();
    return r;
  }

  /**
   * Waits until a window ending at or after {@code end} was handed over, or {@code timeout} passed;
   * returns whether it was.
   */
  boolean awaitWindowEnd(Instant end, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (lastWindowEnd.get() < end.toEpochMilli()) {
      if (System.nanoTime() >= deadline || !thread.isAlive()) return false;
      Thread.sleep(200);
    }
    return true;
  }

  @Override
  public void close() throws InterruptedException {
    stop = true;
    thread.join(5_000);
  }

  private void read() {
    try (KafkaConsumer<byte[], byte[]> c = TopicDrainer.consumer(bootstrap, true, client)) {
      c.subscribe(alertTopic == null ? List.of(topic) : List.of(topic, alertTopic));
      while (!stop) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          if (r.topic().equals(alertTopic)) {
            alert(r.value());
            continue;
          }
          Attribution a;
          try {
            a = CODEC.decode(r.value());
          } catch (DecodeException e) {
            err.println("collscope demo: undecodable attribution: " + e.getMessage());
            continue;
          }
          if (!communicators.contains(CommunicatorKey.of(a))) {
            continue;
          }
          onWindow.accept(a);
          lastWindowEnd.accumulateAndGet(a.getWindowEnd().toEpochMilli(), Math::max);
        }
      }
    } catch (RuntimeException e) {
      err.println("collscope demo: attribution reader stopped: " + e);
    }
  }

  private void alert(byte[] value) {
    Alert a;
    try {
      a = ALERTS.decode(value);
    } catch (DecodeException e) {
      err.println("collscope demo: undecodable alert: " + e.getMessage());
      return;
    }
    if (communicators.contains(
        new CommunicatorKey(a.getCluster(), a.getJob(), a.getCommunicator()))) {
      onAlert.accept(a);
    }
  }
}
