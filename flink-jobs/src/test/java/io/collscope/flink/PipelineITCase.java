package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Stage;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.testing.MiniClusters;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.flink.core.execution.JobClient;
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
 * The pipeline's Kafka smoke test: CPU ranks emit into a real Kafka broker, the job runs on a Flink
 * MiniCluster with its Kafka source and exactly-once sinks, and the attributions are read back from
 * Kafka (read_committed); garbage reaches the dead-letter topic. Verdicts of every fault are
 * checked on recorded runs, without a broker, by {@link RecordedRunsITCase}.
 */
class PipelineITCase {

  private static final Duration WINDOW = Duration.ofSeconds(3);
  private static final Duration INTERVAL = Duration.ofMillis(300);

  /** Full windows each scenario runs for, after a warm-up window. */
  private static final int FULL_WINDOWS = 4;

  @RegisterExtension
  static final MiniClusterExtension FLINK = MiniClusters.oneTaskManagerTwoSlots();

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
  void namesASlowRankThroughKafka() throws Exception {
    // A smoke test of the path, not of sensitivity (docs/ACCURACY.md measures that): the fault
    // stands far above the noise a loaded 2-core host puts into the threshold.
    Instant[] rank4 = scenarios.emit("slow-rank-4", 4, "slow-rank=2:10ms");
    List<Attribution> r4 = scenarios.fullWindows("slow-rank-4", rank4);
    AttributionScenarios.assertNamedFromSecondFullWindow(r4, FindingKind.SLOW_RANK, 2, -1);
    assertThat(r4.get(1).getFindings().get(0).getCause()).isEqualTo(Cause.ARRIVED_LATE);

    List<ConsumerRecord<byte[], byte[]>> windows =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            1,
            Duration.ofSeconds(30));
    RankWindow w = AttributionScenarios.decode(RankWindow.class, windows.get(0).value());
    assertThat(w.getCalls()).isPositive();
    assertThat(w.getP99Us()).isGreaterThanOrEqualTo(w.getP50Us());
    assertThat(w.getClockHz()).isEqualTo(1e9); // CPU cycles are nanoseconds
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
                            AttributionScenarios.decode(DeadLetter.class, r.value()).getReason()
                                == DeadLetterReason.BAD_HEADER));
    DeadLetter d =
        dead.stream()
            .map(r -> AttributionScenarios.decode(DeadLetter.class, r.value()))
            .filter(x -> x.getReason() == DeadLetterReason.BAD_HEADER)
            .findFirst()
            .orElseThrow();
    assertThat(d.getStage()).isEqualTo(Stage.DECODE);
    assertThat(d.getSourceTopic()).isEqualTo(options.get(JobOptions.SNAPSHOT_TOPIC));
    assertThat(new String(d.getRaw().array())).isEqualTo("definitely not avro");
    assertThat(d.getDetail()).contains("not Avro single-object encoding");
    assertThat(job.getJobStatus().get()).isEqualTo(org.apache.flink.api.common.JobStatus.RUNNING);
  }
}
