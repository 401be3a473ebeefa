package io.collscope.cli;

import io.collscope.alerts.AlertForwarder;
import io.collscope.alerts.AlertmanagerClient;
import io.collscope.backend.Backends;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.DecodeException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope demo}: the whole pipeline on one machine. An embedded Kafka broker (or, with
 * {@code --kafka}, topics of the run's own on an existing cluster, reached with {@code
 * --kafka-config}), N ranks emitting snapshots, the attribution job on a local MiniCluster (web UI
 * on 8081), and a live view of the attribution topic — a table per window, or one JSON object per
 * window.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description =
        "Run broker, emitters and the attribution job locally and print each window's verdict.")
final class DemoCommand implements Callable<Integer> {

  // emit's default --cluster and --job: the demo's records are named as emit's are.
  private static final String CLUSTER = "local";
  private static final String JOB = "demo";

  /** How long an existing cluster (--kafka) has to answer and accept the demo's login. */
  private static final Duration KAFKA_TIMEOUT = Duration.ofSeconds(10);

  /** How long after the feed stopped the last full window may take to show. */
  private static final Duration LAST_WINDOW_TIMEOUT = Duration.ofSeconds(20);

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @CommandLine.Mixin RankOptions rankOptions;

  // Not named --bootstrap on purpose: emit's --bootstrap takes COLLSCOPE_BOOTSTRAP and the
  // configuration file's `bootstrap`, and an installation that sets those for its emitters must
  // not turn every demo into a run on its production cluster. The demo uses a cluster only when
  // asked on its command line (or by demo.kafka in the file).
  @Option(
      names = "--kafka",
      paramLabel = "HOST:PORT",
      description =
          "Run on this existing Kafka cluster instead of a temporary broker of its own: the demo"
              + " creates topics named collscope-demo-<run>.* there and deletes them at the end"
              + " (the ACLs it needs: docs/RELIABILITY.md).")
  String kafka;

  @CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Option(
      names = "--seconds",
      // 90: nine 10 s windows; with --inject slow-rank=5:300us on 8 ranks the job names rank 5 from
      // the first full window and the alert fires on the third (2026-12-06, a 2-core VM:
      // docs/accuracy/2026-12-06/demo-300us-cpu-8.txt), with room for a slower machine
      defaultValue = "90",
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
      arity = "1..*",
      description =
          "Instead of running ranks, replay recordings from 'collscope emit --record' (e.g. made on GPU nodes, one file per rank's process), merged by event time.")
  List<Path> replay;

  @Option(
      names = "--alertmanager",
      description =
          "Also forward the job's alerts to this running Prometheus Alertmanager (API v2), as"
              + " 'collscope alerts forward' does")
  String alertmanager;

  @Option(
      names = "--history",
      defaultValue = Defaults.HISTORY,
      description =
          "Write the job's rank windows, attributions and alerts as Parquet under this folder"
              + " (docs/HISTORY.md; 'collscope query', 'collscope history'). Default:"
              + " ${DEFAULT-VALUE}")
  Path history;

