package io.collscope.flink.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.flink.FlinkJvmOptions;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;

/**
 * A real Flink session cluster for tests: a JobManager and TaskManagers in their own JVMs, started
 * from the Flink jars (no collscope class, no Kafka or Avro client on their classpath: a job jar
 * must bring everything it needs), their configuration and logs under one directory kept for a
 * failed run's post-mortem. Processes can be SIGKILLed and started again on the same ports, as a
 * crash and an operator's restart would.
 */
public final class SessionCluster implements AutoCloseable {

  /** The shaded job jar (mvn package). */
  public static final Path JOB_JAR =
      Path.of("target/collscope-flink-jobs-0.1.0-SNAPSHOT-job.jar").toAbsolutePath();

  private final Path dir;
  private final Path conf;
  private final String classpath;
  private final int restPort;
  private Process jobManager;
  private final List<Process> taskManagers = new ArrayList<>();
  private int starts;

  private SessionCluster(Path dir, String classpath, int restPort) {
    this.dir = dir;
    this.conf = dir.resolve("conf");
    this.classpath = classpath;
    this.restPort = restPort;
  }

  /**
   * Writes the configuration (plus {@code extra} settings) into a fresh {@code dir} and starts one
   * JobManager and one TaskManager with two slots; returns without waiting for them.
   */
  public static SessionCluster start(Path dir, Map<String, String> extra) throws IOException {
    assertThat(JOB_JAR).as("the shaded job jar (mvn package)").exists();
    if (Files.exists(dir)) {
      try (var walk = Files.walk(dir)) {
        walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
    int restPort = EmbeddedKafka.freePort();
    Map<String, String> c = new LinkedHashMap<>();
    c.put("jobmanager.rpc.address", "localhost");
    c.put("jobmanager.bind-host", "localhost");
    c.put("jobmanager.rpc.port", Integer.toString(EmbeddedKafka.freePort()));
    c.put("rest.address", "localhost");
    c.put("rest.bind-address", "localhost");
    c.put("rest.port", Integer.toString(restPort));
    c.put("taskmanager.host", "localhost");
    c.put("taskmanager.bind-host", "localhost");
    c.put("taskmanager.numberOfTaskSlots", "2");
    c.put("jobmanager.memory.process.size", "1024m");
    // Flink's start scripts derive these for a TaskManager; started directly, it needs them
    // spelled out.
    c.put("taskmanager.cpu.cores", "2");
    c.put("taskmanager.memory.framework.heap.size", "128m");
    c.put("taskmanager.memory.task.heap.size", "384m");
    c.put("taskmanager.memory.framework.off-heap.size", "128m");
    c.put("taskmanager.memory.task.off-heap.size", "0m");
    c.put("taskmanager.memory.network.min", "64m");
    c.put("taskmanager.memory.network.max", "64m");
    c.put("taskmanager.memory.managed.size", "64m");
    c.put("taskmanager.memory.jvm-metaspace.size", "256m");
    c.put("taskmanager.memory.jvm-overhead.min", "192m");
    c.put("taskmanager.memory.jvm-overhead.max", "192m");
    c.putAll(extra);
    SessionCluster cluster = new SessionCluster(dir, flinkOnlyClasspath(), restPort);
    Files.createDirectories(cluster.conf);
    StringBuilder yaml = new StringBuilder();
    c.forEach((k, v) -> yaml.append(k).append(": ").append(v).append('\n'));
    Files.writeString(cluster.conf.resolve("config.yaml"), yaml);
    Files.writeString(
        cluster.conf.resolve("log4j.properties"),
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
    cluster.startJobManager();
    cluster.startTaskManager();
    return cluster;
  }

  public Path dir() {
    return dir;
  }

  /** The REST API's base URL, e.g. {@code http://localhost:8081/}. */
  public URI restUrl() {
    return URI.create("http://localhost:" + restPort + "/");
  }

  public void startJobManager() throws IOException {
    jobManager =
        launch(
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "jobmanager");
  }

  public void startTaskManager() throws IOException {
    taskManagers.add(
        launch("org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "taskmanager"));
  }

  /**
   * SIGKILLs the oldest TaskManager (the one a job submitted while it was alone runs on), as a
   * machine's crash would: no clean shutdown of any task.
   */
  public void killOldestTaskManager() throws InterruptedException {
    kill(taskManagers.remove(0));
  }

  /** Waits until {@code n} TaskManagers are registered with the ResourceManager. */
  public void awaitTaskManagers(int n) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest get =
        HttpRequest.newBuilder(URI.create("http://localhost:" + restPort + "/taskmanagers"))
            .build();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    int registered = -1;
    while (System.nanoTime() < deadline) {
      try {
        String body = http.send(get, HttpResponse.BodyHandlers.ofString()).body();
        registered = body.split("\"slotsNumber\"", -1).length - 1;
        if (registered >= n) return;
      } catch (IOException e) {
        // the REST endpoint is not up yet
      }
      Thread.sleep(500);
    }
    throw new AssertionError(registered + " TaskManagers registered, not " + n + "; see " + dir);
  }

  /** SIGKILLs the JobManager: the job's retained checkpoints stay where they are. */
  public void killJobManager() throws InterruptedException {
    kill(jobManager);
  }

  private static void kill(Process p) throws InterruptedException {
    p.destroyForcibly();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("killed process %s exited", p.pid()).isTrue();
  }

  private Process launch(String main, String name) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(java());
    cmd.addAll(FlinkJvmOptions.JAVA_17);
    String log = name + "-" + (++starts);
    cmd.addAll(
        List.of(
            "-Xmx768m",
            "-XX:MaxDirectMemorySize=256m",
            // Quicker to start and lighter on a 2-core CI host than the default JIT and GC.
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-Dlog.file=" + dir.resolve(log + ".log"),
            "-Dlog4j.configurationFile=" + conf.resolve("log4j.properties"),
            "-cp",
            classpath,
            main,
            "--configDir",
            conf.toString()));
    return new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve(log + ".out").toFile())
        .start();
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** A REST client of the cluster; close it. */
  public RestClusterClient<StandaloneClusterId> client() throws Exception {
    Configuration c = new Configuration();
    c.set(RestOptions.ADDRESS, "localhost");
    c.set(RestOptions.PORT, restPort);
    return new RestClusterClient<>(c, StandaloneClusterId.getInstance());
  }

  /**
   * Submits the job jar as a user would, {@code flink run -d [-s CHECKPOINT] JAR ARGS} from a JVM
   * with Flink's jars only, retrying while the cluster is still starting.
   *
   * @param fromCheckpoint a retained checkpoint (or savepoint) to resume from, or null
   */
  public JobID submit(List<String> jobArgs, Path fromCheckpoint) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    String out = "";
    while (System.nanoTime() < deadline) {
      out = flinkRun(jobArgs, fromCheckpoint).output();
      Matcher m = Pattern.compile("JobID ([0-9a-f]{32})").matcher(out);
      if (m.find()) {
        return JobID.fromHexString(m.group(1));
      }
      Thread.sleep(2000); // the cluster may still be starting
    }
    throw new AssertionError("flink run did not submit the job:\n" + out);
  }

  /** What one {@code flink run} printed (stdout and stderr) and its exit code. */
  public record FlinkRun(int exitCode, String output) {}

  /** {@code flink run -d JAR ARGS} once, without retrying: for a submission that must fail. */
  public FlinkRun run(List<String> jobArgs) throws Exception {
    return flinkRun(jobArgs, null);
  }

  private FlinkRun flinkRun(List<String> jobArgs, Path fromCheckpoint) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(java());
    cmd.addAll(FlinkJvmOptions.JAVA_17);
    cmd.add("-cp");
    cmd.add(classpath);
    cmd.add("org.apache.flink.client.cli.CliFrontend");
    cmd.add("run");
    cmd.add("-d");
    if (fromCheckpoint != null) {
      cmd.add("-s");
      cmd.add(fromCheckpoint.toUri().toString());
    }
    cmd.add(JOB_JAR.toString());
    cmd.addAll(jobArgs);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("FLINK_CONF_DIR", conf.toString());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) p.destroyForcibly();
    return new FlinkRun(p.isAlive() ? -1 : p.exitValue(), out);
  }

