package io.collscope.cluster;

import io.collscope.flink.FlinkJvmOptions;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.configuration.MemorySize;

/**
 * A Flink session cluster on this machine without Docker or a Flink download: a JobManager and N
 * TaskManagers as processes run from collscope's own lib/ (Flink's jars, without collscope's,
 * Kafka's and the job's: the job jar brings those), and a Kafka broker ({@code collscope kafka})
 * when none is configured. Everything lives in one folder: Flink's configuration, logs, pid files,
 * checkpoints and savepoints, and the broker's data. {@code collscope cluster start|stop|status}.
 */
public final class LocalCluster {

  public static final String JOB_MANAGER_MAIN =
      "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint";
  public static final String TASK_MANAGER_MAIN =
      "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";
  public static final String KAFKA_MAIN = "io.collscope.cli.Collscope";

  /**
   * A real ZooKeeper server, from the ZooKeeper Flink itself ships and uses for its high
   * availability (flink-shaded-zookeeper-3, already in lib/): nothing to download or install.
   */
  public static final String ZOOKEEPER_MAIN =
      "org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.server.ZooKeeperServerMain";

  private static final String STATE_FILE = "cluster.properties";
  private static final Duration KAFKA_START_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

  /**
   * How to start it.
   *
   * @param taskManagers TaskManager processes
   * @param slots task slots of each
   * @param restPort the JobManager's REST port (web UI and {@code collscope job})
   * @param rpcPort the JobManager's RPC port
   * @param bootstrap a Kafka to use, or null to start one on {@code kafkaPort}
   * @param kafkaPort the started broker's port (the first node's, with several)
   * @param brokers KRaft nodes to start (each its own JVM); from 3 on, replicated (RF 3, min ISR 2)
   * @param ha two JobManagers with ZooKeeper high availability (and a ZooKeeper server on {@code
   *     zookeeperPort}): the standby takes over a dead leader's jobs from their latest checkpoint
   * @param zookeeperPort the ZooKeeper server's client port (with {@code ha})
   * @param restBindAddress where the REST API (and web UI, with its jar upload) listens: localhost
   *     unless the user says otherwise, since whoever reaches it can run code on the cluster
   * @param taskHeap each TaskManager's task heap (Flink's {@code
   *     taskmanager.memory.task.heap.size}, e.g. {@code 640m}, {@code 2g}): the job's keyed state
   *     lives there with the hashmap state backend, so it grows with the ranks it watches
   */
  public record Settings(
      int taskManagers,
      int slots,
      int restPort,
      int rpcPort,
      String bootstrap,
      int kafkaPort,
      String restBindAddress,
      int brokers,
      boolean ha,
      int zookeeperPort,
      String taskHeap) {
    /**
     * The task heap of a TaskManager when none is given: with the framework's heap, the 768 MB JVM
     * heap TaskManagers always had (enough for about 20,000 ranks of 8-rank communicators).
     */
    public static final String DEFAULT_TASK_HEAP = "640m";

    /** Flink's own heap in a TaskManager ({@code taskmanager.memory.framework.heap.size}). */
    static final int FRAMEWORK_HEAP_MIB = 128;

    /**
     * The TaskManager JVM's {@code -Xmx}: framework heap + task heap, as Flink's start scripts
     * derive it (the configuration alone does not bound the JVM).
     */
    public long jvmHeapMiB() {
      return FRAMEWORK_HEAP_MIB + taskHeapMiB(taskHeap);
    }

    /** A task heap size in MiB; a bad size or one below 64m is the user's error. */
    private static long taskHeapMiB(String taskHeap) {
      long mib;
      try {
        mib = MemorySize.parse(taskHeap).getMebiBytes();
      } catch (IllegalArgumentException | NullPointerException e) {
        throw new IllegalArgumentException(
            "--taskmanager-heap must be a size such as 640m or 2g, got " + taskHeap);
      }
      if (mib < 64) {
        throw new IllegalArgumentException("--taskmanager-heap must be >= 64m, got " + taskHeap);
      }
      return mib;
    }

    public Settings {
      if (restBindAddress == null || restBindAddress.isBlank()) {
        throw new IllegalArgumentException("--rest-bind-address must not be empty");
      }
      if (brokers < 1 || brokers > 9) {
        throw new IllegalArgumentException("--brokers must be in 1..9, got " + brokers);
      }
      if (taskManagers < 1 || taskManagers > 64) {
        throw new IllegalArgumentException("--taskmanagers must be in 1..64, got " + taskManagers);
      }
      if (slots < 1) throw new IllegalArgumentException("--slots must be >= 1, got " + slots);
      taskHeapMiB(taskHeap);
    }
  }

