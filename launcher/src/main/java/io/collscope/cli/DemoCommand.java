package io.collscope.cli;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.backend.Backends;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.model.Phase;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import io.collscope.schema.RecordJson;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope demo}: the whole pipeline on one machine. An embedded Kafka broker, N ranks
 * emitting snapshots, the attribution job on a local MiniCluster (web UI on 8081), and a live view
 * of the attribution topic — a table per window, or one JSON object per window.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description =
        "Run broker, emitters and the attribution job locally and print each window's verdict.")
final class DemoCommand implements Callable<Integer> {

  private static final DateTimeFormatter HMS =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneOffset.UTC);

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @CommandLine.Mixin RankOptions rankOptions;

  @Option(
      names = "--seconds",
      defaultValue = "45",
      description = "How long the ranks run. Default: ${DEFAULT-VALUE}")
  int seconds;

  @Option(
      names = "--window",
      defaultValue = "10s",
      converter = DurationConverter.class,
      description = "Event-time window. Default: ${DEFAULT-VALUE}")
  Duration window;

  @Option(
      names = "--replay",
      description =
          "Instead of running ranks, replay a recording from 'collscope emit --record' (e.g. made on a GPU node).")
  java.nio.file.Path replay;

  @Option(names = "--json", description = "One JSON object per attribution window on stdout.")
  boolean json;

  @Option(
      names = "--ui-port",
      defaultValue = "8081",
      description =
          "Flink web UI port (the next free one up to +20 if taken). Default: ${DEFAULT-VALUE}")
  int uiPort;

  @Option(
      names = "--min-excess-us",
      defaultValue = "20",
      description = "Smallest excess wait (us/collective) attributed. Default: ${DEFAULT-VALUE}")
  double minExcessUs;

  @Override
  public Integer call() throws Exception {
    if (seconds < 1) throw usage("--seconds must be >= 1");
    if (window.toMillis() < 1000) throw usage("--window must be at least 1s");
    Duration interval = rankOptions.interval;
    if (interval.compareTo(window) >= 0) throw usage("--interval must be shorter than --window");
    Backends.Kind kind = rankOptions.kind();
    FaultPlan plan = rankOptions.faults();
    CollectiveConfig config = rankOptions.config();
    int ranks = rankOptions.ranks;
    String communicator = rankOptions.communicator;
    java.util.List<io.collscope.avro.CounterSnapshot> recording = null;
    if (replay != null) {
      if (!rankOptions.inject.isEmpty()) {
        throw usage("--inject and --replay exclude each other: faults are in the recording");
      }
      recording = io.collscope.emitter.SnapshotRecording.read(replay);
      if (recording.isEmpty()) throw usage(replay + " holds no snapshots");
      communicator = recording.get(0).getCommunicator();
      ranks = recording.get(0).getWorldSize();
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    JobOptions options =
        JobOptions.defaults()
            .with(JobOptions.WINDOW, window.toMillis() + "ms")
            .with(JobOptions.MIN_EXCESS_US, Double.toString(minExcessUs))
            .with(JobOptions.CHECKPOINT_INTERVAL, "2s")
            .with(JobOptions.OUT_OF_ORDERNESS, "1s")
            .with(JobOptions.IDLENESS, "3s");

    err.println("collscope demo: starting the ranks and Kafka...");
    err.flush();
    // The ranks first: a backend that cannot start (no GPU for --backend cuda) fails fast.
    try (CollectiveBackend ranksBackend =
            recording == null ? Backends.create(kind, config, plan) : null;
        EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      JobOptions opts = options.with(JobOptions.BOOTSTRAP, kafka.bootstrapServers());
      kafka.createTopics(
          4,
          opts.get(JobOptions.SNAPSHOT_TOPIC),
          opts.get(JobOptions.RANK_WINDOW_TOPIC),
          opts.get(JobOptions.ATTRIBUTION_TOPIC),
          opts.get(JobOptions.DEADLETTER_TOPIC));

      Configuration conf = new Configuration();
      conf.set(RestOptions.BIND_PORT, uiPort + "-" + (uiPort + 20));
      StreamExecutionEnvironment env =
          StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(conf);
      env.setParallelism(2);
      AttributionJob.configure(env, opts);
      AttributionJob.topology(
          env, AttributionJob.kafkaSource(opts), AttributionJob.kafkaSinks(opts), opts);
      JobClient job = env.executeAsync(AttributionJob.JOB_NAME);
      err.printf(
          "collscope demo: Kafka at %s, Flink job %s (web UI on http://localhost:%d if free), %d %s ranks, faults %s, %ds%n",
          kafka.bootstrapServers(),
          job.getJobID(),
          uiPort,
          ranks,
          ranksBackend == null ? "recorded" : ranksBackend.name(),
          recording == null ? plan.toString() : "as recorded in " + replay,
          recording == null
              ? seconds
              : (recording.get(recording.size() - 1).getEventTime().toEpochMilli()
                      - recording.get(0).getEventTime().toEpochMilli())
                  / 1000);
      err.flush();

      String shownCommunicator = communicator;
      AtomicLong lastWindowEnd = new AtomicLong();
      AtomicBoolean stopReader = new AtomicBoolean();
      Instant[] span = new Instant[2];
      Thread reader =
          new Thread(
              () ->
                  readAttributions(
                      shownCommunicator,
                      kafka.bootstrapServers(),
                      opts,
                      out,
                      err,
                      stopReader,
                      lastWindowEnd,
                      span),
              "collscope-demo-reader");
      reader.setDaemon(true);
      reader.start();

      span[0] = Instant.now();
      Emitter.Result result;
      if (recording == null) {
        Emitter emitter =
            new Emitter(
                ranksBackend,
                Identity.of("local", "demo", communicator),
                KafkaSnapshotSink.connect(
                    kafka.bootstrapServers(),
                    opts.get(JobOptions.SNAPSHOT_TOPIC),
                    4,
                    Duration.ofSeconds(30)),
                interval);
        Thread hook = new Thread(emitter::requestStop, "collscope-demo-sigint");
        Runtime.getRuntime().addShutdownHook(hook);
        result = emitter.run(Duration.ofSeconds(seconds));
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // already shutting down: carry on with the cleanup
        }
      } else {
        try (KafkaSnapshotSink sink =
            KafkaSnapshotSink.connect(
                kafka.bootstrapServers(),
                opts.get(JobOptions.SNAPSHOT_TOPIC),
                4,
                Duration.ofSeconds(30))) {
          io.collscope.emitter.Replayer.replay(recording, sink, true);
          result =
              new Emitter.Result(recording.size(), sink.failed(), 0, java.util.Optional.empty());
        }
      }
      span[1] = Instant.now();

      // The window that holds the last snapshots closes once the watermark passes its end.
      long lastFull = span[1].toEpochMilli() / window.toMillis() * window.toMillis();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (lastWindowEnd.get() < lastFull && System.nanoTime() < deadline) {
        Thread.sleep(200);
      }
      stopReader.set(true);
      reader.join(5_000);
      job.cancel().get();
      err.printf(
          "collscope demo: done; %d snapshots published, %d failed deliveries%n",
          result.published(), result.failedDeliveries());
      err.flush();
      if (result.failure().isPresent()) {
        err.println("collscope demo: backend failed: " + result.failure().get());
        return Defaults.EXIT_FAILURE;
      }
      return Defaults.EXIT_OK;
    }
  }

  private void readAttributions(
      String communicator,
      String bootstrap,
      JobOptions options,
      PrintWriter out,
      PrintWriter err,
      AtomicBoolean stop,
      AtomicLong lastWindowEnd,
      Instant[] span) {
    try (KafkaConsumer<byte[], byte[]> c = TopicDrainer.consumer(bootstrap, true)) {
      c.subscribe(List.of(options.get(JobOptions.ATTRIBUTION_TOPIC)));
      while (!stop.get()) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          Attribution a;
          try {
            a = AvroCodec.of(Attribution.class).decode(r.value());
          } catch (DecodeException e) {
            err.println("collscope demo: undecodable attribution: " + e.getMessage());
            continue;
          }
          if (!a.getCommunicator().equals(communicator)) continue;
          boolean full =
              span[0] != null
                  && !a.getWindowStart().isBefore(span[0])
                  && (span[1] == null || !a.getWindowEnd().isAfter(span[1]));
          out.println(json ? jsonLine(a, full) : table(a, full));
          out.flush();
          lastWindowEnd.accumulateAndGet(a.getWindowEnd().toEpochMilli(), Math::max);
        }
      }
    } catch (RuntimeException e) {
      err.println("collscope demo: attribution reader stopped: " + e);
    }
  }

  static String jsonLine(Attribution a, boolean full) {
    Finding top = a.getFindings().isEmpty() ? null : a.getFindings().get(0);
    boolean link = top != null && top.getKind() == FindingKind.SLOW_LINK;
    StringBuilder sb = new StringBuilder(256);
    sb.append("{\"window_start\":");
    RecordJson.string(a.getWindowStart().toString(), sb);
    sb.append(",\"window_end\":");
    RecordJson.string(a.getWindowEnd().toString(), sb);
    sb.append(",\"full_window\":").append(full);
    sb.append(",\"communicator\":");
    RecordJson.string(a.getCommunicator(), sb);
    sb.append(",\"verdict\":");
    RecordJson.string(a.getVerdict().name(), sb);
    sb.append(",\"rank\":").append(top == null || link ? "null" : Integer.toString(top.getRank()));
    sb.append(",\"link\":");
    if (link) RecordJson.string(top.getFromRank() + "->" + top.getRank(), sb);
    else sb.append("null");
    sb.append(",\"cause\":");
    if (top == null) sb.append("null");
    else RecordJson.string(top.getCause().name(), sb);
    sb.append(",\"confidence\":");
    RecordJson.write(a.getConfidence(), sb);
    sb.append(",\"max_wait_rank\":").append(a.getMaxWaitRank());
    sb.append(",\"max_wait_us\":");
    RecordJson.write(a.getMaxWaitMeanUs(), sb);
    sb.append(",\"missing_ranks\":");
    RecordJson.write(a.getMissingRanks(), sb);
    sb.append(",\"findings\":");
    RecordJson.write(a.getFindings(), sb);
    return sb.append('}').toString();
  }

  static String table(Attribution a, boolean full) {
    StringBuilder sb = new StringBuilder();
    StringBuilder verdict = new StringBuilder();
    for (Finding f : a.getFindings()) {
      if (verdict.length() > 0) verdict.append(" + ");
      verdict.append(
          f.getKind() == FindingKind.SLOW_LINK
              ? String.format(Locale.ROOT, "SLOW_LINK(%d->%d)", f.getFromRank(), f.getRank())
              : String.format(Locale.ROOT, "SLOW_RANK(%d, %s)", f.getRank(), f.getCause()));
    }
    sb.append(
        String.format(
            Locale.ROOT,
            "%nwindow %s-%s%s  %s  %s  confidence %.2f  max wait %.1fus @ rank %d  missing %s%n",
            HMS.format(a.getWindowStart()),
            HMS.format(a.getWindowEnd()),
            full ? "" : " (partial)",
            a.getCommunicator(),
            verdict.length() == 0 ? "NONE" : verdict,
            a.getConfidence(),
            a.getMaxWaitMeanUs(),
            a.getMaxWaitRank(),
            a.getMissingRanks().isEmpty() ? "-" : a.getMissingRanks().toString()));
    sb.append(String.format(Locale.ROOT, "%6s %9s", "rank", "calls"));
    for (Phase p : Phase.values())
      sb.append(String.format(Locale.ROOT, " %10s", p.fieldName() + "_us"));
    sb.append(String.format(Locale.ROOT, " %9s%n", "p99_us"));
    for (RankPhases r : a.getRanks()) {
      sb.append(String.format(Locale.ROOT, "%6d %9d", r.getRank(), r.getCalls()));
      for (Phase p : Phase.values()) {
        sb.append(String.format(Locale.ROOT, " %10.1f", (Double) r.get(p.meanUsField())));
      }
      sb.append(String.format(Locale.ROOT, " %9.0f%n", r.getP99Us()));
    }
    return sb.toString().stripTrailing();
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
