package io.collscope.exporter;

import static io.collscope.exporter.ExporterRecords.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Cause;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.cli.Collscope;
import io.collscope.schema.AvroCodec;
import io.collscope.testing.PrometheusProcess;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The exporter between a real KRaft broker and a real Prometheus (the Debian binary, scraping it
 * every second with the scrape configuration that ships in {@code docker/prometheus/}): every
 * PromQL expression of the Grafana dashboard in {@code docker/grafana/} answers with data, and the
 * max wait per communicator, the culprit and the firing alert are the ones the records say. The
 * max-wait answer is written to {@code target/monitoring/} (the one in {@code docs/monitoring/}
 * comes from a demo run, see docs/MONITORING.md).
 *
 * <p>The records are the job's output schemas, produced to fresh topics: communicator tp0 (4 ranks)
 * waits on its slow rank 2, dp0 (2 ranks) is clean.
 */
class ExporterITCase {

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final Path SCRAPE_CONFIG = Path.of("..", "docker", "prometheus", "prometheus.yml");
  private static final Path EVIDENCE = Path.of("target", "monitoring");

  /** tp0's ranks' mean wait per collective: rank 2 arrives last and waits least. */
  private static final double[] TP0_WAIT_US = {305.0, 310.5, 4.0, 301.0};

  private static final double DP0_MAX_WAIT_US = 6.0;

  private static EmbeddedKafka kafka;
  private static OutputTopicReader.Topics topics;

  @BeforeAll
  static void start() throws Exception {
    // First, so that a machine without the binary fails at once with how to install it.
    PrometheusProcess.PROGRAM.find();
    kafka = EmbeddedKafka.startTemporary();
    topics =
        new OutputTopicReader.Topics(
            EmbeddedKafka.freshTopic("collscope.rank-windows"),
            EmbeddedKafka.freshTopic("collscope.attribution"),
            EmbeddedKafka.freshTopic("collscope.alerts"),
            EmbeddedKafka.freshTopic("collscope.deadletter"));
    kafka.createTopics(1, topics.all().toArray(String[]::new));
    produceTheJobsOutput();
  }

  @AfterAll
  static void stop() {
    if (kafka != null) kafka.close();
  }

  /** One window of the job's output, ending a second ago (so that it is live for the TTL). */
  private static void produceTheJobsOutput() throws Exception {
    Instant end = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    try (KafkaProducer<byte[], byte[]> p = producer()) {
      for (int r = 0; r < TP0_WAIT_US.length; r++) {
        send(p, topics.rankWindows(), rankWindow("tp0", r, 4, end, TP0_WAIT_US[r], 512 << r));
      }
      send(p, topics.rankWindows(), rankWindow("dp0", 0, 2, end, 5.0, 64));
      send(p, topics.rankWindows(), rankWindow("dp0", 1, 2, end, DP0_MAX_WAIT_US, 64));
      send(
          p,
          topics.attributions(),
          attribution("tp0", 4, end, 1, 310.5, slowRank(2, Cause.ARRIVED_LATE, 298.0, 0.93)));
      send(p, topics.attributions(), attribution("dp0", 2, end, 1, DP0_MAX_WAIT_US));
      send(p, topics.alerts(), alert("tp0", AlertKind.SLOW_RANK, "2", AlertState.FIRING, end));
      Instant earlier = end.minusSeconds(60);
      send(
          p,
          topics.alerts(),
          alert("dp0", AlertKind.LATENCY_REGRESSION, null, AlertState.FIRING, earlier));
      send(
          p,
          topics.alerts(),
          alert("dp0", AlertKind.LATENCY_REGRESSION, null, AlertState.RESOLVED, end));
      send(
          p,
          topics.deadLetters(),
          deadLetter(DeadLetterReason.COUNTER_WENT_BACKWARDS, Stage.DELTA, end));
    }
  }

  @Test
  void everyDashboardQueryAnswersThroughARealPrometheus() throws Exception {
    try (Exporter exporter =
            Exporter.start(kafka.bootstrapServers(), topics, 0, Duration.ofMinutes(5));
        PrometheusProcess prometheus = PrometheusProcess.start(scrapeConfig(exporter.port()))) {
      Map<String, JsonNode> answers = new LinkedHashMap<>();
      for (DashboardQueries.Query q : DashboardQueries.all()) {
        answers.put(
            q.where(),
            await(
                q.where() + " to return data: " + q.promql(),
                prometheus,
                q.promql(),
                r -> r.size() > 0));
      }
      assertThat(answers).hasSizeGreaterThan(10);

      // Max wait over ranks, per communicator: tp0's rank 1 waited most, dp0's rank 1.
      String maxWait = DashboardQueries.panel("Max wait over ranks, per communicator");
      JsonNode max =
          await(
              "max wait 310.5 us for tp0 and 6 us for dp0",
              prometheus,
              maxWait,
              r ->
                  valueOf(r, "communicator", "tp0").equals(Optional.of(310.5))
                      && valueOf(r, "communicator", "dp0").equals(Optional.of(DP0_MAX_WAIT_US)));
      for (JsonNode s : max) {
        assertThat(s.path("metric").path("cluster").asText()).isEqualTo(CLUSTER);
        assertThat(s.path("metric").path("job").asText())
            .as("collscope's job label")
            .isEqualTo(JOB);
      }
      Files.createDirectories(EVIDENCE);
      // Prometheus' answer exactly as it sent it.
      Files.writeString(
          EVIDENCE.resolve("prometheus-query-max-wait.json"), prometheus.queryJson(maxWait));

      // The culprit: rank 2 of tp0, arrived late, 298 us; nothing for dp0.
      JsonNode culprits =
          await(
              "tp0's culprit",
              prometheus,
              DashboardQueries.panel("Culprits (latest window)"),
              r -> r.size() == 1);
      JsonNode culprit = culprits.get(0).path("metric");
      assertThat(culprit.path("communicator").asText()).isEqualTo("tp0");
      assertThat(culprit.path("kind").asText()).isEqualTo("SLOW_RANK");
      assertThat(culprit.path("rank").asText()).isEqualTo("2");
      assertThat(culprit.path("cause").asText()).isEqualTo("ARRIVED_LATE");
      assertThat(culprit.has("link")).as("empty labels are no labels").isFalse();
      assertThat(culprits.get(0).path("value").get(1).asDouble()).isEqualTo(298.0);

      // Only tp0's SLOW_RANK alert fires; dp0's regression resolved.
      JsonNode firing = answers.get(whereOf("Alerts firing"));
      assertThat(firing).hasSize(1);
      assertThat(firing.get(0).path("metric").path("alertname").asText())
          .isEqualTo("CollscopeSlowRank");
      assertThat(firing.get(0).path("metric").path("rank").asText()).isEqualTo("2");

      // The p99 heatmap has a row per rank of each communicator.
      assertThat(answers.get(whereOf("p99 latency per rank: $communicator"))).hasSize(6);
    }
  }