  private final Path dir;

  public LocalCluster(Path dir) {
    this.dir = dir.toAbsolutePath().normalize();
  }

  public Path dir() {
    return dir;
  }

  public Path confDir() {
    return dir.resolve("conf");
  }

  public Path logDir() {
    return dir.resolve("log");
  }

  public Path savepointDir() {
    return dir.resolve("savepoints");
  }

  /** The REST URL and bootstrap servers of the running cluster, as start wrote them. */
  public Properties state() throws IOException {
    Properties p = new Properties();
    Path f = dir.resolve(STATE_FILE);
    if (Files.isRegularFile(f)) {
      try (var r = Files.newBufferedReader(f)) {
        p.load(r);
      }
    }
    return p;
  }

  /**
   * The REST URL of a JobManager that runs: the first one's, or with high availability the
   * standby's once the first is gone (either answers for the leader).
   */
  public Optional<URI> restUrl() throws IOException {
    Properties state = state();
    String rest = state.getProperty("rest");
    String standby = state.getProperty("rest.standby");
    if (standby != null) {
      Map<String, Long> alive = running();
      if (!alive.containsKey("jobmanager") && alive.containsKey("jobmanager-standby")) {
        rest = standby;
      }
    }
    return rest == null ? Optional.empty() : Optional.of(URI.create(rest));
  }

  /**
   * Starts the broker (if none is given), the JobManager and the TaskManagers, and waits until the
   * TaskManagers have registered. Returns the REST URL.
   */
  public URI start(Settings s, Duration timeout) throws IOException {
    if (!running().isEmpty()) {
      throw new IllegalStateException(
          "a cluster is running in " + dir + " (" + running().keySet() + "): stop it first");
    }
    Files.createDirectories(confDir());
    Files.createDirectories(logDir());
    Files.createDirectories(dir.resolve("pids"));
    writeFlinkConfiguration(s);
    List<String> all = classpath();
    String bootstrap = s.bootstrap();
    if (bootstrap == null) {
      Path log = logDir().resolve("kafka.out");
      Files.deleteIfExists(log);
      launch(
          "kafka",
          List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"),
          all,
          KAFKA_MAIN,
          List.of(
              "kafka",
              "--port",
              Integer.toString(s.kafkaPort()),
              "--nodes",
              Integer.toString(s.brokers()),
              "--data-dir",
              dir.resolve("kafka").toString()));
      String ready = awaitLine(log, "Kafka ready at ", KAFKA_START_TIMEOUT, "kafka");
      // Every node's address, as the broker command printed them.
      bootstrap = ready.substring(ready.indexOf("Kafka ready at ") + 15).split(" ")[0];
    }
    List<String> flink = flinkOnly(all);
    List<String> configDir = List.of("--configDir", confDir().toString());
    if (s.ha()) {
      Path zk = dir.resolve("zookeeper");
      Files.createDirectories(zk);
      List<String> zkJvm = new ArrayList<>(jvm("zookeeper", "-Xmx128m"));
      // Its admin HTTP server (port 8080 by default) is not needed and would collide.
      zkJvm.add("-Dzookeeper.admin.enableServer=false");
      launch(
          "zookeeper",
          zkJvm,
          flink,
          ZOOKEEPER_MAIN,
          List.of(Integer.toString(s.zookeeperPort()), zk.toString()));
      awaitPort(s.zookeeperPort(), KAFKA_START_TIMEOUT, "zookeeper");
      // The leader first: the standby then finds a leader and waits.
      launch(
          "jobmanager",
          jvm("jobmanager", "-Xmx768m"),
          flink,
          JOB_MANAGER_MAIN,
          withRestPort(configDir, s.restPort()));
      new FlinkRest(URI.create("http://localhost:" + s.restPort() + "/"))
          .awaitTaskManagers(0, timeout);
      launch(
          "jobmanager-standby",
          jvm("jobmanager-standby", "-Xmx768m"),
          flink,
          JOB_MANAGER_MAIN,
          withRestPort(configDir, s.restPort() + 1));
    } else {
      launch("jobmanager", jvm("jobmanager", "-Xmx768m"), flink, JOB_MANAGER_MAIN, configDir);
    }
    for (int i = 1; i <= s.taskManagers(); i++) {
      launch(
          "taskmanager-" + i,
          jvm("taskmanager-" + i, "-Xmx" + s.jvmHeapMiB() + "m"),
          flink,
          TASK_MANAGER_MAIN,
          configDir);
    }
    URI rest = URI.create("http://localhost:" + s.restPort() + "/");
    Properties p = new Properties();
    p.setProperty("rest", rest.toString());
    p.setProperty("bootstrap", bootstrap);
    p.setProperty("taskmanagers", Integer.toString(s.taskManagers()));
    if (s.ha()) {
      p.setProperty("rest.standby", "http://localhost:" + (s.restPort() + 1) + "/");
      p.setProperty("zookeeper", "localhost:" + s.zookeeperPort());
    }
    try (var w = Files.newBufferedWriter(dir.resolve(STATE_FILE))) {
      p.store(w, "collscope cluster start");
    }
    new FlinkRest(rest).awaitTaskManagers(s.taskManagers(), timeout);
    return rest;
  }

