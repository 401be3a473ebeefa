package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.Finding;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole pipeline on real parts: CPU ranks emit into a real Kafka broker, the job runs on a
 * Flink MiniCluster, and the attributions are read back from Kafka (read_committed). One job serves
 * every scenario; each scenario is its own communicator, run one after another so the ranks of one
 * scenario do not compete with another's for this machine's cores.
 */
class PipelineITCase {

  private static final Duration WINDOW = Duration.ofSeconds(3);
  private static final Duration INTERVAL = Duration.ofMillis(300);

  /** Full windows each scenario runs for, after a warm-up window. */
  private static final int FULL_WINDOWS = 4;

  @RegisterExtension
  static final MiniClusterExtension FLINK =
      new MiniClusterExtension(
          new MiniClusterResourceConfiguration.Builder()
              .setNumberTaskManagers(1)
              .setNumberSlotsPerTaskManager(2)
              .build());

  private static EmbeddedKafka kafka;
  private static JobOptions options;
  private static JobClient job;

  @BeforeAll
  static void startPipeline() throws Exception {
    kafka = EmbeddedKafka.startTemporary();
    String run = EmbeddedKafka.freshTopic("it");
    options =
        JobOptions.defaults()
            .with(JobOptions.BOOTSTRAP, kafka.bootstrapServers())
            .with(JobOptions.SNAPSHOT_TOPIC, run + ".snapshots")
            .with(JobOptions.RANK_WINDOW_TOPIC, run + ".rank-windows")
            .with(JobOptions.ATTRIBUTION_TOPIC, run + ".attribution")
            .with(JobOptions.DEADLETTER_TOPIC, run + ".deadletter")
            .with(JobOptions.TRANSACTIONAL_ID_PREFIX, run)
            .with(JobOptions.WINDOW, WINDOW.toMillis() + "ms")
            .with(JobOptions.OUT_OF_ORDERNESS, "500ms")
            .with(JobOptions.IDLENESS, "2s")
            .with(JobOptions.CHECKPOINT_INTERVAL, "1s");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    AttributionJob.configure(env, options);
    // create the input topic before the source starts
    KafkaSnapshotSink.connect(
            kafka.bootstrapServers(),
            options.get(JobOptions.SNAPSHOT_TOPIC),
            4,
            Duration.ofSeconds(30))
        .close();
    AttributionJob.topology(
        env, AttributionJob.kafkaSource(options), AttributionJob.kafkaSinks(options), options);
    job = env.executeAsync(AttributionJob.JOB_NAME);
  }

  @AfterAll
  static void stopPipeline() throws Exception {
    if (job != null) job.cancel().get();
    if (kafka != null) kafka.close();
  }

  /** Runs one communicator's ranks for a warm-up window plus FULL_WINDOWS windows. */
  private static Instant[] emit(String communicator, int ranks, String... inject) throws Exception {
    FaultPlan plan = FaultPlan.parse(List.of(inject), ranks);
    Instant start = Instant.now();
    try (CpuCollective backend = new CpuCollective(CollectiveConfig.of(ranks), plan);
        KafkaSnapshotSink sink =
            KafkaSnapshotSink.connect(
                kafka.bootstrapServers(),
                options.get(JobOptions.SNAPSHOT_TOPIC),
                4,
                Duration.ofSeconds(30))) {
      Emitter.Result r =
          new Emitter(backend, Identity.of("it", "it", communicator), sink, INTERVAL)
              .run(WINDOW.multipliedBy(FULL_WINDOWS + 1));
      assertThat(r.failure()).isEmpty();
    }
    return new Instant[] {start, Instant.now()};
  }

  /** The attributions of the communicator's full windows, in window order. */
  private static List<Attribution> fullWindows(String communicator, Instant[] span) {
    long firstStart = (span[0].toEpochMilli() / WINDOW.toMillis() + 1) * WINDOW.toMillis();
    long lastEnd = span[1].toEpochMilli() / WINDOW.toMillis() * WINDOW.toMillis();
    int expected = (int) ((lastEnd - firstStart) / WINDOW.toMillis());
    Map<Long, Attribution> byStart = new TreeMap<>();
    TopicDrainer.drain(
        kafka.bootstrapServers(),
        options.get(JobOptions.ATTRIBUTION_TOPIC),
        Duration.ofSeconds(60),
        recs -> {
          byStart.clear();
          for (ConsumerRecord<byte[], byte[]> rec : recs) {
            Attribution a = decode(Attribution.class, rec.value());
            long s = a.getWindowStartMs().toEpochMilli();
            if (a.getCommunicator().equals(communicator)
                && s >= firstStart
                && s + WINDOW.toMillis() <= lastEnd) {
              byStart.put(s, a);
            }
          }
          return byStart.size() >= expected;
        });
    List<Attribution> out = new ArrayList<>(byStart.values());
    for (Attribution a : out) {
      System.out.printf(
          "%s %s %s%n",
          communicator,
          a.getWindowStartMs(),
          a.getFindings().isEmpty() ? "NONE conf=" + a.getConfidence() : a.getFindings());
    }
    assertThat(out)
        .as("full windows of %s", communicator)
        .hasSizeGreaterThanOrEqualTo(FULL_WINDOWS - 1);
    return out;
  }

