package io.collscope.alerts;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.sun.net.httpserver.HttpServer;
import io.collscope.avro.Alert;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.schema.AvroCodec;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The forwarder between a real KRaft broker and a real Alertmanager (the Debian binary): a FIRING
 * transition becomes an active alert with the record's labels and annotations, survives an
 * Alertmanager restart (it is back after the next resend), and its RESOLVED transition resolves it.
 * The API's answers and the notifications Alertmanager sent to the test's webhook are written to
 * {@code target/alerting/} (copied to {@code docs/alerting/} as evidence).
 */
class AlertForwarderITCase {

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  private static final AvroCodec<Alert> CODEC = AvroCodec.of(Alert.class);
  private static final Duration RESEND = Duration.ofSeconds(1);
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final Path EVIDENCE = Path.of("target", "alerting");
  private static final String GENERATOR_URL = "http://collscope.example/alerts/tp0";

  private static EmbeddedKafka kafka;
  private static HttpServer webhook;
  private static final List<String> notifications = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws IOException {
    // First, so that a machine without the binary fails at once with how to install it.
    AlertmanagerProcess.findBinary();
    kafka = EmbeddedKafka.startTemporary();
    webhook = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    webhook.createContext(
        "/hook",
        ex -> {
          try (InputStream in = ex.getRequestBody()) {
            notifications.add(new String(in.readAllBytes(), StandardCharsets.UTF_8));
          }
          ex.sendResponseHeaders(200, -1);
          ex.close();
        });
    webhook.start();
  }

  @AfterAll
  static void stop() {
    if (webhook != null) webhook.stop(0);
    if (kafka != null) kafka.close();
  }