  /** The processes of this cluster that are alive, by name, with their pids. */
  public Map<String, Long> running() throws IOException {
    Map<String, Long> alive = new LinkedHashMap<>();
    Path pids = dir.resolve("pids");
    if (!Files.isDirectory(pids)) return alive;
    try (Stream<Path> files = Files.list(pids)) {
      for (Path f : files.sorted().toList()) {
        long pid = Long.parseLong(Files.readString(f).trim());
        if (ProcessHandle.of(pid).filter(this::isOurs).isPresent()) {
          alive.put(f.getFileName().toString(), pid);
        }
      }
    }
    return alive;
  }

  /**
   * Stops every process of the cluster, TaskManagers first and the broker last: SIGTERM, then
   * SIGKILL after 30 s, then whatever they left behind (the broker's own JVM). Returns their names.
   */
  public List<String> stop() throws IOException {
    Map<String, Long> alive = running();
    List<String> order = new ArrayList<>();
    alive.keySet().stream().filter(n -> n.startsWith("taskmanager")).forEach(order::add);
    alive.keySet().stream().filter(n -> n.startsWith("jobmanager")).forEach(order::add);
    alive.keySet().stream().filter(n -> !order.contains(n)).forEach(order::add);
    for (String name : order) {
      ProcessHandle.of(alive.get(name)).ifPresent(LocalCluster::terminate);
    }
    try (Stream<Path> files = Files.list(dir.resolve("pids"))) {
      for (Path f : files.toList()) Files.deleteIfExists(f);
    } catch (java.nio.file.NoSuchFileException e) {
      // never started
    }
    return order;
  }