  @Test
  void theCommandServesTheTopicsMetricsAndStops() throws Exception {
    int port = EmbeddedKafka.freePort();
    StringWriter err = new StringWriter();
    int[] rc = {-1};
    Thread cli =
        new Thread(
            () ->
                rc[0] =
                    Collscope.execute(
                        new PrintWriter(new StringWriter(), true),
                        new PrintWriter(err, true),
                        "exporter",
                        "--bootstrap",
                        kafka.bootstrapServers(),
                        "--port",
                        Integer.toString(port),
                        "--seconds",
                        "6",
                        "--rank-window-topic",
                        topics.rankWindows(),
                        "--attribution-topic",
                        topics.attributions(),
                        "--alert-topic",
                        topics.alerts(),
                        "--deadletter-topic",
                        topics.deadLetters()));
    cli.start();
    HttpClient http = HttpClient.newHttpClient();
    URI metrics = URI.create("http://127.0.0.1:" + port + "/metrics");
    long deadline = System.nanoTime() + WAIT.toNanos();
    Scrape scrape = null;
    while (System.nanoTime() < deadline) {
      try {
        String body =
            http.send(HttpRequest.newBuilder(metrics).build(), HttpResponse.BodyHandlers.ofString())
                .body();
        scrape = Scrape.parse(body);
        if (scrape.value(ExporterMetrics.MAX_WAIT, "communicator", "tp0").isPresent()) break;
      } catch (IOException notUpYet) {
        // the server starts after the broker check
      }
      Thread.sleep(200);
    }
    assertThat(scrape).as(err.toString()).isNotNull();
    assertThat(scrape.value(ExporterMetrics.MAX_WAIT, "communicator", "tp0")).contains(310.5);
    assertThat(
            scrape.value(
                ExporterMetrics.DEAD_LETTERS + "_total", "reason", "COUNTER_WENT_BACKWARDS"))
        .contains(1.0);
    cli.join(60_000);
    assertThat(rc[0]).as(err.toString()).isZero();
    assertThat(err.toString()).contains("collscope exporter: stopped; records read: ");
  }

  /** The shipped scrape configuration, pointed at the exporter and scraping every second. */
  private static String scrapeConfig(int exporterPort) throws IOException {
    String shipped = Files.readString(SCRAPE_CONFIG);
    String config =
        shipped
            .replace("'localhost:9464'", "'127.0.0.1:" + exporterPort + "'")
            .replace("scrape_interval: 10s", "scrape_interval: 1s");
    assertThat(config)
        .as("the target and interval were replaced")
        .contains(":" + exporterPort, "1s");
    return config;
  }

  private static String whereOf(String title) throws IOException {
    for (DashboardQueries.Query q : DashboardQueries.all()) {
      if (q.where().startsWith("panel '" + title + "'")) return q.where();
    }
    throw new AssertionError("no panel " + title);
  }

  private static Optional<Double> valueOf(JsonNode result, String label, String value) {
    for (JsonNode s : result) {
      if (value.equals(s.path("metric").path(label).asText())) {
        return Optional.of(s.path("value").get(1).asDouble());
      }
    }
    return Optional.empty();
  }

  private static JsonNode await(
      String what, PrometheusProcess prometheus, String promql, Predicate<JsonNode> done)
      throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    JsonNode last = null;
    while (System.nanoTime() < deadline) {
      last = prometheus.query(promql);
      if (done.test(last)) return last;
      Thread.sleep(250);
    }
    throw new AssertionError(
        "timed out after "
            + WAIT
            + " waiting for "
            + what
            + "; last answer "
            + last
            + "; Prometheus log: "
            + prometheus.logTail());
  }

  private static KafkaProducer<byte[], byte[]> producer() {
    return new KafkaProducer<>(
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ProducerConfig.ACKS_CONFIG,
            "all"),
        new ByteArraySerializer(),
        new ByteArraySerializer());
  }

  @SuppressWarnings("unchecked")
  private static <T extends SpecificRecord> void send(
      KafkaProducer<byte[], byte[]> p, String topic, T record) throws Exception {
    byte[] value = AvroCodec.of((Class<T>) record.getClass()).encode(record);
    p.send(new ProducerRecord<>(topic, null, value)).get(30, TimeUnit.SECONDS);
  }
}