  @Test
  void firingThenRestartThenResolvedAsAlertmanagerSeesIt() throws Exception {
    String topic = EmbeddedKafka.freshTopic("collscope.alerts");
    kafka.createTopics(1, topic);
    String hook = "http://127.0.0.1:" + webhook.getAddress().getPort() + "/hook";
    Files.createDirectories(EVIDENCE);
    try (AlertmanagerProcess am = AlertmanagerProcess.start(AlertmanagerProcess.config(hook));
        KafkaProducer<byte[], byte[]> producer = producer()) {
      AlertmanagerClient api = am.client();
      AlertForwarder forwarder =
          new AlertForwarder(
              new AlertmanagerClient(am.url(), Duration.ofSeconds(5)),
              AlertForwarder.Config.of(RESEND, GENERATOR_URL));
      Thread loop = runInBackground(forwarder, topic);
      try {
        // FIRING: an active alert with the record's labels and annotations.
        Instant startsAt = Instant.now().minusSeconds(30).truncatedTo(ChronoUnit.MILLIS);
        Alert firing = TestAlerts.firing("5f0c2d9e81a4b7c3", startsAt);
        send(producer, topic, firing);
        JsonNode active = await("the alert active in Alertmanager", () -> find(api, "active"));
        Map<String, String> expectedLabels = new java.util.TreeMap<>(TestAlerts.SLOW_RANK_LABELS);
        expectedLabels.put("alertname", "CollscopeSlowRank");
        assertThat(JSON.convertValue(active.get("labels"), Map.class))
            .containsExactlyInAnyOrderEntriesOf(expectedLabels);
        assertThat(JSON.convertValue(active.get("annotations"), Map.class))
            .containsEntry("summary", firing.getMessage())
            .containsEntry("description", firing.getAnnotations().get("description"))
            .containsEntry("baseline", "12.0")
            .containsEntry("current", "312.0");
        assertThat(Instant.parse(active.get("startsAt").asText())).isEqualTo(startsAt);
        assertThat(Instant.parse(active.get("endsAt").asText())).isAfter(Instant.now());
        assertThat(active.get("generatorURL").asText()).isEqualTo(GENERATOR_URL);
        Files.writeString(EVIDENCE.resolve("alertmanager-firing.json"), pretty(api.alertsJson()));
        await("a firing notification at the webhook", () -> notification("firing"));

        // Alertmanager restarts and has forgotten every alert; the next resend brings it back.
        am.stop();
        long failedBefore = forwarder.stats().failedAttempts();
        await(
            "a failed delivery while Alertmanager is down",
            () ->
                forwarder.stats().failedAttempts() > failedBefore
                    ? Optional.of(true)
                    : Optional.empty());
        am.restart();
        Instant restarted = Instant.now();
        JsonNode back = await("the alert back after the restart", () -> find(api, "active"));
        assertThat(Duration.between(restarted, Instant.now()))
            .as("back within a resend interval plus the longest back-off, and some slack")
            .isLessThan(Duration.ofSeconds(15));
        assertThat(JSON.convertValue(back.get("labels"), Map.class))
            .containsExactlyInAnyOrderEntriesOf(expectedLabels);
        assertThat(Instant.parse(back.get("startsAt").asText())).isEqualTo(startsAt);

        // RESOLVED: no longer active; the webhook gets the resolved notification.
        Instant endsAt = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        send(producer, topic, TestAlerts.resolved(firing, endsAt));
        await(
            "the alert resolved (gone from the API's not-resolved alerts)",
            () -> find(api, null).isEmpty() ? Optional.of(true) : Optional.empty());
        Files.writeString(EVIDENCE.resolve("alertmanager-resolved.json"), pretty(api.alertsJson()));
        String resolvedHook = await("a resolved notification", () -> notification("resolved"));
        JsonNode resolvedAlert = JSON.readTree(resolvedHook).get("alerts").get(0);
        assertThat(resolvedAlert.get("status").asText()).isEqualTo("resolved");
        assertThat(Instant.parse(resolvedAlert.get("endsAt").asText())).isEqualTo(endsAt);
        assertThat(resolvedAlert.get("annotations").get("summary").asText())
            .isEqualTo("c1/train/tp0: rank 5 is back to normal");
        Files.writeString(
            EVIDENCE.resolve("alertmanager-webhook-firing.json"),
            pretty(notification("firing").orElseThrow()));
        Files.writeString(
            EVIDENCE.resolve("alertmanager-webhook-resolved.json"), pretty(resolvedHook));

        AlertForwarder.Stats stats = forwarder.stats();
        assertThat(stats.transitions()).isEqualTo(2);
        assertThat(stats.undecodable()).isZero();
        assertThat(stats.firing()).isZero();
        assertThat(stats.resolved()).as("still re-sent for 15 minutes").isEqualTo(1);
        assertThat(stats.failedAttempts()).isPositive();
      } finally {
        forwarder.stop();
        loop.join(10_000);
      }
    }
  }

  @Test
  void theCommandForwardsAFiringAlert() throws Exception {
    String topic = EmbeddedKafka.freshTopic("collscope.alerts");
    kafka.createTopics(1, topic);
    try (AlertmanagerProcess am = AlertmanagerProcess.start(AlertmanagerProcess.config(null));
        KafkaProducer<byte[], byte[]> producer = producer()) {
      Alert firing = TestAlerts.firing("0a1b2c3d4e5f6071", Instant.now().minusSeconds(5));
      firing.setKind(io.collscope.avro.AlertKind.LATENCY_REGRESSION);
      firing.setLabels(Map.of("phase", "wait", "severity", "warning"));
      send(producer, topic, firing);
      java.io.StringWriter err = new java.io.StringWriter();
      int[] rc = {-1};
      Thread cli =
          new Thread(
              () ->
                  rc[0] =
                      io.collscope.cli.Collscope.execute(
                          new java.io.PrintWriter(new java.io.StringWriter(), true),
                          new java.io.PrintWriter(err, true),
                          "alerts",
                          "forward",
                          "--alertmanager",
                          am.url().toString(),
                          "--bootstrap",
                          kafka.bootstrapServers(),
                          "--topic",
                          topic,
                          "--resend",
                          "1s",
                          "--seconds",
                          "15"));
      cli.start();
      JsonNode active =
          await(
              "the command's alert in Alertmanager",
              () -> find(am.client(), "active", "CollscopeLatencyRegression"));
      assertThat(active.get("labels").get("phase").asText()).isEqualTo("wait");
      assertThat(active.get("labels").get("communicator").asText()).isEqualTo("tp0");
      cli.join(60_000);
      assertThat(rc[0]).as(err.toString()).isZero();
      assertThat(err.toString()).contains("stopped: ").contains("failedAttempts=0");
    }
  }

