package io.collscope.broker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real replicated Kafka cluster of {@code n} KRaft nodes (each a combined broker and controller:
 * a static quorum of {@code n} voters), every node its own child JVM run from this JVM's classpath
 * ({@link BrokerMain}), so {@link #kill} is a real SIGKILL of one broker and of one controller.
 *
 * <p>Durability is set as a production cluster sets it: every topic (the internal ones included)
 * has {@code min(3, n)} replicas and {@code min.insync.replicas} one less than that (2 of 3), no
 * unclean leader election; a producer with {@code acks=all} is acknowledged only once two replicas
 * have the record. A killed node keeps its data directory and ports, so {@link #restart} brings the
 * same node back and it catches up from the others.
 */
public final class EmbeddedKafkaCluster implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafkaCluster.class);

  private final Path dir;
  private final boolean deleteOnClose;
  private final String clusterId;
  private final int[] clientPorts;
  private final int[] controllerPorts;
  private final Process[] processes;

  private EmbeddedKafkaCluster(Path dir, int nodes, int basePort, boolean deleteOnClose)
      throws IOException {
    this.dir = dir;
    this.deleteOnClose = deleteOnClose;
    Path idFile = dir.resolve("cluster.id");
    if (Files.exists(idFile)) {
      clusterId = Files.readString(idFile).trim();
    } else {
      clusterId = Uuid.randomUuid().toString();
      Files.writeString(idFile, clusterId);
    }
    clientPorts = new int[nodes];
    controllerPorts = new int[nodes];
    processes = new Process[nodes];
    Path ports = dir.resolve("ports");
    if (Files.exists(ports)) {
      // The same cluster again (collscope cluster start on its directory): the same ports, since
      // every node's controller address is part of the others' quorum configuration.
      List<String> lines = Files.readAllLines(ports);
      for (int i = 0; i < nodes; i++) {
        String[] f = lines.get(i).split(" ");
        clientPorts[i] = Integer.parseInt(f[0]);
        controllerPorts[i] = Integer.parseInt(f[1]);
      }
    } else {
      List<String> lines = new ArrayList<>();
      for (int i = 0; i < nodes; i++) {
        clientPorts[i] = basePort > 0 ? basePort + i : EmbeddedKafka.freePort();
        controllerPorts[i] = EmbeddedKafka.freePort();
        lines.add(clientPorts[i] + " " + controllerPorts[i]);
      }
      Files.write(ports, lines);
    }
  }

  /** A cluster of {@code nodes} nodes in a temporary directory, deleted on close. */
  public static EmbeddedKafkaCluster startTemporary(int nodes) {
    try {
      return start(Files.createTempDirectory("collscope-kafka-cluster-"), nodes, 0, true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts every node and waits until all of them are registered brokers.
   *
   * @param basePort the first node's client port, the others' the next ones; 0 picks free ports.
   *     The ports chosen the first time are kept in the directory and used again.
   */
  public static EmbeddedKafkaCluster start(
      Path dir, int nodes, int basePort, boolean deleteOnClose) {
    if (nodes < 1) throw new IllegalArgumentException("a cluster needs at least one node");
    try {
      Files.createDirectories(dir);
      EmbeddedKafkaCluster c = new EmbeddedKafkaCluster(dir, nodes, basePort, deleteOnClose);
      Runtime.getRuntime()
          .addShutdownHook(new Thread(c::stopQuietly, "collscope-kafka-cluster-reaper"));
      // All at once: a node waits for a quorum of voters before it serves anything.
      for (int i = 0; i < nodes; i++) c.launch(i);
      c.awaitBrokers(nodes, EmbeddedKafka.DEFAULT_START_TIMEOUT);
      LOG.info("Kafka cluster of {} nodes ready at {} ({})", nodes, c.bootstrapServers(), dir);
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The number of nodes. */
  public int size() {
    return processes.length;
  }

  /** The replication factor of every topic: 3, or fewer on a smaller cluster. */
  public short replicationFactor() {
    return (short) Math.min(3, size());
  }

  /** {@code min.insync.replicas}: one replica may be down and producers with acks=all go on. */
  public int minInsyncReplicas() {
    return Math.max(1, replicationFactor() - 1);
  }

  /** Every node's client address. */
  public String bootstrapServers() {
    List<String> s = new ArrayList<>();
    for (int p : clientPorts) s.add("localhost:" + p);
    return String.join(",", s);
  }

  /** Node ids are 1..n; a node's id is its index plus one. */
  public int clientPort(int nodeId) {
    return clientPorts[nodeId - 1];
  }

  public Path logFile(int nodeId) {
    return dir.resolve("node-" + nodeId).resolve("broker.log");
  }

  /** The pid of a running node's JVM. */
  public long pid(int nodeId) {
    return processes[nodeId - 1].pid();
  }

  public boolean isAlive(int nodeId) {
    Process p = processes[nodeId - 1];
    return p != null && p.isAlive();
  }

  private void launch(int i) throws IOException {
    int nodeId = i + 1;
    Path nodeDir = dir.resolve("node-" + nodeId);
    Files.createDirectories(nodeDir);
    List<String> voters = new ArrayList<>();
    for (int j = 0; j < size(); j++) voters.add((j + 1) + "@localhost:" + controllerPorts[j]);
    String rf = Short.toString(replicationFactor());
    String isr = Integer.toString(minInsyncReplicas());
    Properties p = new Properties();
    p.put("process.roles", "broker,controller");
    p.put("node.id", Integer.toString(nodeId));
    p.put("controller.quorum.voters", String.join(",", voters));
    p.put(
        "listeners",
        "PLAINTEXT://localhost:"
            + clientPorts[i]
            + ",CONTROLLER://localhost:"
            + controllerPorts[i]);
    p.put("advertised.listeners", "PLAINTEXT://localhost:" + clientPorts[i]);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.put("log.dirs", nodeDir.resolve("logs").toString());
    p.put("num.partitions", "4");
    p.put("default.replication.factor", rf);
    p.put("min.insync.replicas", isr);
    p.put("unclean.leader.election.enable", "false");
    p.put("offsets.topic.replication.factor", rf);
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", rf);
    p.put("transaction.state.log.min.isr", isr);
    p.put("transaction.state.log.num.partitions", "4");
    p.put("share.coordinator.state.topic.replication.factor", rf);
    p.put("share.coordinator.state.topic.min.isr", isr);
    p.put("group.initial.rebalance.delay.ms", "0");
    p.put("transaction.max.timeout.ms", "900000");
    // A SIGKILLed node is fenced (its partitions' leadership moves) after its session times out;
    // a follower that stops fetching leaves the ISR after replica.lag.time.max.ms. Both are
    // shortened from 9 s and 30 s so a test sees the failover within seconds, as tuned
    // deployments do; neither changes what is acknowledged.
    p.put("broker.heartbeat.interval.ms", "500");
    p.put("broker.session.timeout.ms", "4000");
    p.put("replica.lag.time.max.ms", "8000");
    Path props = nodeDir.resolve("server.properties");
    try (Writer w = Files.newBufferedWriter(props)) {
      p.store(w, "collscope embedded cluster node " + nodeId);
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xms64m");
    cmd.add("-Xmx384m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(EmbeddedKafka.classpath());
    cmd.add(BrokerMain.class.getName());
    cmd.add(props.toString());
    cmd.add(clusterId);
    cmd.add(Long.toString(ProcessHandle.current().pid()));
    processes[i] =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile(nodeId).toFile()))
            .start();
  }

  private Admin admin() {
    return Admin.create(
        Map.of(
            AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
            AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 3000,
            AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000));
  }

  private void awaitBrokers(int count, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    try (Admin admin = admin()) {
      while (System.nanoTime() < deadline) {
        for (int i = 0; i < size(); i++) {
          if (processes[i] != null && !processes[i].isAlive()) {
            throw new IllegalStateException(
                "Kafka node "
                    + (i + 1)
                    + " exited with "
                    + processes[i].exitValue()
                    + "; see "
                    + logFile(i + 1));
          }
        }
        try {
          if (admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).size() >= count) return;
        } catch (Exception e) {
          last = e;
        }
        Thread.sleep(200);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    throw new IllegalStateException(
        "Kafka cluster: fewer than " + count + " brokers within " + timeout.toSeconds() + " s",
        last);
  }

  /** SIGKILLs a node (broker and controller): no clean shutdown, its data directory stays. */
  public void kill(int nodeId) throws InterruptedException {
    Process p = processes[nodeId - 1];
    if (p == null || !p.isAlive())
      throw new IllegalStateException("node " + nodeId + " not running");
    p.destroyForcibly(); // SIGKILL on Linux
    if (!p.waitFor(30, TimeUnit.SECONDS)) throw new IllegalStateException("node survived SIGKILL");
  }

  /** Starts a killed node again on its data directory and ports; returns once it is registered. */
  public void restart(int nodeId) {
    if (isAlive(nodeId)) throw new IllegalStateException("node " + nodeId + " is running");
    try {
      launch(nodeId - 1);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    awaitBrokers(size(), EmbeddedKafka.DEFAULT_START_TIMEOUT);
  }

  /**
   * Creates topics that do not exist yet with the cluster's replication factor and {@code
   * min.insync.replicas}.
   */
  public void createTopics(int partitions, String... names) {
    try (Admin admin = admin()) {
      Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
      List<NewTopic> fresh = new ArrayList<>();
      for (String n : names) {
        if (!existing.contains(n)) {
          fresh.add(
              new NewTopic(n, partitions, replicationFactor())
                  .configs(Map.of("min.insync.replicas", Integer.toString(minInsyncReplicas()))));
        }
      }
      admin.createTopics(fresh).all().get(30, TimeUnit.SECONDS);
      awaitLeaders(admin, List.of(names), Duration.ofSeconds(30));
    } catch (Exception e) {
      throw new IllegalStateException("creating topics " + List.of(names) + ": " + e, e);
    }
  }

  /**
   * Waits until every partition of the topics has a leader as the brokers see it. Creating a topic
   * returns once the controller has committed it; each broker learns of it from the metadata log a
   * moment later, and a describe or produce that reaches a broker before then fails with {@code
   * UnknownTopicOrPartitionException}.
   */
  private static void awaitLeaders(Admin admin, Collection<String> topics, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try {
        boolean led = true;
        for (TopicDescription d :
            admin.describeTopics(topics).allTopicNames().get(5, TimeUnit.SECONDS).values()) {
          for (TopicPartitionInfo p : d.partitions()) {
            led &= p.leader() != null && !p.leader().isEmpty();
          }
        }
        if (led) return;
      } catch (ExecutionException | TimeoutException e) {
        last = e;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException(
        "topics " + topics + " have no leader on every partition after " + timeout, last);
  }

  /** The partitions of topics, with their leader, replicas and in-sync replicas. */
  public Map<String, List<TopicPartitionInfo>> describe(Collection<String> topics) {
    try (Admin admin = admin()) {
      Map<String, List<TopicPartitionInfo>> out = new HashMap<>();
      for (Map.Entry<String, TopicDescription> e :
          admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS).entrySet()) {
        out.put(e.getKey(), e.getValue().partitions());
      }
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("describing " + topics + ": " + e, e);
    }
  }

  /** The node that leads a partition now. */
  public int leaderOf(String topic, int partition) {
    TopicPartitionInfo p = describe(List.of(topic)).get(topic).get(partition);
    if (p.leader() == null || p.leader().isEmpty()) {
      throw new IllegalStateException(topic + "-" + partition + " has no leader");
    }
    return p.leader().id();
  }

  /**
   * The transaction coordinators of the open and recent transactions whose id starts with {@code
   * prefix} (a Flink job's transactional-id prefix): node id → how many of them it coordinates.
   */
  public Map<Integer, Integer> transactionCoordinators(String prefix) {
    try (Admin admin = admin()) {
      List<String> ids = new ArrayList<>();
      for (TransactionListing l : admin.listTransactions().all().get(30, TimeUnit.SECONDS)) {
        if (l.transactionalId().startsWith(prefix)) ids.add(l.transactionalId());
      }
      Map<Integer, Integer> out = new java.util.TreeMap<>();
      if (ids.isEmpty()) return out;
      admin
          .describeTransactions(ids)
          .all()
          .get(30, TimeUnit.SECONDS)
          .values()
          .forEach(d -> out.merge(d.coordinatorId(), 1, Integer::sum));
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("describing transactions of " + prefix + ": " + e, e);
    }
  }

  /**
   * Waits until every partition of every topic (the internal ones included) has all its replicas in
   * sync again, as after a killed node caught up; returns how long that took.
   */
  public Duration awaitFullyReplicated(Duration timeout) {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    Set<String> lagging = new TreeSet<>();
    try (Admin admin = admin()) {
      while (System.nanoTime() < deadline) {
        lagging.clear();
        try {
          Set<String> topics =
              admin
                  .listTopics(new ListTopicsOptions().listInternal(true))
                  .names()
                  .get(10, TimeUnit.SECONDS);
          for (TopicDescription d :
              admin.describeTopics(topics).allTopicNames().get(10, TimeUnit.SECONDS).values()) {
            for (TopicPartitionInfo p : d.partitions()) {
              if (p.isr().size() < p.replicas().size()) lagging.add(d.name() + "-" + p.partition());
            }
          }
          if (lagging.isEmpty()) return Duration.ofNanos(System.nanoTime() - start);
        } catch (Exception e) {
          lagging.add(e.toString());
        }
        Thread.sleep(250);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    throw new IllegalStateException(
        "partitions still under-replicated after " + timeout.toSeconds() + " s: " + lagging);
  }

  /** Blocks until every node's process exits (for {@code collscope kafka --nodes N}). */
  public void waitFor() throws InterruptedException {
    for (Process p : processes) if (p != null) p.waitFor();
  }

  private void stopQuietly() {
    // SIGTERM to all first: nodes shut down together instead of each waiting for a quorum.
    for (Process p : processes) if (p != null && p.isAlive()) p.destroy();
    for (Process p : processes) {
      if (p == null) continue;
      try {
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          p.waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void close() {
    stopQuietly();
    if (deleteOnClose) {
      try (var walk = Files.walk(dir)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      } catch (IOException e) {
        LOG.warn("could not delete {}: {}", dir, e.toString());
      }
    }
  }
}