  private static void terminate(ProcessHandle p) {
    List<ProcessHandle> children = p.descendants().toList();
    p.destroy();
    try {
      p.onExit().get(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } catch (Exception e) {
      p.destroyForcibly();
    }
    for (ProcessHandle c : children) {
      if (!c.isAlive()) continue;
      c.destroy();
      try {
        c.onExit().get(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      } catch (Exception e) {
        c.destroyForcibly();
      }
    }
  }

  /** A pid is this cluster's while its command line names this cluster's folder. */
  private boolean isOurs(ProcessHandle p) {
    return p.isAlive() && p.info().commandLine().map(c -> c.contains(dir.toString())).orElse(true);
  }

  private List<String> jvm(String name, String heap) {
    List<String> opts = new ArrayList<>(FlinkJvmOptions.JAVA_17);
    opts.add(heap);
    opts.add("-XX:MaxDirectMemorySize=256m");
    opts.add("-Dlog.file=" + logDir().resolve(name + ".log"));
    opts.add("-Dlog4j.configurationFile=" + confDir().resolve("log4j.properties"));
    return opts;
  }

  private void launch(
      String name, List<String> jvmOpts, List<String> classpath, String main, List<String> args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmOpts);
    // Names the folder on the command line, so that stop and status recognise the process.
    cmd.add("-Dcollscope.cluster.dir=" + dir);
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, classpath));
    cmd.add(main);
    cmd.addAll(args);
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .redirectOutput(
                ProcessBuilder.Redirect.appendTo(logDir().resolve(name + ".out").toFile()))
            .start();
    Files.writeString(dir.resolve("pids").resolve(name), Long.toString(p.pid()));
  }

  /** The entry point's arguments with this JobManager's REST port (a dynamic property). */
  private static List<String> withRestPort(List<String> configDir, int restPort) {
    List<String> out = new ArrayList<>(configDir);
    out.add("-D");
    out.add("rest.port=" + restPort);
    return out;
  }

  private static void awaitPort(int port, Duration timeout, String name) throws IOException {
    Instant deadline = Instant.now().plus(timeout);
    while (Instant.now().isBefore(deadline)) {
      try (java.net.Socket sock = new java.net.Socket("localhost", port)) {
        return;
      } catch (IOException e) {
        try {
          Thread.sleep(200);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", ie);
        }
      }
    }
    throw new IOException(name + " did not listen on port " + port + " within " + timeout);
  }

  /** Waits for a line of {@code log} that contains {@code text}; returns it. */
  private static String awaitLine(Path log, String text, Duration timeout, String name)
      throws IOException {
    Instant deadline = Instant.now().plus(timeout);
    while (Instant.now().isBefore(deadline)) {
      if (Files.exists(log)) {
        for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
          if (line.contains(text)) return line;
        }
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      }
    }
    throw new IOException(name + " did not start within " + timeout + "; see " + log);
  }

  private void writeFlinkConfiguration(Settings s) throws IOException {
    Files.writeString(
        confDir().resolve("config.yaml"),
        String.join(
            "\n",
            "# Written by collscope cluster start.",
            "jobmanager.rpc.address: localhost",
            "jobmanager.bind-host: localhost",
            "jobmanager.rpc.port: " + s.rpcPort(),
            "rest.address: localhost",
            "rest.bind-address: " + s.restBindAddress(),
            "rest.port: " + s.restPort(),
            "taskmanager.host: localhost",
            "taskmanager.bind-host: localhost",
            "taskmanager.numberOfTaskSlots: " + s.slots(),
            "parallelism.default: 1",
            "jobmanager.memory.process.size: 1024m",
            "execution.checkpointing.dir: " + dir.resolve("checkpoints").toUri(),
            "execution.checkpointing.savepoint-dir: " + savepointDir().toUri(),
            "web.upload.dir: " + dir.resolve("jars"),
            // A job's checkpoints outlive it (a crash, a cancel): `collscope job recover`
            // resubmits from the newest, and so may an operator.
            "execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION",
            ha(s),
            // Flink's start scripts derive these for a TaskManager; started directly, it needs
            // them spelled out.
            "taskmanager.cpu.cores: " + s.slots(),
            "taskmanager.memory.framework.heap.size: " + Settings.FRAMEWORK_HEAP_MIB + "m",
            "taskmanager.memory.task.heap.size: " + s.taskHeap(),
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
        confDir().resolve("log4j.properties"),
        String.join(
            "\n",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = file",
            "appender.file.type = File",
            "appender.file.name = file",
            "appender.file.fileName = ${sys:log.file}",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %-5p %c{1} - %m%n",
            "logger.kafka.name = org.apache.kafka",
            "logger.kafka.level = WARN",
            ""));
  }

  /**
   * ZooKeeper high availability: the leader's address and the jobs' graphs and checkpoint pointers
   * in ZooKeeper, their contents in {@code ha/} (which every JobManager reaches: one machine).
   */
  private String ha(Settings s) {
    if (!s.ha()) return "high-availability.type: none";
    return String.join(
        "\n",
        "high-availability.type: zookeeper",
        "high-availability.zookeeper.quorum: localhost:" + s.zookeeperPort(),
        "high-availability.storageDir: " + dir.resolve("ha").toUri(),
        "high-availability.cluster-id: /collscope-" + Integer.toHexString(dir.hashCode()),
        // The JobManagers' RPC ports: any free one; TaskManagers find the leader in ZooKeeper.
        "high-availability.jobmanager.port: 0",
        // A dead leader's ZooKeeper session, and with it its leadership, ends after this: the
        // standby takes over within it (Flink's default, 60 s, would leave the job down a minute).
        "high-availability.zookeeper.client.session-timeout: 10000");
  }

  /** The running CLI's classpath (bin/collscope's lib/), one jar or folder per entry. */
  static List<String> classpath() {
    List<String> out = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isBlank()) out.add(e);
    }
    return out;
  }

  /**
   * What a Flink distribution's lib/ holds: the classpath without collscope's own jars and without
   * what the job jar bundles (Kafka, Avro, the Kafka connector, Parquet, Hadoop) or no Flink
   * process needs (DuckDB). SessionClusterITCase runs the job on the same selection.
   */
  public static List<String> flinkOnly(List<String> classpath) {
    List<String> kept = new ArrayList<>();
    for (String e : classpath) {
      String n = "/" + Path.of(e).getFileName().toString();
      boolean ours = n.startsWith("/collscope-") || e.contains("target/classes");
      boolean bundled =
          n.startsWith("/kafka")
              || n.startsWith("/avro")
              || n.startsWith("/flink-avro")
              || n.startsWith("/flink-connector-kafka")
              || n.startsWith("/flink-parquet")
              || n.startsWith("/parquet")
              || n.startsWith("/hadoop")
              || n.startsWith("/woodstox")
              || n.startsWith("/duckdb")
              || n.startsWith("/libduckdb");
      if (!ours && !bundled) kept.add(e);
    }
    return kept;
  }
}
