package io.collscope.broker;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Kafka broker (KRaft, combined broker+controller) run from the Maven artifacts
 * on this JVM's classpath, in a child JVM so its dependencies never meet Flink's and a crash of one
 * never takes the other down. The child dies with its parent.
 *
 * <p>Used by the demo, by {@code collscope kafka}, and by every integration test.
 */
public final class EmbeddedKafka implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafka.class);
  public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(90);

  /** The super user of a secured broker (its own inter-broker and controller identity). */
  public static final String ADMIN_USER = "admin";

  /**
   * What a secured broker needs: its TLS key store (PKCS12), the PEM certificate clients and the
   * broker itself trust, and the admin's password.
   */
  public record Security(
      Path keyStore, String keyStorePassword, Path trustPem, String adminPassword) {

    /** The client properties of a SASL_SSL client logging in as {@code user} with SCRAM-SHA-512. */
    public Map<String, Object> scramClient(String user, String password) {
      return Map.of(
          "security.protocol", "SASL_SSL",
          "sasl.mechanism", "SCRAM-SHA-512",
          "sasl.jaas.config",
              jaas("org.apache.kafka.common.security.scram.ScramLoginModule", user, password),
          "ssl.truststore.type", "PEM",
          "ssl.truststore.location", trustPem.toString());
    }

    /** The admin's client properties (PLAIN over TLS). */
    Map<String, Object> adminClient() {
      return Map.of(
          "security.protocol", "SASL_SSL",
          "sasl.mechanism", "PLAIN",
          "sasl.jaas.config",
              jaas(
                  "org.apache.kafka.common.security.plain.PlainLoginModule",
                  ADMIN_USER,
                  adminPassword),
          "ssl.truststore.type", "PEM",
          "ssl.truststore.location", trustPem.toString());
    }
  }

  private static String jaas(String module, String user, String password) {
    return module + " required username=\"" + user + "\" password=\"" + password + "\";";
  }

  private final Path dataDir;
  private final int port;
  private final boolean deleteOnClose;
  private final Security security;
  private Process process;

  private EmbeddedKafka(Path dataDir, int port, boolean deleteOnClose, Security security) {
    this.dataDir = dataDir;
    this.port = port;
    this.deleteOnClose = deleteOnClose;
    this.security = security;
  }

  /** A broker on a free port with a temporary data directory, deleted on close. */
  public static EmbeddedKafka startTemporary() {
    try {
      Path dir = Files.createTempDirectory("collscope-kafka-");
      return start(dir, 0, true, DEFAULT_START_TIMEOUT);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts a broker and waits until it answers.
   *
   * @param port the client port; 0 picks a free one
   */
  public static EmbeddedKafka start(
      Path dataDir, int port, boolean deleteOnClose, Duration timeout) {
    try {
      Files.createDirectories(dataDir);
      int clientPort = port == 0 ? freePort() : port;
      EmbeddedKafka k = new EmbeddedKafka(dataDir, clientPort, deleteOnClose, null);
      k.launch(timeout);
      return k;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A broker whose only client listener is SASL_SSL, with ACLs (StandardAuthorizer, nothing allowed
   * without an ACL): {@link #ADMIN_USER} (PLAIN) is its super user; clients log in with
   * SCRAM-SHA-512 as users made by {@link #addScramUser} and may do what {@link #allow} grants. Its
   * controller listener takes the admin's PLAIN login too. The data directory is deleted on close.
   */
  public static EmbeddedKafka startSecure(Path dataDir, Security security) {
    try {
      Files.createDirectories(dataDir);
      EmbeddedKafka k = new EmbeddedKafka(dataDir, freePort(), true, security);
      k.launch(DEFAULT_START_TIMEOUT);
      return k;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The properties an admin client of this broker needs (none for a plaintext one). */
  public Map<String, Object> adminClient() {
    return security == null ? Map.of() : security.adminClient();
  }

  private Admin admin(Map<String, Object> extra) {
    Map<String, Object> conf = new java.util.HashMap<>(adminClient());
    conf.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    conf.putAll(extra);
    return Admin.create(conf);
  }

  /** Creates (or changes) a SCRAM-SHA-512 user of a secured broker. */
  public void addScramUser(String user, String password) {
    try (Admin admin = admin(Map.of())) {
      admin
          .alterUserScramCredentials(
              List.of(
                  new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(
                      user,
                      new org.apache.kafka.clients.admin.ScramCredentialInfo(
                          org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512, 8192),
                      password)))
          .all()
          .get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("adding SCRAM user " + user + ": " + e, e);
    }
  }

  /**
   * Lets {@code user} do {@code operations} on the resources of {@code type} named {@code name}
   * (literally, or every name starting with it when {@code prefixed}).
   */
  public void allow(
      String user,
      org.apache.kafka.common.resource.ResourceType type,
      String name,
      boolean prefixed,
      org.apache.kafka.common.acl.AclOperation... operations) {
    List<org.apache.kafka.common.acl.AclBinding> acls = new ArrayList<>();
    for (org.apache.kafka.common.acl.AclOperation op : operations) {
      acls.add(
          new org.apache.kafka.common.acl.AclBinding(
              new org.apache.kafka.common.resource.ResourcePattern(
                  type,
                  name,
                  prefixed
                      ? org.apache.kafka.common.resource.PatternType.PREFIXED
                      : org.apache.kafka.common.resource.PatternType.LITERAL),
              new org.apache.kafka.common.acl.AccessControlEntry(
                  "User:" + user, "*", op, org.apache.kafka.common.acl.AclPermissionType.ALLOW)));
    }
    try (Admin admin = admin(Map.of())) {
      admin.createAcls(acls).all().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("creating ACLs " + acls + ": " + e, e);
    }
  }

  public String bootstrapServers() {
    return "localhost:" + port;
  }

  public Path dataDir() {
    return dataDir;
  }

  public Path logFile() {
    return dataDir.resolve("broker.log");
  }

  private void launch(Duration timeout) throws IOException {
    int controllerPort = freePort();
    Path props = dataDir.resolve("server.properties");
    Path clusterIdFile = dataDir.resolve("cluster.id");
    String clusterId;
    if (Files.exists(clusterIdFile)) {
      clusterId = Files.readString(clusterIdFile).trim();
    } else {
      clusterId = Uuid.randomUuid().toString();
      Files.writeString(clusterIdFile, clusterId);
    }
    Properties p = new Properties();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    p.put("controller.quorum.voters", "1@localhost:" + controllerPort);
    p.put(
        "listeners", "PLAINTEXT://localhost:" + port + ",CONTROLLER://localhost:" + controllerPort);
    p.put("advertised.listeners", "PLAINTEXT://localhost:" + port);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    if (security != null) secure(p, controllerPort);
    p.put("log.dirs", dataDir.resolve("logs").toString());
    p.put("num.partitions", "4");
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "4");
    p.put("share.coordinator.state.topic.replication.factor", "1");
    p.put("share.coordinator.state.topic.min.isr", "1");
    p.put("group.initial.rebalance.delay.ms", "0");
    // Flink's exactly-once sink holds transactions open across checkpoints.
    p.put("transaction.max.timeout.ms", "900000");
    try (Writer w = Files.newBufferedWriter(props)) {
      p.store(w, "collscope embedded broker");
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xms128m");
    cmd.add("-Xmx768m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-Dorg.apache.logging.log4j.level=INFO");
    cmd.add("-cp");
    cmd.add(classpath());
    cmd.add(BrokerMain.class.getName());
    cmd.add(props.toString());
    cmd.add(clusterId);
    cmd.add(Long.toString(ProcessHandle.current().pid()));
    File log = logFile().toFile();
    process =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
            .start();
    Runtime.getRuntime().addShutdownHook(new Thread(this::killQuietly, "collscope-kafka-reaper"));
    awaitReady(timeout);
    LOG.info("Kafka broker ready at {} (data {}, log {})", bootstrapServers(), dataDir, log);
  }

  private void awaitReady(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    try (Admin admin =
        admin(
            Map.of(
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 3000))) {
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException(
              "Kafka broker exited with " + process.exitValue() + "; see " + logFile());
        }
        try {
          if (!admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty()) {
            return;
          }
        } catch (Exception e) {
          last = e;
        }
        Thread.sleep(200);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    killQuietly();
    throw new IllegalStateException(
        "Kafka broker not ready within " + timeout.toSeconds() + " s; see " + logFile(), last);
  }

  /**
   * The listeners of a secured broker: clients on SASL_SSL (SCRAM-SHA-512 for users, PLAIN for the
   * admin, which the broker also uses to reach itself), the controller on SASL_PLAINTEXT with the
   * admin's login (local only), and ACLs enforced with the admin as super user.
   */
  private void secure(Properties p, int controllerPort) {
    String admin =
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
            + ADMIN_USER
            + "\" password=\""
            + security.adminPassword()
            + "\" user_"
            + ADMIN_USER
            + "=\""
            + security.adminPassword()
            + "\";";
    p.put(
        "listeners", "SASL_SSL://localhost:" + port + ",CONTROLLER://localhost:" + controllerPort);
    p.put("advertised.listeners", "SASL_SSL://localhost:" + port);
    p.put("inter.broker.listener.name", "SASL_SSL");
    p.put("listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT");
    p.put("sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN");
    p.put("sasl.mechanism.inter.broker.protocol", "PLAIN");
    p.put("sasl.mechanism.controller.protocol", "PLAIN");
    p.put("listener.name.controller.sasl.enabled.mechanisms", "PLAIN");
    p.put("listener.name.controller.plain.sasl.jaas.config", admin);
    p.put("listener.name.sasl_ssl.plain.sasl.jaas.config", admin);
    p.put(
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required;");
    p.put("ssl.keystore.type", "PKCS12");
    p.put("ssl.keystore.location", security.keyStore().toString());
    p.put("ssl.keystore.password", security.keyStorePassword());
    p.put("ssl.key.password", security.keyStorePassword());
    p.put("ssl.truststore.type", "PEM");
    p.put("ssl.truststore.location", security.trustPem().toString());
    p.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
    p.put("super.users", "User:" + ADMIN_USER);
    p.put("allow.everyone.if.no.acl.found", "false");
  }

  /** The classpath the child runs on: this module's jars, wherever they came from. */
  static String classpath() {
    String explicit = System.getProperty("collscope.broker.classpath");
    return explicit != null ? explicit : System.getProperty("java.class.path");
  }

  /** A TCP port free right now on this host. */
  public static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    }
  }

  /** Blocks until the broker process exits (for {@code collscope kafka}). */
  public int waitFor() throws InterruptedException {
    return process.waitFor();
  }

  /**
   * SIGKILLs the broker, as a crash would (no clean shutdown); the data directory stays, so {@link
   * #start} with the same directory and {@link #port} brings the same broker back.
   */
  public void kill() throws InterruptedException {
    Process p = process;
    if (p == null || !p.isAlive()) return;
    p.destroyForcibly();
    p.waitFor(30, TimeUnit.SECONDS);
  }

  public int port() {
    return port;
  }

  private void killQuietly() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroy(); // SIGTERM: Kafka shuts down cleanly
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

  @Override
  public void close() {
    killQuietly();
    if (deleteOnClose) {
      deleteRecursively(dataDir);
    }
  }

  private static void deleteRecursively(Path dir) {
    try (var walk = Files.walk(dir)) {
      walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      LOG.warn("could not delete {}: {}", dir, e.toString());
    }
  }

  /** Creates topics that do not exist yet (one replica each). */
  public void createTopics(int partitions, String... names) {
    try (Admin admin = admin(Map.of())) {
      java.util.Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
      List<org.apache.kafka.clients.admin.NewTopic> fresh = new ArrayList<>();
      for (String n : names) {
        if (!existing.contains(n))
          fresh.add(new org.apache.kafka.clients.admin.NewTopic(n, partitions, (short) 1));
      }
      admin.createTopics(fresh).all().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("creating topics " + List.of(names) + ": " + e, e);
    }
  }

  /** A topic name unique to one test: {@code prefix-<random>}. */
  public static String freshTopic(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }
}
