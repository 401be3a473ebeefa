package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.emitter.KafkaSnapshotSink;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
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
  private static AttributionScenarios scenarios;

  @BeforeAll
  static void startPipeline() throws Exception {
    kafka = EmbeddedKafka.startTemporary();
    String run = EmbeddedKafka.freshTopic("it");
    options = AttributionScenarios.testOptions(kafka.bootstrapServers(), run, WINDOW);
    scenarios = new AttributionScenarios(kafka.bootstrapServers(), options, INTERVAL, FULL_WINDOWS);
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

  @Test
  void namesSlowRanksAndSlowLinksOn4And8RanksAndStaysQuietWhenClean() throws Exception {
    Instant[] clean = scenarios.emit("clean-4", 4);
    Instant[] rank4 = scenarios.emit("slow-rank-4", 4, "slow-rank=2:300us");
    Instant[] link4 = scenarios.emit("slow-link-4", 4, "slow-link=1->3:300us");
    Instant[] rank8 = scenarios.emit("slow-rank-8", 8, "slow-rank=5:300us");
    Instant[] link8 = scenarios.emit("slow-link-8", 8, "slow-link=3->6:300us");

    List<Attribution> c4 = scenarios.fullWindows("clean-4", clean);
    List<Attribution> r4 = scenarios.fullWindows("slow-rank-4", rank4);
    List<Attribution> l4 = scenarios.fullWindows("slow-link-4", link4);
    List<Attribution> r8 = scenarios.fullWindows("slow-rank-8", rank8);
    List<Attribution> l8 = scenarios.fullWindows("slow-link-8", link8);
    for (Attribution a : c4) {
      assertThat(a.getVerdict()).as("%s", a).isEqualTo("NONE");
      assertThat(a.getMissingRanks()).isEmpty();
      assertThat(a.getRanks()).hasSize(4);
    }
    AttributionScenarios.assertNamedFromSecondFullWindow(r4, "SLOW_RANK", 2, -1);
    assertThat(r4.get(1).getFindings().get(0).getCause()).isEqualTo("ARRIVED_LATE");
    AttributionScenarios.assertNamedFromSecondFullWindow(l4, "SLOW_LINK", 3, 1);
    AttributionScenarios.assertNamedFromSecondFullWindow(r8, "SLOW_RANK", 5, -1);
    AttributionScenarios.assertNamedFromSecondFullWindow(l8, "SLOW_LINK", 6, 3);

    List<ConsumerRecord<byte[], byte[]>> windows =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            1,
            Duration.ofSeconds(30));
    RankWindow w = AttributionScenarios.decode(RankWindow.class, windows.get(0).value());
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
                        r ->
                            AttributionScenarios.decode(DeadLetter.class, r.value())
                                .getReason()
                                .equals("BAD_HEADER")));
    DeadLetter d =
        dead.stream()
            .map(r -> AttributionScenarios.decode(DeadLetter.class, r.value()))
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