  /** Waits until the job is RUNNING; fails if it ended. */
  public void awaitRunning(JobID id) throws Exception {
    try (RestClusterClient<StandaloneClusterId> client = client()) {
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

  /**
   * The newest complete retained checkpoint of {@code job} under {@code checkpoints} (the
   * configured {@code execution.checkpointing.dir}): the highest {@code chk-N} with its metadata
   * file, which Flink writes last.
   */
  public static Path latestCheckpoint(Path checkpoints, JobID job) throws IOException {
    Path jobDir = checkpoints.resolve(job.toHexString());
    try (var list = Files.list(jobDir)) {
      return list.filter(p -> p.getFileName().toString().matches("chk-\\d+"))
          .filter(p -> Files.exists(p.resolve("_metadata")))
          .max(
              Comparator.comparingLong(
                  p -> Long.parseLong(p.getFileName().toString().substring(4))))
          .orElseThrow(() -> new AssertionError("no complete checkpoint in " + jobDir));
    }
  }

  @Override
  public void close() throws InterruptedException {
    List<Process> all = new ArrayList<>(taskManagers);
    if (jobManager != null) all.add(jobManager);
    for (Process p : all) {
      p.destroy();
      if (!p.waitFor(20, TimeUnit.SECONDS)) p.destroyForcibly();
    }
  }

  /**
   * This JVM's classpath without collscope's own classes, Kafka, Avro and the connector: what a
   * Flink distribution's lib/ holds. Failsafe hands the classpath over in a manifest-only jar.
   */
  public static String flinkOnlyClasspath() throws IOException {
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
}