  @Option(names = "--no-history", description = "Write no history.")
  boolean noHistory;

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
      description =
          "Smallest excess wait (us/collective) attributed for counters without per-peer"
              + " lateness (recordings of older emitters). Default: ${DEFAULT-VALUE}")
  double minExcessUs;

  @Option(
      names = "--abs-floor-us",
      defaultValue = "5",
      description =
          "Smallest excess lateness (us/collective) attributed; the rule raises it with the"
              + " collective's cost and the window's noise. Default: ${DEFAULT-VALUE}")
  double absFloorUs;

  @Override
  public Integer call() throws Exception {
    checkOptions();
    PrintWriter err = spec.commandLine().getErr();
    if (kafka != null) {
      try {
        kafkaClient.checkAccepted(kafka, KAFKA_TIMEOUT);
      } catch (BrokerUnreachableException e) {
        err.println("collscope demo: " + e.getMessage());
        err.flush();
        return Defaults.EXIT_BROKER_UNREACHABLE;
      }
    }
    err.println("collscope demo: starting the ranks and Kafka...");
    err.flush();
    AttributionPrinter printer = new AttributionPrinter(spec.commandLine().getOut(), json);
    // The feed first: ranks that cannot start (no GPU for --backend cuda) fail before Kafka does.
    try (SnapshotFeed feed = feed();
        DemoPipeline pipeline =
            DemoPipeline.start(
                kafka == null
                    ? DemoKafka.embedded()
                    : DemoKafka.existing(kafka, kafkaClient.config(), err),
                window,
                minExcessUs,
                absFloorUs,
                uiPort,
                noHistory ? null : history);
        AttributionReader reader =
            AttributionReader.start(
                pipeline.bootstrapServers(),
                pipeline.readerProperties("view"),
                pipeline.attributionTopic(),
                feed.communicators(),
                printer,
                pipeline.alertTopic(),
                printer::alert,
                err);
        KafkaSnapshotSink sink = pipeline.snapshotSink()) {
      err.printf(
          "collscope demo: Kafka at %s, Flink job %s (web UI on http://localhost:%d if free), %s%n",
          pipeline.bootstrapServers(), pipeline.jobId(), uiPort, feed.describe());
      err.flush();

      Forwarding forwarding =
          alertmanager == null ? null : Forwarding.start(alertmanager, pipeline, err);
      printer.feedStarted(Instant.now());
      Emitter.Result result = feed.run(sink);
      Instant stopped = Instant.now();
      printer.feedStopped(stopped);
      reader.awaitWindowEnd(pipeline.lastWindowEndBefore(stopped), LAST_WINDOW_TIMEOUT);
      if (forwarding != null) forwarding.stop(err);
      pipeline
          .checkpoints()
          .ifPresent(
              c ->
                  err.printf(
                      java.util.Locale.ROOT,
                      "collscope demo: checkpoints: %d completed (the latest %.1f MB), %d"
                          + " failed%s%s%n",
                      c.completed(),
                      c.latestStateBytes() / 1e6,
                      c.failed(),
                      c.notStarted() == 0
                          ? ""
                          : ", " + c.notStarted() + " not started (a task was still starting)",
                      c.failed() == 0 || c.lastFailure() == null
                          ? ""
                          : " (the latest: "
                              + c.lastFailure().lines().findFirst().orElse("").strip()
                              + ")"));

      err.printf(
          "collscope demo: done; %d snapshots published, %d failed deliveries%n",
          result.published(), result.failedDeliveries());
      if (!noHistory) {
        err.printf(
            "collscope demo: history in %s (collscope history culprits --history %s)%n",
            history, history);
      }
      result.failure().ifPresent(f -> err.println("collscope demo: backend failed: " + f));
      err.flush();
      return result.failure().isPresent() ? Defaults.EXIT_FAILURE : Defaults.EXIT_OK;
    }
  }

  /** The demo's alerts forwarded to an Alertmanager on a thread of their own. */
  private record Forwarding(AlertForwarder forwarder, Thread thread) {
    static Forwarding start(String url, DemoPipeline pipeline, PrintWriter err) {
      AlertmanagerClient client =
          new AlertmanagerClient(AlertmanagerClient.parseUrl(url), Duration.ofSeconds(10));
      AlertForwarder f =
          new AlertForwarder(client, AlertForwarder.Config.of(Duration.ofSeconds(5), null));
      Thread t =
          new Thread(
              () -> {
                try (KafkaConsumer<byte[], byte[]> c =
                    TopicDrainer.consumer(
                        pipeline.bootstrapServers(), true, pipeline.readerProperties("alerts"))) {
                  f.run(c, pipeline.alertTopic());
                }
              },
              "collscope-demo-alerts");
      t.setDaemon(true);
      t.start();
      err.printf("collscope demo: forwarding alerts to %s%n", url);
      err.flush();
      return new Forwarding(f, t);
    }

    /** Lets the last transitions go out, then stops. */
    void stop(PrintWriter err) throws InterruptedException {
      Thread.sleep(2_000);
      forwarder.tick();
      forwarder.stop();
      thread.join(10_000);
      err.println("collscope demo: alerts forwarded: " + forwarder.stats());
    }
  }

  private void checkOptions() {
    if (alertmanager != null) {
      try {
        AlertmanagerClient.parseUrl(alertmanager);
      } catch (IllegalArgumentException e) {
        throw usage("--alertmanager " + e.getMessage());
      }
    }
    if (kafka == null && spec.commandLine().getParseResult().hasMatchedOption("--kafka-config")) {
      // (a file from the environment or the configuration file is for the other commands)
      throw usage("--kafka-config needs --kafka: the demo's own broker takes plain connections");
    }
    if (seconds < 1) throw usage("--seconds must be >= 1");
    if (window.toMillis() < 1000) throw usage("--window must be at least 1s");
    if (rankOptions.interval.compareTo(window) >= 0) {
      throw usage("--interval must be shorter than --window");
    }
    if (replay != null && !rankOptions.inject.isEmpty()) {
      throw usage("--inject and --replay exclude each other: faults are in the recording");
    }
    if (replay != null) {
      for (Path p : replay) {
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
          throw usage("--replay " + p + ": no such readable file");
        }
      }
    } else {
      // the ranks' options before anything starts or prints: a bad --ranks or --inject is the
      // one line of a usage error (IllegalArgumentException, exit code 2), not a line after
      // "starting the ranks and Kafka"
      rankOptions.faults();
      rankOptions.config();
    }
  }

  private SnapshotFeed feed() throws IOException, DecodeException {
    if (replay != null) return SnapshotFeed.recorded(replay);
    FaultPlan faults = rankOptions.faults();
    return SnapshotFeed.live(
        Backends.create(rankOptions.kind(), rankOptions.config(), faults),
        faults,
        new CommunicatorKey(CLUSTER, JOB, rankOptions.communicator),
        rankOptions.interval,
        Duration.ofSeconds(seconds));
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
