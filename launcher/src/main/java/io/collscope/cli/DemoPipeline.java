package io.collscope.cli;

import io.collscope.cluster.FlinkRest;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.kafka.BrokerUnreachableException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.WebOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The demo's pipeline on this machine: the job's topics on a {@link DemoKafka} (a temporary broker
 * of its own, or the run's topics on an existing cluster), and the attribution job on a local
 * MiniCluster with its web UI. The job's checkpoints (and the savepoint it stops with) go to files
 * in the run's directory, a temporary one: its state at thousands of ranks is more than the
 * JobManager's memory takes. Closing it stops the job and removes the broker and its data, or the
 * run's topics, and the run's directory.
 */
final class DemoPipeline implements AutoCloseable {

  private static final int PARTITIONS = 4;

  /** The web UI takes the first free port from the one asked for up to this many above it. */
  private static final int UI_PORTS = 20;

  /**
   * Checkpoints the job's statistics keep (Flink's default: 10): all of a demo's, so that failed
   * checkpoints are told from those never started ({@link #checkpoints}).
   */
  private static final int CHECKPOINT_HISTORY = 10_000;

  /**
   * The job's checkpoints: {@code failed} the ones that started and failed (the storage refused the
   * state, a task declined, it expired); {@code notStarted} those Flink counts as failed although
   * it never started them, because a task was not yet running (the job's first seconds).
   */
  record Checkpoints(
      long completed, long failed, long notStarted, long latestStateBytes, String lastFailure) {}

  private final DemoKafka kafka;
  private final Path runDir;
  private final JobOptions options;
  private final JobClient job;
  private final int uiPort;

  private DemoPipeline(
      DemoKafka kafka, Path runDir, JobOptions options, JobClient job, int uiPort) {
    this.kafka = kafka;
    this.runDir = runDir;
    this.options = options;
    this.job = job;
    this.uiPort = uiPort;
  }

  /**
   * Starts the broker and the job, without history; the web UI takes the first free port from
   * {@code uiPort} up to {@code uiPort + 20}.
   */
  static DemoPipeline start(Duration window, double minExcessUs, double absFloorUs, int uiPort)
      throws Exception {
    return start(window, minExcessUs, absFloorUs, uiPort, null);
  }

  /**
   * As above on a temporary broker of its own, with the job's history written under {@code history}
   * unless it is null.
   */
  static DemoPipeline start(
      Duration window, double minExcessUs, double absFloorUs, int uiPort, Path history)
      throws Exception {
    return start(DemoKafka.embedded(), window, minExcessUs, absFloorUs, uiPort, history);
  }

  /** As above on {@code kafka}, which the pipeline owns from now on (and closes on failure). */
  static DemoPipeline start(
      DemoKafka kafka,
      Duration window,
      double minExcessUs,
      double absFloorUs,
      int uiPort,
      Path history)
      throws Exception {
    Path runDir = null;
    try {
      runDir = Files.createTempDirectory("collscope-demo-");
      JobOptions options =
          kafka.configure(
              jobOptions(window, minExcessUs)
                  .with(JobOptions.ABS_FLOOR_US, Double.toString(absFloorUs))
                  .with(
                      JobOptions.HISTORY_PATH,
                      history == null ? "" : history.toAbsolutePath().toUri().toString())
                  .with(
                      JobOptions.CHECKPOINT_DIR, runDir.resolve("checkpoints").toUri().toString()));
      kafka.createTopics(
          PARTITIONS,
          List.of(
              options.get(JobOptions.SNAPSHOT_TOPIC),
              options.get(JobOptions.RANK_WINDOW_TOPIC),
              options.get(JobOptions.ATTRIBUTION_TOPIC),
              options.get(JobOptions.DEADLETTER_TOPIC),
              options.get(JobOptions.ALERT_TOPIC)));
      Configuration conf = new Configuration();
      conf.set(RestOptions.BIND_PORT, uiPort + "-" + (uiPort + UI_PORTS));
      conf.set(WebOptions.CHECKPOINTS_HISTORY_SIZE, CHECKPOINT_HISTORY);
      StreamExecutionEnvironment env =
          StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(conf);
      env.setParallelism(2);
      AttributionJob.configure(env, options);
      AttributionJob.topology(
          env, AttributionJob.kafkaSource(options), AttributionJob.kafkaSinks(options), options);
      return new DemoPipeline(
          kafka, runDir, options, env.executeAsync(AttributionJob.JOB_NAME), uiPort);
    } catch (Throwable t) {
      kafka.close();
      if (runDir != null) deleteRecursively(runDir);
      throw t;
    }
  }

  /**
   * The production job's options with shorter out-of-orderness, idleness and checkpoints, so that
   * windows show a few seconds after they close rather than ten.
   */
  static JobOptions jobOptions(Duration window, double minExcessUs) {
    return JobOptions.defaults()
        .with(JobOptions.WINDOW, window.toMillis() + "ms")
        .with(JobOptions.MIN_EXCESS_US, Double.toString(minExcessUs))
        .with(JobOptions.CHECKPOINT_INTERVAL, "2s")
        .with(JobOptions.OUT_OF_ORDERNESS, "1s")
        .with(JobOptions.IDLENESS, "3s");
  }

  String bootstrapServers() {
    return kafka.bootstrapServers();
  }

  /**
   * Client properties for {@code reader}, a reader of the job's outputs (TLS, SASL, a group of its
   * own on a cluster).
   */
  Map<String, String> readerProperties(String reader) {
    return kafka.readerProperties(reader);
  }

  String attributionTopic() {
    return options.get(JobOptions.ATTRIBUTION_TOPIC);
  }

  String alertTopic() {
    return options.get(JobOptions.ALERT_TOPIC);
  }

  JobID jobId() {
    return job.getJobID();
  }

  /**
   * The job's checkpoints so far, from the MiniCluster's REST API; empty if it does not answer. The
   * web UI took the first free port of its range, which the job client does not tell: each port of
   * the range is asked for this job.
   */
  Optional<Checkpoints> checkpoints() {
    for (int port = uiPort; port <= uiPort + UI_PORTS; port++) {
      try {
        FlinkRest.CheckpointCounts c =
            new FlinkRest(URI.create("http://localhost:" + port + "/"))
                .checkpoints(job.getJobID().toHexString());
        // A full history holds every checkpoint that started; a truncated one cannot tell.
        long failed = c.history() < CHECKPOINT_HISTORY ? c.failedInHistory() : c.failed();
        return Optional.of(
            new Checkpoints(
                c.completed(), failed, c.failed() - failed, c.latestStateBytes(), c.lastFailure()));
      } catch (IOException e) {
        // nothing there, or another server without this job: the next port
      }
    }
    return Optional.empty();
  }

  /** A producer into the job's snapshot topic; the caller closes it. */
  KafkaSnapshotSink snapshotSink() throws BrokerUnreachableException {
    return KafkaSnapshotSink.connect(
        kafka.bootstrapServers(),
        kafka.client(),
        options.get(JobOptions.SNAPSHOT_TOPIC),
        PARTITIONS,
        Duration.ofSeconds(30));
  }

  /**
   * The end of the last window the job will attribute when the snapshots stop at {@code t}: the
   * watermark trails the last snapshot by the out-of-orderness and, once every input is idle, moves
   * no further, so only windows that end by {@code t} minus the out-of-orderness ever fire (waiting
   * for a later one would sit out the whole timeout).
   */
  Instant lastWindowEndBefore(Instant t) {
    long window = options.duration(JobOptions.WINDOW).toMillis();
    long watermark = t.toEpochMilli() - options.duration(JobOptions.OUT_OF_ORDERNESS).toMillis();
    return Instant.ofEpochMilli(Math.floorDiv(watermark, window) * window);
  }

  @Override
  public void close() throws Exception {
    try {
      // A job that already ended (failed, or finished) cannot be stopped.
      if (!job.getJobStatus().get(30, TimeUnit.SECONDS).isGloballyTerminalState()) {
        stop();
      }
    } finally {
      try {
        kafka.close();
      } finally {
        deleteRecursively(runDir);
      }
    }
  }

  /**
   * Stops the job with a savepoint, which the history sinks commit like a checkpoint: what the job
   * wrote since its last checkpoint reaches the history files too, and no in-progress file is left
   * behind. Cancels it where that fails.
   */
  private void stop() throws Exception {
    if (options.get(JobOptions.HISTORY_PATH).isEmpty()) {
      job.cancel().get(30, TimeUnit.SECONDS);
      return;
    }
    Path savepoints = runDir.resolve("savepoints");
    try {
      job.stopWithSavepoint(false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
          .get(60, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      if (!job.getJobStatus().get(30, TimeUnit.SECONDS).isGloballyTerminalState()) {
        job.cancel().get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
