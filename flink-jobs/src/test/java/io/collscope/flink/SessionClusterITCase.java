package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.history.HistoryLayout;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shaded job jar submitted to a real Flink session cluster: a JobManager and a TaskManager in
 * their own JVMs, started from the Flink jars (no collscope class, no Kafka or Avro client on their
 * classpath: the job jar must bring everything it needs), and the real broker.
 */
class SessionClusterITCase {

  private static final Path JOB_JAR =
      Path.of("target/collscope-flink-jobs-0.1.0-SNAPSHOT-job.jar").toAbsolutePath();

  /** What a Flink distribution passes every JVM on Java 17 (its config.yaml env.java.opts.all). */
  private static final List<String> FLINK_JVM_OPTS =
      List.of(
          "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
          "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.net=ALL-UNNAMED",
          "--add-opens=java.base/java.io=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
          "--add-opens=java.base/java.text=ALL-UNNAMED",
          "--add-opens=java.base/java.time=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED");

  /** Configuration and the cluster's logs; kept under target/ for a failed run's post-mortem. */
  private static final Path dir = Path.of("target/session-cluster").toAbsolutePath();

  private static EmbeddedKafka kafka;
  private static final List<Process> cluster = new ArrayList<>();
  private static int restPort;

  @BeforeAll
  static void startClusterAndBroker() throws Exception {
    assertThat(JOB_JAR).as("the shaded job jar (mvn package)").exists();
    if (Files.exists(dir)) {
      try (var walk = Files.walk(dir)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
    kafka = EmbeddedKafka.startTemporary();
    restPort = EmbeddedKafka.freePort();
    Path conf = dir.resolve("conf");
    Files.createDirectories(conf);
    Files.writeString(
        conf.resolve("config.yaml"),
        String.join(
            "\n",
            "jobmanager.rpc.address: localhost",
            "jobmanager.bind-host: localhost",
            "jobmanager.rpc.port: " + EmbeddedKafka.freePort(),
            "rest.address: localhost",
            "rest.bind-address: localhost",
            "rest.port: " + restPort,
            "taskmanager.host: localhost",
            "taskmanager.bind-host: localhost",
            "taskmanager.numberOfTaskSlots: 2",
            "jobmanager.memory.process.size: 1024m",
            // Flink's start scripts derive these for a TaskManager; started directly, it
            // needs them spelled out.
            "taskmanager.cpu.cores: 2",
            "taskmanager.memory.framework.heap.size: 128m",
            "taskmanager.memory.task.heap.size: 384m",
            "taskmanager.memory.framework.off-heap.size: 128m",
            "taskmanager.memory.task.off-heap.size: 0m",
            "taskmanager.memory.network.min: 64m",
            "taskmanager.memory.network.max: 64m",
            "taskmanager.memory.managed.size: 64m",
            "taskmanager.memory.jvm-metaspace.size: 256m",
            "taskmanager.memory.jvm-overhead.min: 192m",
            "taskmanager.memory.jvm-overhead.max: 192m",
            ""));
    Files.writeString(
        conf.resolve("log4j.properties"),
        String.join(
            "\n",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.out.ref = out",
            "appender.out.type = Console",
            "appender.out.name = out",
            "appender.out.layout.type = PatternLayout",
            "appender.out.layout.pattern = %d{HH:mm:ss.SSS} %-5p %c{1} - %m%n",
            "logger.kafka.name = org.apache.kafka",
            "logger.kafka.level = WARN",
            ""));
    String cp = flinkOnlyClasspath();
    cluster.add(
        start(
            cp,
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
            conf,
            "jobmanager"));
    cluster.add(
        start(cp, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", conf, "taskmanager"));
  }

  @AfterAll
  static void stopAll() throws Exception {
    for (Process p : cluster) {
      p.destroy();
      if (!p.waitFor(20, TimeUnit.SECONDS)) p.destroyForcibly();
    }
    if (kafka != null) kafka.close();
  }

  private static Process start(String cp, String main, Path conf, String name) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(FLINK_JVM_OPTS);
    cmd.addAll(
        List.of(
            "-Xmx768m",
            "-XX:MaxDirectMemorySize=256m",
            "-Dlog.file=" + dir.resolve(name + ".log"),
            "-Dlog4j.configurationFile=" + conf.resolve("log4j.properties"),
            "-cp",
            cp,
            main,
            "--configDir",
            conf.toString()));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve(name + ".out").toFile())
        .start();
  }

  /**
   * This JVM's classpath without collscope's own classes, Kafka, Avro and the connector: what a
   * Flink distribution's lib/ holds. Failsafe hands the classpath over in a manifest-only jar.
   */
  static String flinkOnlyClasspath() throws IOException {
    List<String> entries = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (e.contains("surefirebooter") || e.contains("failsafe")) {
        try (JarFile jar = new JarFile(e)) {
          String cp = jar.getManifest().getMainAttributes().getValue("Class-Path");
          for (String url : cp.split(" ")) {
            if (!url.isBlank()) entries.add(Path.of(URI.create(url)).toString());
          }
        }
      } else {
        entries.add(e);
      }
    }
    List<String> kept = new ArrayList<>();
    for (String e : entries) {
      String n = e.replace('\\', '/');
      boolean ours =
          n.contains("/collscope-")
              || n.contains("/target/classes")
              || n.contains("/target/test-classes");
      // What the job jar bundles: the history's Parquet writer and the Hadoop classes it loads
      // included, so that a missing one fails here as it would on a cluster. (DuckDB is the
      // test's reader.)
      boolean bundled =
          n.contains("/kafka")
              || n.contains("/avro")
              || n.contains("flink-avro")
              || n.contains("flink-connector-kafka")
              || n.contains("flink-parquet")
              || n.contains("/parquet")
              || n.contains("/hadoop")
              || n.contains("woodstox")
              || n.contains("/duckdb");
      if (!ours && !bundled) kept.add(e);
    }
    return String.join(File.pathSeparator, kept);
  }

  @Test
  void theShadedJobJarRunsOnASessionClusterAndNamesASlowRank() throws Exception {
    String run = EmbeddedKafka.freshTopic("cluster");
    Duration window = Duration.ofSeconds(3);
    Path history = dir.resolve("history");
    JobOptions options =
        AttributionScenarios.testOptions(kafka.bootstrapServers(), run, window)
            .with(JobOptions.HISTORY_PATH, history.toUri().toString());
    KafkaSnapshotSink.connect(
            kafka.bootstrapServers(),
            options.get(JobOptions.SNAPSHOT_TOPIC),
            4,
            Duration.ofSeconds(30))
        .close();

    Configuration conf = new Configuration();
    conf.set(RestOptions.ADDRESS, "localhost");
    conf.set(RestOptions.PORT, restPort);
    List<String> args = new ArrayList<>();
    for (String name : JobOptions.DEFAULTS.keySet()) {
      args.add("--" + name);
      args.add(options.get(name));
    }
    // Submitted as a user would: `flink run -d JAR ARGS`, from a JVM with Flink's jars only.
    JobID id = flinkRunDetached(args);
    try (RestClusterClient<StandaloneClusterId> client =
        new RestClusterClient<>(conf, StandaloneClusterId.getInstance())) {
      awaitRunning(client, id);

      AttributionScenarios scenarios =
          new AttributionScenarios(kafka.bootstrapServers(), options, Duration.ofMillis(300), 4);
      // A smoke test of the path, not of sensitivity (docs/ACCURACY.md measures that): the fault
      // stands far above the noise a loaded 2-core host puts into the threshold.
      Instant[] span = scenarios.emit("cluster-slow-rank", 4, "slow-rank=2:10ms");
      List<Attribution> windows = scenarios.fullWindows("cluster-slow-rank", span);
      AttributionScenarios.assertNamedFromSecondFullWindow(
          windows, io.collscope.avro.FindingKind.SLOW_RANK, 2, -1);
      assertThat(client.getJobStatus(id).get()).isEqualTo(JobStatus.RUNNING);
      // The same verdicts in the history files, committed by the checkpoints since.
      assertThat(slowRankWindowsInHistory(history, "cluster-slow-rank", Duration.ofSeconds(30)))
          .as("windows naming rank 2 in %s", history)
          .isPositive();
      client.cancel(id).get();
    }
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

  private static JobID flinkRunDetached(List<String> jobArgs) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(FLINK_JVM_OPTS);
    cmd.add("-cp");
    cmd.add(flinkOnlyClasspath());
    cmd.add("org.apache.flink.client.cli.CliFrontend");
    cmd.add("run");
    cmd.add("-d");
    cmd.add(JOB_JAR.toString());
    cmd.addAll(jobArgs);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    String out = "";
    while (System.nanoTime() < deadline) {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.environment().put("FLINK_CONF_DIR", dir.resolve("conf").toString());
      Process p = pb.start();
      out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      p.waitFor(60, TimeUnit.SECONDS);
      java.util.regex.Matcher m =
          java.util.regex.Pattern.compile("JobID ([0-9a-f]{32})").matcher(out);
      if (m.find()) {
        return JobID.fromHexString(m.group(1));
      }
      Thread.sleep(2000); // the cluster may still be starting
    }
    throw new AssertionError("flink run did not submit the job:\n" + out);
  }

  private static void awaitRunning(RestClusterClient<?> client, JobID id) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    JobStatus s = null;
    while (System.nanoTime() < deadline) {
      s = client.getJobStatus(id).get();
      if (s == JobStatus.RUNNING) return;
      assertThat(s.isGloballyTerminalState()).as("job status %s; see %s", s, dir).isFalse();
      Thread.sleep(500);
    }
    throw new AssertionError("job not running after 120 s: " + s + "; see " + dir);
  }
}