  /**
   * The forwarder (the real {@code collscope alerts forward}, its own JVM) SIGKILLed after it
   * delivered a FIRING; while it is dead that alert RESOLVES and a second one FIRES; started again,
   * it rebuilds its state from the topic. Counted from Alertmanager's notifications to the webhook,
   * per (fingerprint, status): every transition once (a repeat of one Alertmanager deduplicates by
   * fingerprint counts once, and is counted apart), none lost.
   */
  @Test
  void theForwarderSigkilledAndRestartedDeliversEveryTransition() throws Exception {
    String topic = EmbeddedKafka.freshTopic("collscope.alerts");
    kafka.createTopics(1, topic);
    String hook = "http://127.0.0.1:" + webhook.getAddress().getPort() + "/hook";
    Path log = Files.createTempFile("alerts-forward-", ".log");
    try (AlertmanagerProcess am = AlertmanagerProcess.start(AlertmanagerProcess.config(hook));
        KafkaProducer<byte[], byte[]> producer = producer()) {
      Alert a =
          labelled(TestAlerts.firing("6a0c2d9e81a4b7c1", Instant.now().minusSeconds(10)), "5");
      send(producer, topic, a);
      Process forwarder = forwarderProcess(am, topic, log);
      await(
          "A firing notified",
          () -> transitions().containsKey("5/firing") ? Optional.of(1) : Optional.empty());
      forwarder.destroyForcibly(); // SIGKILL
      assertThat(forwarder.waitFor(30, TimeUnit.SECONDS)).isTrue();
      long killedAt = System.currentTimeMillis();

      // While it is dead: A resolves, B fires.
      send(producer, topic, TestAlerts.resolved(a, Instant.now().truncatedTo(ChronoUnit.MILLIS)));
      Alert b = labelled(TestAlerts.firing("6a0c2d9e81a4b7c2", Instant.now().minusSeconds(1)), "6");
      send(producer, topic, b);
      Thread.sleep(2000);
      long restartedAt = System.currentTimeMillis();
      Process again = forwarderProcess(am, topic, log);
      try {
        await(
            "A resolved and B firing notified",
            () ->
                transitions().keySet().containsAll(List.of("5/resolved", "6/firing"))
                    ? Optional.of(1)
                    : Optional.empty());
        long recoveredAt = System.currentTimeMillis();
        // Repeats would come within a group interval or two: give them the chance to show.
        Thread.sleep(4000);
        Map<String, Integer> seen = transitions();
        List<String> expected = List.of("5/firing", "5/resolved", "6/firing");
        long lost = expected.stream().filter(k -> !seen.containsKey(k)).count();
        long repeats = 0;
        for (int n : seen.values()) repeats += n - 1;
        System.out.println("forwarder kill: notifications per transition " + seen);
        Path row = Path.of("target", "reliability", "AlertForwarderKill.tsv");
        Files.createDirectories(row.getParent());
        Files.writeString(
            row,
            String.join(
                    "\t",
                    "alert forwarder SIGKILLed after a FIRING; while it is down that alert RESOLVES"
                        + " and another FIRES; started again",
                    "`AlertForwarderITCase` (`collscope alerts forward` in its own JVM, a real"
                        + " Alertmanager, its webhook notifications counted)",
                    expected.size() + " transitions in the alerts topic",
                    seen.size() + " distinct (fingerprint, status) notified by Alertmanager",
                    Long.toString(lost),
                    repeats
                        + " repeated notifications (Alertmanager's dedupe by fingerprint: once)",
                    "—",
                    seen.size() + " of " + expected.size() + " transitions",
                    String.format(
                        java.util.Locale.ROOT,
                        "%.1f s after the restart (down %.1f s)",
                        (recoveredAt - restartedAt) / 1000.0,
                        (restartedAt - killedAt) / 1000.0))
                + "\n");
        assertThat(lost).as("transitions never notified: %s", seen).isZero();
        assertThat(seen.keySet()).containsExactlyInAnyOrderElementsOf(expected);
      } finally {
        again.destroy();
        again.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  /** The alert with communicator "forwarder-kill" and the given rank: its own fingerprint. */
  private static Alert labelled(Alert a, String rank) {
    Map<String, String> labels = new java.util.TreeMap<>(a.getLabels());
    labels.put("communicator", "forwarder-kill");
    labels.put("rank", rank);
    a.setLabels(labels);
    return a;
  }

  /** Notifications of the forwarder-kill alerts: "RANK/status" → how many times notified. */
  private static Map<String, Integer> transitions() {
    Map<String, Integer> out = new java.util.TreeMap<>();
    for (String n : notifications) {
      try {
        for (JsonNode alert : JSON.readTree(n).path("alerts")) {
          JsonNode labels = alert.path("labels");
          if (!labels.path("communicator").asText().equals("forwarder-kill")) continue;
          out.merge(
              labels.path("rank").asText() + "/" + alert.path("status").asText(), 1, Integer::sum);
        }
      } catch (IOException e) {
        throw new AssertionError("webhook body is not JSON: " + n, e);
      }
    }
    return out;
  }

  private static Process forwarderProcess(AlertmanagerProcess am, String topic, Path log)
      throws IOException {
    List<String> cmd =
        List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            "io.collscope.cli.Collscope",
            "alerts",
            "forward",
            "--alertmanager",
            am.url().toString(),
            "--bootstrap",
            kafka.bootstrapServers(),
            "--topic",
            topic,
            "--resend",
            "1s");
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
        .start();
  }

  private static Thread runInBackground(AlertForwarder forwarder, String topic) {
    Thread t =
        new Thread(
            () -> {
              try (KafkaConsumer<byte[], byte[]> c =
                  TopicDrainer.consumer(kafka.bootstrapServers(), true)) {
                forwarder.run(c, topic);
              }
            },
            "alert-forwarder");
    t.setDaemon(true);
    t.start();
    return t;
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

  private static void send(KafkaProducer<byte[], byte[]> p, String topic, Alert a)
      throws Exception {
    p.send(
            new ProducerRecord<>(
                topic, a.getAlertId().getBytes(StandardCharsets.UTF_8), CODEC.encode(a)))
        .get(30, TimeUnit.SECONDS);
  }

  /** The alert named CollscopeSlowRank in GET /api/v2/alerts, in that state (null: any). */
  private static Optional<JsonNode> find(AlertmanagerClient api, String state) {
    return find(api, state, "CollscopeSlowRank");
  }

  private static Optional<JsonNode> find(AlertmanagerClient api, String state, String name) {
    try {
      for (JsonNode a : api.alerts()) {
        if (!name.equals(a.get("labels").path("alertname").asText())) continue;
        if (state == null || state.equals(a.get("status").path("state").asText())) {
          return Optional.of(a);
        }
      }
      return Optional.empty();
    } catch (IOException e) {
      return Optional.empty(); // not up (yet)
    }
  }

  /** The first webhook notification with that status. */
  private static Optional<String> notification(String status) {
    for (String n : notifications) {
      try {
        if (status.equals(JSON.readTree(n).path("status").asText())) return Optional.of(n);
      } catch (IOException e) {
        throw new AssertionError("webhook body is not JSON: " + n, e);
      }
    }
    return Optional.empty();
  }

  private static <T> T await(String what, Supplier<Optional<T>> probe) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      Optional<T> v = probe.get();
      if (v.isPresent()) return v.get();
      Thread.sleep(100);
    }
    throw new AssertionError("timed out after " + WAIT + " waiting for " + what);
  }

  private static String pretty(String json) throws IOException {
    return JSON.writeValueAsString(JSON.readTree(json)) + "\n";
  }
}
