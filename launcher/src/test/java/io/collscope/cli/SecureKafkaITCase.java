package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DeliveryCount;
import io.collscope.schema.WindowCount;
import io.collscope.testing.TestCertificates;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pipeline against a broker that only speaks SASL_SSL and enforces ACLs (certificates made for
 * the test): a client without credentials, or with a wrong password, is refused with one line; an
 * emitter cannot read the job's outputs; with their own credentials the emitter, the job and a
 * reader work end to end (emit → job → a verdict naming the slow rank). No password is ever
 * printed.
 */
class SecureKafkaITCase {

  @TempDir Path dir;

  @Test
  void onlyAuthorisedClientsGetInAndTheAuthorisedPipelineNamesTheSlowRank() throws Exception {
    EmbeddedKafka.Security security = TestCertificates.brokerSecurity(dir);
    String emitterPassword = UUID.randomUUID().toString();
    String jobPassword = UUID.randomUUID().toString();
    String readerPassword = UUID.randomUUID().toString();
    try (EmbeddedKafka kafka = EmbeddedKafka.startSecure(dir.resolve("kafka"), security)) {
      String run = EmbeddedKafka.freshTopic("secure");
      JobOptions options =
          JobOptions.defaults()
              .with(JobOptions.BOOTSTRAP, kafka.bootstrapServers())
              .with(JobOptions.SNAPSHOT_TOPIC, run + ".snapshots")
              .with(JobOptions.RANK_WINDOW_TOPIC, run + ".rank-windows")
              .with(JobOptions.ATTRIBUTION_TOPIC, run + ".attribution")
              .with(JobOptions.DEADLETTER_TOPIC, run + ".deadletter")
              .with(JobOptions.ALERT_TOPIC, run + ".alerts")
              .with(JobOptions.TRANSACTIONAL_ID_PREFIX, run)
              .with(JobOptions.GROUP_ID, run)
              .with(JobOptions.WINDOW, "2s")
              .with(JobOptions.OUT_OF_ORDERNESS, "500ms")
              .with(JobOptions.IDLENESS, "2s")
              .with(JobOptions.CHECKPOINT_INTERVAL, "1s");
      String snapshots = options.get(JobOptions.SNAPSHOT_TOPIC);
      String attribution = options.get(JobOptions.ATTRIBUTION_TOPIC);
      List<String> outputs =
          List.of(
              options.get(JobOptions.RANK_WINDOW_TOPIC),
              attribution,
              options.get(JobOptions.DEADLETTER_TOPIC),
              options.get(JobOptions.ALERT_TOPIC));
      kafka.createTopics(1, snapshots);
      kafka.createTopics(1, outputs.toArray(String[]::new));

      // The emitter writes the snapshots; the job reads them and writes its outputs in
      // transactions; a reader reads the verdicts. Nothing else is allowed.
      kafka.addScramUser("emitter", emitterPassword);
      kafka.addScramUser("job", jobPassword);
      kafka.addScramUser("reader", readerPassword);
      kafka.allow(
          "emitter",
          ResourceType.TOPIC,
          snapshots,
          false,
          AclOperation.WRITE,
          AclOperation.DESCRIBE);
      kafka.allow(
          "job", ResourceType.TOPIC, snapshots, false, AclOperation.READ, AclOperation.DESCRIBE);
      kafka.allow("job", ResourceType.GROUP, run, false, AclOperation.READ);
      for (String t : outputs) {
        kafka.allow("job", ResourceType.TOPIC, t, false, AclOperation.WRITE, AclOperation.DESCRIBE);
      }
      kafka.allow(
          "job",
          ResourceType.TRANSACTIONAL_ID,
          run,
          true,
          AclOperation.WRITE,
          AclOperation.DESCRIBE);
      kafka.allow(
          "reader",
          ResourceType.TOPIC,
          attribution,
          false,
          AclOperation.READ,
          AclOperation.DESCRIBE);
      kafka.allow("reader", ResourceType.GROUP, "collscope-drain-", true, AclOperation.READ);

      Path emitterConfig = clientFile("emitter", security.scramClient("emitter", emitterPassword));
      Path wrongPassword = clientFile("wrong", security.scramClient("emitter", "not-the-password"));
      Path jobConfig = clientFile("job", security.scramClient("job", jobPassword));
      Path readerConfig = clientFile("reader", security.scramClient("reader", readerPassword));
      List<String> secrets =
          List.of(
              emitterPassword,
              jobPassword,
              readerPassword,
              security.adminPassword(),
              security.keyStorePassword());

      // No credentials: a plaintext client at a TLS port gets no answer; the line says what to do.
      CliRun anonymous = emit(kafka, snapshots, null, "1", dir.resolve("spool-anonymous"));
      System.out.println("no credentials: exit " + anonymous.exitCode() + ": " + anonymous.err());
      assertThat(anonymous.exitCode()).isEqualTo(Defaults.EXIT_BROKER_UNREACHABLE);
      assertThat(anonymous.err().strip().lines()).hasSize(1);
      assertThat(anonymous.err()).contains("--kafka-config");

      CliRun wrong = emit(kafka, snapshots, wrongPassword, "1", dir.resolve("spool-wrong"));
      System.out.println("wrong password: exit " + wrong.exitCode() + ": " + wrong.err());
      assertThat(wrong.exitCode()).isEqualTo(Defaults.EXIT_BROKER_UNREACHABLE);
      assertThat(wrong.err().strip().lines()).hasSize(1);
      assertThat(wrong.err()).contains("refused the credentials");

      CliRun peek =
          CliRun.of(
              "tail",
              attribution,
              "--bootstrap",
              kafka.bootstrapServers(),
              "--kafka-config",
              emitterConfig.toString(),
              "--timeout",
              "20s");
      System.out.println("emitter reading an output: exit " + peek.exitCode() + ": " + peek.err());
      assertThat(peek.exitCode()).isEqualTo(Defaults.EXIT_BROKER_UNREACHABLE);
      assertThat(peek.err()).contains("not authorised to read " + attribution);
      assertThat(peek.out()).isEmpty();

      StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
      JobOptions jobOptions = options.with(JobOptions.KAFKA_CONFIG, jobConfig.toString());
      AttributionJob.configure(env, jobOptions);
      AttributionJob.topology(
          env,
          AttributionJob.kafkaSource(jobOptions),
          AttributionJob.kafkaSinks(jobOptions),
          jobOptions);
      JobClient job = env.executeAsync("secure pipeline");
      try {
        CliRun ok = emit(kafka, snapshots, emitterConfig, "10", dir.resolve("spool"));
        assertThat(ok.exitCode()).as(ok.err()).isZero();

        List<ConsumerRecord<byte[], byte[]>> verdicts =
            TopicDrainer.drain(
                kafka.bootstrapServers(),
                security.scramClient("reader", readerPassword),
                attribution,
                Duration.ofSeconds(90),
                l -> l.stream().anyMatch(r -> namesRankOneSlow(r.value())));
        assertThat(verdicts)
            .as("a verdict naming rank 1 slow, read by the reader")
            .anyMatch(r -> namesRankOneSlow(r.value()));

        CliRun tail =
            CliRun.of(
                "tail",
                attribution,
                "--bootstrap",
                kafka.bootstrapServers(),
                "--kafka-config",
                readerConfig.toString(),
                "--max",
                "1",
                "--timeout",
                "30s");
        assertThat(tail.exitCode()).as(tail.err()).isZero();
        assertThat(tail.out()).contains(" attribution ");

        // Counted: the emitter's own "published N" against every snapshot identity read back (as
        // the broker's admin), and the job's rank windows against those snapshots' calls.
        java.util.regex.Matcher published =
            java.util.regex.Pattern.compile("published (\\d+) snapshots")
                .matcher(ok.out() + ok.err());
        assertThat(published.find()).as(ok.out() + ok.err()).isTrue();
        long produced = Long.parseLong(published.group(1));
        List<CounterSnapshot> readBack = new java.util.ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r :
            TopicDrainer.drain(
                kafka.bootstrapServers(),
                kafka.adminClient(),
                snapshots,
                Duration.ofSeconds(30),
                l -> l.size() >= produced)) {
          readBack.add(AvroCodec.of(CounterSnapshot.class).decode(r.value()));
        }
        DeliveryCount delivered = DeliveryCount.ofCounter(produced, readBack);
        long lastSnapshot =
            readBack.stream().mapToLong(x -> x.getEventTime().toEpochMilli()).max().orElseThrow();
        List<RankWindow> windows = new java.util.ArrayList<>();
        WindowCount[] counted = new WindowCount[1];
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            kafka.adminClient(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            Duration.ofSeconds(60),
            l -> {
              windows.clear();
              for (ConsumerRecord<byte[], byte[]> r : l) windows.add(decodeWindow(r.value()));
              // Windows the watermark has certainly closed: two before the last snapshot's.
              counted[0] = WindowCount.of(readBack, 2000, 0, lastSnapshot - 4000, windows);
              return counted[0].seenWindows() == counted[0].expectedWindows();
            });
        WindowCount w = counted[0];
        System.out.println(
            "secure pipeline: produced "
                + produced
                + ", read back "
                + delivered.consumed()
                + ", lost "
                + delivered.lostCount()
                + ", duplicated "
                + delivered.duplicated()
                + "; "
                + w.describe());
        assertThat(delivered.lostCount()).as("snapshots lost").isZero();
        assertThat(w.mismatches()).as("rank windows against the snapshots").isEmpty();

        // docs/RELIABILITY.md's row (dev/chaos/run-all collects it).
        Path row = Path.of("target", "reliability", "SecureKafkaITCase.tsv");
        Files.createDirectories(row.getParent());
        Files.writeString(
            row,
            String.join(
                    "\t",
                    "a client without credentials, with a wrong password, or reading a topic its"
                        + " ACLs do not allow",
                    "`SecureKafkaITCase` (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer)",
                    "3 refused clients, then "
                        + produced
                        + " snapshots (the authorised emitter's own count)",
                    delivered.consumed()
                        + " read back; each refusal one line, exit 3"
                        + " ([output](reliability/secure-kafka-refusals.txt)); the authorised"
                        + " job's verdict names the slow rank; "
                        + w.describe(),
                    Long.toString(delivered.lostCount()),
                    delivered.duplicated()
                        + " in the topic; after the job's dedupe "
                        + w.describeDuplicates(),
                    "—")
                + "\n");

        CliRun help = CliRun.of("emit", "--help");
        assertThat(help.out()).contains("--kafka-config");
        for (CliRun r : List.of(anonymous, wrong, peek, ok, tail, help)) {
          for (String secret : secrets) {
            assertThat(r.out() + r.err()).as("output with no secret").doesNotContain(secret);
          }
        }
      } finally {
        job.cancel().get();
      }
    }
  }

  /**
   * {@code demo --kafka --kafka-config} on the secured cluster, as a principal allowed only names
   * prefixed {@code collscope-demo-}: the demo makes its run's topics, names the slow rank, and
   * deletes the topics at the end. Before that, its flags: --kafka-config alone is refused (the
   * demo's own broker is plaintext), and without credentials the demo stops with one line.
   */
  @Test
  void theDemoRunsOnASecuredClusterWithinPrefixedAclsAndRemovesItsTopics() throws Exception {
    EmbeddedKafka.Security security = TestCertificates.brokerSecurity(dir);
    String password = UUID.randomUUID().toString();
    try (EmbeddedKafka kafka = EmbeddedKafka.startSecure(dir.resolve("kafka"), security)) {
      kafka.addScramUser("demo", password);
      String prefix = DemoKafka.RUN_PREFIX;
      kafka.allow(
          "demo",
          ResourceType.TOPIC,
          prefix,
          true,
          AclOperation.CREATE,
          AclOperation.DELETE,
          AclOperation.READ,
          AclOperation.WRITE,
          AclOperation.DESCRIBE);
      kafka.allow("demo", ResourceType.GROUP, prefix, true, AclOperation.READ);
      kafka.allow(
          "demo",
          ResourceType.TRANSACTIONAL_ID,
          prefix,
          true,
          AclOperation.WRITE,
          AclOperation.DESCRIBE);
      Path config = clientFile("demo", security.scramClient("demo", password));

      CliRun lone = CliRun.of("demo", "--kafka-config", config.toString());
      assertThat(lone.exitCode()).isEqualTo(Defaults.EXIT_USAGE);
      assertThat(lone.err().strip().lines()).hasSize(1);
      assertThat(lone.err()).contains("--kafka-config needs --kafka");

      CliRun anonymous = CliRun.of("demo", "--kafka", kafka.bootstrapServers(), "--seconds", "2");
      System.out.println("demo without credentials: exit " + anonymous.exitCode());
      assertThat(anonymous.exitCode()).isEqualTo(Defaults.EXIT_BROKER_UNREACHABLE);
      assertThat(anonymous.err().strip().lines()).hasSize(1);

      CliRun demo =
          CliRun.of(
              "demo",
              "--kafka",
              kafka.bootstrapServers(),
              "--kafka-config",
              config.toString(),
              "--ranks",
              "2",
              "--seconds",
              "12",
              "--window",
              "2s",
              "--interval",
              "250ms",
              "--backend",
              "cpu",
              "--inject",
              "slow-rank=1:5ms",
              "--json",
              "--no-history",
              "--ui-port",
              "18281");
      System.out.println(
          "demo on the secured cluster: exit " + demo.exitCode() + "\n" + demo.err());
      assertThat(demo.exitCode()).as(demo.err()).isZero();
      List<String> full =
          demo.out().lines().filter(l -> l.contains("\"full_window\":true")).toList();
      assertThat(full).as(demo.out()).isNotEmpty();
      assertThat(full.get(full.size() - 1)).contains("\"verdict\":\"SLOW_RANK\"", "\"rank\":1");
      assertThat(demo.err()).contains("deleted its topics " + prefix);
      Map<String, Object> asDemo = new java.util.HashMap<>(security.scramClient("demo", password));
      asDemo.put("bootstrap.servers", kafka.bootstrapServers());
      try (org.apache.kafka.clients.admin.Admin admin =
          org.apache.kafka.clients.admin.Admin.create(asDemo)) {
        assertThat(admin.listTopics().names().get())
            .as("the demo's topics are gone")
            .noneMatch(t -> t.startsWith(prefix));
      }
      for (CliRun r : List.of(lone, anonymous, demo)) {
        assertThat(r.out() + r.err()).as("output with no secret").doesNotContain(password);
      }
    }
  }

  private CliRun emit(EmbeddedKafka kafka, String topic, Path config, String seconds, Path spool) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "emit",
                "--bootstrap",
                kafka.bootstrapServers(),
                "--topic",
                topic,
                "--ranks",
                "2",
                "--seconds",
                seconds,
                "--interval",
                "250ms",
                "--backend",
                "cpu",
                "--inject",
                "slow-rank=1:5ms",
                "--broker-timeout",
                "5s",
                "--spool",
                spool.toString()));
    if (config != null) {
      args.add("--kafka-config");
      args.add(config.toString());
    }
    return CliRun.of(args.toArray(String[]::new));
  }

  private static boolean namesRankOneSlow(byte[] value) {
    try {
      Attribution a = AvroCodec.of(Attribution.class).decode(value);
      return !a.getFindings().isEmpty()
          && a.getFindings().get(0).getKind() == FindingKind.SLOW_RANK
          && a.getFindings().get(0).getRank() == 1;
    } catch (Exception e) {
      return false;
    }
  }

  private Path clientFile(String name, Map<String, Object> properties) throws IOException {
    Properties p = new Properties();
    properties.forEach((k, v) -> p.setProperty(k, v.toString()));
    Path f = dir.resolve(name + ".properties");
    try (var w = Files.newBufferedWriter(f)) {
      p.store(w, "Kafka client properties of " + name);
    }
    return f;
  }

  private static RankWindow decodeWindow(byte[] b) {
    try {
      return AvroCodec.of(RankWindow.class).decode(b);
    } catch (io.collscope.schema.DecodeException e) {
      throw new AssertionError(e);
    }
  }
}
