package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.flink.testing.SessionCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shaded job jar submitted to a real Flink session cluster: a JobManager and two TaskManagers
 * in their own JVMs, started from the Flink jars (no collscope class, no Kafka or Avro client on
 * their classpath: the job jar must bring everything it needs), and the real broker.
 */
class SessionClusterITCase {

  /** Configuration and the cluster's logs; kept under target/ for a failed run's post-mortem. */
  private static final Path dir = Path.of("target/session-cluster").toAbsolutePath();

  /** TaskManagers of the session cluster, one slot each; the job runs at this parallelism. */
  static final int TASK_MANAGERS = 2;

  private static EmbeddedKafka kafka;
  private static SessionCluster cluster;

  @BeforeAll
  static void startClusterAndBroker() throws Exception {
    // Two TaskManagers of one slot each, and the job at parallelism 2: its keyed operators are
    // spread over two JVMs, as on a real cluster.
    cluster =
        SessionCluster.start(
            dir,
            Map.of(
                "taskmanager.numberOfTaskSlots",
                "1",
                "parallelism.default",
                String.valueOf(TASK_MANAGERS)));
    for (int i = 1; i < TASK_MANAGERS; i++) cluster.startTaskManager();
    kafka = EmbeddedKafka.startTemporary();
    cluster.awaitTaskManagers(TASK_MANAGERS);
  }

  @AfterAll
  static void stopAll() throws Exception {
    if (cluster != null) cluster.close();
    if (kafka != null) kafka.close();
  }

  @Test
  void theShadedJobJarRunsOnASessionClusterAndNamesASlowRank() throws Exception {
    String run = EmbeddedKafka.freshTopic("cluster");
    Duration window = Duration.ofSeconds(3);
    Path history = dir.resolve("history");
    JobOptions options =
        AttributionScenarios.testOptions(kafka.bootstrapServers(), run, window)
            .with(JobOptions.HISTORY_PATH, history.toUri().toString())
            // Every partition has data here: a split is idle only when its source subtask
            // stalls, which two TaskManager JVMs on a loaded 2-core host do for seconds. Idle, it
            // would let the watermark pass its rank's windows (the rank then reads missing).
            .with(JobOptions.IDLENESS, "10s")
            // The cluster has no execution.checkpointing.dir: the job's option names one.
            .with(JobOptions.CHECKPOINT_DIR, dir.resolve("checkpoints").toUri().toString());
    KafkaSnapshotSink.connect(
            kafka.bootstrapServers(),
            options.get(JobOptions.SNAPSHOT_TOPIC),
            4,
            Duration.ofSeconds(30))
        .close();

    List<String> args = new ArrayList<>();
    for (String name : JobOptions.DEFAULTS.keySet()) {
      args.add("--" + name);
      args.add(options.get(name));
    }
    // Submitted as a user would: `flink run -d JAR ARGS`, from a JVM with Flink's jars only.
    JobID id = cluster.submit(args, null);
    try (RestClusterClient<StandaloneClusterId> client = cluster.client()) {
      cluster.awaitRunning(id);

      AttributionScenarios scenarios =
          new AttributionScenarios(kafka.bootstrapServers(), options, Duration.ofMillis(300), 4);
      // A smoke test of the path, not of sensitivity (docs/ACCURACY.md measures that): the fault
      // stands far above the noise a loaded 2-core host puts into the threshold.
      Instant[] span = scenarios.emit("cluster-slow-rank", 4, "slow-rank=2:10ms");
      List<Attribution> windows = scenarios.fullWindows("cluster-slow-rank", span);
      AttributionScenarios.assertNamedFromSecondFullWindow(
          windows, io.collscope.avro.FindingKind.SLOW_RANK, 2, -1);
      assertThat(client.getJobStatus(id).get()).isEqualTo(JobStatus.RUNNING);
      // Every slot of both TaskManagers runs a part of the job.
      String tms = restGet(client.getWebInterfaceURL() + "/taskmanagers");
      assertThat(countOf(tms, "\"slotsNumber\":1")).as(tms).isEqualTo(TASK_MANAGERS);
      assertThat(countOf(tms, "\"freeSlots\":0")).as(tms).isEqualTo(TASK_MANAGERS);
      // The same verdicts in the history files, committed by the checkpoints since.
      assertThat(slowRankWindowsInHistory(history, "cluster-slow-rank", Duration.ofSeconds(30)))
          .as("windows naming rank 2 in %s", history)
          .isPositive();
      client.cancel(id).get();
    }
  }

  @Test
  void withoutDurableCheckpointStorageTheJobRefusesToStartInOneLine() throws Exception {
    // No execution.checkpointing.dir on the cluster, no --checkpoint-dir: the JobManager's memory
    // would take the checkpoints, and refuse them once the state passes 5 MB.
    try (RestClusterClient<StandaloneClusterId> client = cluster.client()) {
      int jobs = client.listJobs().get().size();
      SessionCluster.FlinkRun run = cluster.run(List.of("--bootstrap", kafka.bootstrapServers()));
      assertThat(run.exitCode()).as(run.output()).isEqualTo(2);
      assertThat(run.output())
          .contains(
              AttributionJob.JOB_NAME
                  + ": no durable checkpoint storage: the cluster has no"
                  + " execution.checkpointing.dir; set");
      assertThat(client.listJobs().get()).as("no job started").hasSize(jobs);
    }
  }

  private static String restGet(String url) throws Exception {
    return java.net.http.HttpClient.newHttpClient()
        .send(
            java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static int countOf(String s, String what) {
    int n = 0;
    for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) n++;
    return n;
  }

  /** Attribution rows naming rank 2 slow, read by DuckDB from the history, once there are some. */
  private static long slowRankWindowsInHistory(Path history, String communicator, Duration timeout)
      throws Exception {
    String glob = history.resolve(HistoryLayout.glob(HistoryLayout.ATTRIBUTIONS)).toString();
    Instant deadline = Instant.now().plus(timeout);
    while (true) {
      try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:duckdb:");
          java.sql.Statement s = c.createStatement();
          java.sql.ResultSet rs =
              s.executeQuery(
                  "SELECT count(*) FROM read_parquet('"
                      + glob
                      + "') WHERE communicator = '"
                      + communicator
                      + "' AND findings[1].kind = 'SLOW_RANK' AND findings[1].rank = 2")) {
        rs.next();
        if (rs.getLong(1) > 0 || Instant.now().isAfter(deadline)) return rs.getLong(1);
      } catch (java.sql.SQLException e) {
        // no file committed yet
        if (Instant.now().isAfter(deadline)) throw e;
      }
      Thread.sleep(500);
    }
  }
}
