package io.collscope.flink;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.RankWindow;
import io.collscope.flink.alert.AlertFunction;
import io.collscope.flink.attribution.AttributionFunction;
import io.collscope.flink.decode.DeadLetters;
import io.collscope.flink.decode.RankKeyFunction;
import io.collscope.flink.decode.RankRecord;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.flink.health.HardwareJoinFunction;
import io.collscope.flink.history.HistorySinks;
import io.collscope.flink.sink.AvroRecordSerializer;
import io.collscope.flink.source.RawRecord;
import io.collscope.flink.source.RawRecordDeserializer;
import io.collscope.flink.window.LateRankTrigger;
import io.collscope.flink.window.RankWindowAggregate;
import io.collscope.flink.window.RankWindowFunction;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.RankKey;
import io.collscope.schema.Snapshots;
import org.apache.avro.specific.SpecificRecord;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * The attribution job: snapshots → per-rank deltas → per-rank event-time windows → cross-rank
 * attribution per communicator.
 *
 * <p>{@link #topology} takes its source and sinks as arguments (tests and the demo pass their own);
 * {@link #main} only builds the production Kafka connectors.
 */
public final class AttributionJob {

  public static final String JOB_NAME = "collscope-attribution";

  /**
   * The job's outputs; {@code history} (Parquet files of the rank windows, attributions and alerts)
   * is null when no history is written.
   */
  public record Sinks(
      Sink<RankWindow> rankWindows,
      Sink<Attribution> attributions,
      Sink<DeadLetter> deadLetters,
      Sink<Alert> alerts,
      HistorySinks history) {

    /** Without history. */
    public Sinks(
        Sink<RankWindow> rankWindows,
        Sink<Attribution> attributions,
        Sink<DeadLetter> deadLetters,
        Sink<Alert> alerts) {
      this(rankWindows, attributions, deadLetters, alerts, null);
    }

    public Sinks withHistory(HistorySinks history) {
      return new Sinks(rankWindows, attributions, deadLetters, alerts, history);
    }
  }

  private AttributionJob() {}

  public static void main(String[] args) throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    JobOptions options;
    try {
      options = JobOptions.parse(args);
      configure(env, options);
    } catch (IllegalArgumentException e) {
      String line = JOB_NAME + ": " + e.getMessage();
      if (CheckpointStorageSettings.inTheJobManager(env.getConfiguration())) {
        // main runs inside the JobManager (a jar run through the REST API): System.exit would end
        // the JobManager; the exception fails this submission alone, its line in the answer.
        throw new IllegalArgumentException(line, e);
      }
      System.err.println(line);
      System.exit(2);
      return;
    }
    topology(env, kafkaSource(options), kafkaSinks(options), options);
    env.execute(JOB_NAME);
  }

  /**
   * Checkpointing drives the exactly-once sinks: outputs become visible when a checkpoint
   * completes. Checkpoints go to files (CheckpointStorageSettings says where, and why never the
   * JobManager's memory).
   *
   * @throws IllegalArgumentException on a cluster without durable checkpoint storage
   */
  public static void configure(StreamExecutionEnvironment env, JobOptions o) {
    env.configure(CheckpointStorageSettings.resolve(env.getConfiguration(), o));
    env.enableCheckpointing(
        o.duration(JobOptions.CHECKPOINT_INTERVAL).toMillis(), CheckpointingMode.EXACTLY_ONCE);
    // Object reuse between chained operators: no deep copy of each record at every chained edge
    // (each delta's arrays into the window, each rank window and attribution into every sink).
    // Safe by the audit in docs/SCALE.md (no operator keeps or changes a chained input, none
    // changes what it emitted). Once tried with the decoder filling one reused snapshot, and
    // slower; the decoder now makes a new snapshot of primitive arrays per record (issue 47).
    env.getConfig().enableObjectReuse();
  }

  public static void topology(
      StreamExecutionEnvironment env, Source<RawRecord, ?, ?> source, Sinks sinks, JobOptions o) {
    WatermarkStrategy<RawRecord> watermarks =
        WatermarkStrategy.<RawRecord>forBoundedOutOfOrderness(
                o.duration(JobOptions.OUT_OF_ORDERNESS))
            .withIdleness(o.duration(JobOptions.IDLENESS))
            // A record stamped absurdly far ahead would drag the watermark into the future and
            // make every later window late: it gets no timestamp here (the watermark ignores it)
            // and the decoder dead-letters it.
            .withTimestampAssigner(
                (r, ts) ->
                    Snapshots.plausibleEventTime(r.timestamp, System.currentTimeMillis())
                        ? r.timestamp
                        : Long.MIN_VALUE);

    DataStream<RawRecord> raw =
        env.fromSource(source, watermarks, "snapshots").uid("snapshots-source");

    // Records cross the keyBy as bytes with the rank key read from them, and are decoded once, in
    // the delta (RankRecord says why). The stage replaced the decoder ("decode"), which held no
    // state: a savepoint of a job before it restores without --allowNonRestoredState.
    SingleOutputStreamOperator<RankRecord> keyed =
        raw.process(new RankKeyFunction()).name("rank key").uid("rank-key");

    SingleOutputStreamOperator<SnapshotDelta> deltas =
        keyed
            .keyBy(RankRecord::key)
            .process(new DeltaFunction(o.stateTtl()))
            .name("delta per rank")
            .uid("delta");

    // The deltas are still partitioned by their rank key (the delta keeps its input's key): a
    // second keyBy would ship every delta — 19 longs per peer, 155 KB at 1,024 ranks — through
    // the network stack to the same subtask. Reinterpreted, the window chains to the delta.
    SingleOutputStreamOperator<RankWindow> rankWindows =
        DataStreamUtils.reinterpretAsKeyedStream(deltas, SnapshotDelta::key)
            .window(TumblingEventTimeWindows.of(o.duration(JobOptions.WINDOW)))
            // A rank that reports late is sent once, with what came within the grace (the
            // trigger says why not Flink's own), and the attribution waits as long for it.
            .trigger(new LateRankTrigger(o.duration(JobOptions.LATE_RANK_GRACE)))
            .allowedLateness(o.duration(JobOptions.LATE_RANK_GRACE))
            .aggregate(new RankWindowAggregate(), new RankWindowFunction())
            .name("rank window")
            .uid("rank-window");

    SingleOutputStreamOperator<Attribution> judged =
        rankWindows
            .keyBy((RankWindow w) -> CommunicatorKey.of(w))
            .process(
                new AttributionFunction(
                    o.thresholds(), o.stateTtl(), o.duration(JobOptions.LATE_RANK_GRACE)))
            .name("attribution")
            .uid("attribution");

    // Each finding gets the hardware evidence of its GPUs: the health reads of the same ranks and
    // window. The verdict is the attribution's own; without health records it passes unchanged.
    SingleOutputStreamOperator<Attribution> attributions =
        judged
            .keyBy((Attribution a) -> CommunicatorKey.of(a))
            .connect(
                keyed
                    .getSideOutput(RankKeyFunction.HEALTH)
                    .keyBy((GpuHealth h) -> CommunicatorKey.of(h)))
            .process(new HardwareJoinFunction(o.duration(JobOptions.WINDOW), o.stateTtl()))
            .name("hardware evidence")
            .uid("hardware-evidence");

    SingleOutputStreamOperator<Alert> alerts =
        attributions
            .keyBy((Attribution a) -> CommunicatorKey.of(a))
            .process(
                new AlertFunction(
                    o.regressionRule(),
                    o.count(JobOptions.ALERT_FIRE_AFTER),
                    o.count(JobOptions.ALERT_RESOLVE_AFTER),
                    o.stateTtl(),
                    o.baselines()))
            .name("alerts")
            .uid("alerts");

    rankWindows.sinkTo(sinks.rankWindows()).name("rank-windows sink").uid("rank-windows-sink");
    alerts.sinkTo(sinks.alerts()).name("alert sink").uid("alert-sink");
    attributions.sinkTo(sinks.attributions()).name("attribution sink").uid("attribution-sink");
    keyed
        .getSideOutput(DeadLetters.TAG)
        .union(deltas.getSideOutput(DeadLetters.TAG))
        .sinkTo(sinks.deadLetters())
        .name("dead-letter sink")
        .uid("dead-letter-sink");

    HistorySinks history = sinks.history();
    if (history != null) {
      rankWindows
          .sinkTo(history.rankWindows())
          .name("rank-windows history")
          .uid("rank-windows-history");
      attributions
          .sinkTo(history.attributions())
          .name("attribution history")
          .uid("attribution-history");
      attributions
          .flatMap(new io.collscope.flink.history.WindowFindings())
          .name("findings of attributions")
          .uid("window-findings")
          .sinkTo(history.findings())
          .name("findings history")
          .uid("findings-history");
      alerts.sinkTo(history.alerts()).name("alert history").uid("alert-history");
    }
  }

  /** FileSinks under --history-path, or null when it is empty (no history). */
  public static HistorySinks historySinks(JobOptions o) {
    String base = o.get(JobOptions.HISTORY_PATH);
    return base == null || base.isBlank() ? null : HistorySinks.files(base);
  }

  public static KafkaSource<RawRecord> kafkaSource(JobOptions o) {
    return kafkaSourceBuilder(o).build();
  }

  /** The production source's settings, for a caller that adds its own (e.g. a bounded end). */
  public static KafkaSourceBuilder<RawRecord> kafkaSourceBuilder(JobOptions o) {
    return KafkaSource.<RawRecord>builder()
        .setBootstrapServers(o.get(JobOptions.BOOTSTRAP))
        // A pattern, not a list: a topic of the list that does not exist fails the job at start,
        // and a cluster without GPU health (CPU ranks, old emitters) never creates that one.
        .setTopicPattern(
            java.util.regex.Pattern.compile(
                java.util.regex.Pattern.quote(o.get(JobOptions.SNAPSHOT_TOPIC))
                    + "|"
                    + java.util.regex.Pattern.quote(o.get(JobOptions.HEALTH_TOPIC))))
        .setGroupId(o.get(JobOptions.GROUP_ID))
        // Resume from committed offsets; a new group starts at the beginning of the topic.
        .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
        .setDeserializer(new RawRecordDeserializer())
        .setProperty("partition.discovery.interval.ms", "10000")
        .setProperties(o.kafkaClient().asProperties());
  }

  /** The production outputs: Kafka topics, and the history files when --history-path is set. */
  public static Sinks kafkaSinks(JobOptions o) {
    return new Sinks(
        sink(
            o,
            JobOptions.RANK_WINDOW_TOPIC,
            "rank-windows",
            RankWindow.class,
            w -> RankKey.of(w).toString()),
        sink(
            o,
            JobOptions.ATTRIBUTION_TOPIC,
            "attribution",
            Attribution.class,
            a -> CommunicatorKey.of(a).toString()),
        sink(
            o,
            JobOptions.DEADLETTER_TOPIC,
            "deadletter",
            DeadLetter.class,
            d ->
                d.getKey() == null
                    ? null
                    : java.nio.charset.StandardCharsets.UTF_8
                        .decode(d.getKey().duplicate())
                        .toString()),
        sink(o, JobOptions.ALERT_TOPIC, "alerts", Alert.class, Alert::getAlertId),
        historySinks(o));
  }

  /** The client properties, with the transaction timeout the builder sets unless they do. */
  private static java.util.Properties withTransactionTimeout(java.util.Properties client) {
    java.util.Properties p = new java.util.Properties();
    p.setProperty("transaction.timeout.ms", "600000");
    p.putAll(client);
    return p;
  }

  private static <T extends SpecificRecord> KafkaSink<T> sink(
      JobOptions o,
      String topicOption,
      String idSuffix,
      Class<T> type,
      AvroRecordSerializer.KeyOf<T> key) {
    return KafkaSink.<T>builder()
        .setBootstrapServers(o.get(JobOptions.BOOTSTRAP))
        .setRecordSerializer(new AvroRecordSerializer<>(o.get(topicOption), type, key))
        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .setTransactionalIdPrefix(o.get(JobOptions.TRANSACTIONAL_ID_PREFIX) + "-" + idSuffix)
        // Longer than any checkpoint may take; within the broker's transaction.max.timeout.ms.
        .setProperty("transaction.timeout.ms", "600000")
        .setKafkaProducerConfig(withTransactionTimeout(o.kafkaClient().asProperties()))
        .build();
  }
}
