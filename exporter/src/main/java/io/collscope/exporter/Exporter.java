package io.collscope.exporter;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code collscope exporter} running: the output topics read into an {@link ExporterState} on a
 * thread of its own, and its metrics served at {@code http://HOST:PORT/metrics} (Prometheus text or
 * OpenMetrics, as the scraper asks). Closing it stops both.
 */
public final class Exporter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Exporter.class);

  private final ExporterState state;
  private final OutputTopicReader reader;
  private final Thread thread;
  private final HTTPServer server;
  private final AtomicReference<Throwable> failure;

  private Exporter(
      ExporterState state,
      OutputTopicReader reader,
      Thread thread,
      HTTPServer server,
      AtomicReference<Throwable> failure) {
    this.state = state;
    this.reader = reader;
    this.thread = thread;
    this.server = server;
    this.failure = failure;
  }

  /**
   * Starts serving on {@code port} (0: a free one, see {@link #port()}) and reading {@code topics}
   * from {@code bootstrap}.
   */
  public static Exporter start(
      String bootstrap, OutputTopicReader.Topics topics, int port, Duration seriesTtl)
      throws java.io.IOException {
    return start(bootstrap, Map.of(), topics, port, seriesTtl);
  }

  /** {@link #start} with standard Kafka client properties (TLS, SASL), on loopback. */
  public static Exporter start(
      String bootstrap,
      Map<String, ?> client,
      OutputTopicReader.Topics topics,
      int port,
      Duration seriesTtl)
      throws IOException {
    return start(bootstrap, client, topics, port, seriesTtl, ExporterAccess.LOCAL);
  }

  /** {@link #start} with who may scrape: the bind address, TLS, basic authentication. */
  public static Exporter start(
      String bootstrap,
      Map<String, ?> client,
      OutputTopicReader.Topics topics,
      int port,
      Duration seriesTtl,
      ExporterAccess access)
      throws IOException {
    ExporterState state = new ExporterState(seriesTtl, Clock.systemUTC());
    PrometheusRegistry registry = new PrometheusRegistry();
    ExporterMetrics.register(state, registry);
    HTTPServer server = access.start(port, registry);
    OutputTopicReader reader = new OutputTopicReader(state, topics);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread t =
        new Thread(
            () -> {
              try (KafkaConsumer<byte[], byte[]> c =
                  OutputTopicReader.consumer(bootstrap, client)) {
                reader.run(c);
              } catch (RuntimeException | Error e) {
                failure.set(e);
                LOG.error("the exporter's reader failed", e);
              }
            },
            "collscope-exporter-reader");
    t.setDaemon(true);
    t.start();
    return new Exporter(state, reader, t, server, failure);
  }

  /** Why the reader stopped by itself, if it did. */
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure.get());
  }

  /** The port the metrics are served on. */
  public int port() {
    return server.getPort();
  }

  public ExporterState state() {
    return state;
  }

  /**
   * Waits until the reader stopped (by {@link #close()} or because it failed), at most {@code
   * timeout}; true when it has.
   */
  public boolean awaitReader(Duration timeout) throws InterruptedException {
    thread.join(Math.max(1, timeout.toMillis()));
    return !thread.isAlive();
  }

  @Override
  public void close() throws InterruptedException {
    reader.stop();
    thread.join(10_000);
    server.close();
  }
}