  private static <T extends org.apache.avro.specific.SpecificRecord> T decode(
      Class<T> type, byte[] b) {
    try {
      return AvroCodec.of(type).decode(b);
    } catch (DecodeException e) {
      throw new AssertionError(e);
    }
  }

  /** From the second full window on, the top finding names the culprit. */
  private static void assertNamedFromSecondFullWindow(
      List<Attribution> windows, String kind, int rank, int from) {
    for (Attribution a : windows.subList(1, windows.size())) {
      assertThat(a.getFindings()).as("window %s: %s", a.getWindowStartMs(), a).isNotEmpty();
      Finding top = a.getFindings().get(0);
      assertThat(top.getKind())
          .as("window %s: %s", a.getWindowStartMs(), a.getFindings())
          .isEqualTo(kind);
      assertThat(top.getRank())
          .as("window %s: %s", a.getWindowStartMs(), a.getFindings())
          .isEqualTo(rank);
      assertThat(top.getFromRank()).isEqualTo(from);
      assertThat(a.getMissingRanks()).isEmpty();
    }
  }

  @Test
  void namesSlowRanksAndSlowLinksOn4And8RanksAndStaysQuietWhenClean() throws Exception {
    Instant[] clean = emit("clean-4", 4);
    Instant[] rank4 = emit("slow-rank-4", 4, "slow-rank=2:300us");
    Instant[] link4 = emit("slow-link-4", 4, "slow-link=1->3:300us");
    Instant[] rank8 = emit("slow-rank-8", 8, "slow-rank=5:300us");
    Instant[] link8 = emit("slow-link-8", 8, "slow-link=3->6:300us");

    List<Attribution> c4 = fullWindows("clean-4", clean);
    List<Attribution> r4 = fullWindows("slow-rank-4", rank4);
    List<Attribution> l4 = fullWindows("slow-link-4", link4);
    List<Attribution> r8 = fullWindows("slow-rank-8", rank8);
    List<Attribution> l8 = fullWindows("slow-link-8", link8);
    for (Attribution a : c4) {
      assertThat(a.getVerdict()).as("%s", a).isEqualTo("NONE");
      assertThat(a.getMissingRanks()).isEmpty();
      assertThat(a.getRanks()).hasSize(4);
    }
    assertNamedFromSecondFullWindow(r4, "SLOW_RANK", 2, -1);
    assertThat(r4.get(1).getFindings().get(0).getCause()).isEqualTo("ARRIVED_LATE");
    assertNamedFromSecondFullWindow(l4, "SLOW_LINK", 3, 1);
    assertNamedFromSecondFullWindow(r8, "SLOW_RANK", 5, -1);
    assertNamedFromSecondFullWindow(l8, "SLOW_LINK", 6, 3);

    List<ConsumerRecord<byte[], byte[]>> windows =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            1,
            Duration.ofSeconds(30));
    RankWindow w = decode(RankWindow.class, windows.get(0).value());
    assertThat(w.getCalls()).isPositive();
    assertThat(w.getP99Us()).isGreaterThanOrEqualTo(w.getP50Us());
  }

  @Test
  void garbageGoesToTheDeadLetterTopicAndTheJobKeepsRunning() throws Exception {
    byte[] garbage = "definitely not avro".getBytes();
    try (KafkaProducer<byte[], byte[]> p =
        new KafkaProducer<>(
            Map.of("bootstrap.servers", kafka.bootstrapServers()),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      p.send(
              new ProducerRecord<>(
                  options.get(JobOptions.SNAPSHOT_TOPIC), "junk".getBytes(), garbage))
          .get();
    }
    List<ConsumerRecord<byte[], byte[]>> dead =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.DEADLETTER_TOPIC),
            Duration.ofSeconds(60),
            recs ->
                recs.stream()
                    .anyMatch(
                        r -> decode(DeadLetter.class, r.value()).getReason().equals("BAD_HEADER")));
    DeadLetter d =
        dead.stream()
            .map(r -> decode(DeadLetter.class, r.value()))
            .filter(x -> x.getReason().equals("BAD_HEADER"))
            .findFirst()
            .orElseThrow();
    assertThat(d.getStage()).isEqualTo("decode");
    assertThat(d.getSourceTopic()).isEqualTo(options.get(JobOptions.SNAPSHOT_TOPIC));
    assertThat(new String(d.getRaw().array())).isEqualTo("definitely not avro");
    assertThat(d.getDetail()).contains("not Avro single-object encoding");
    assertThat(job.getJobStatus().get()).isEqualTo(org.apache.flink.api.common.JobStatus.RUNNING);
  }
}
