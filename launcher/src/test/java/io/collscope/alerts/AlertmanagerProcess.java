package io.collscope.alerts;

import io.collscope.broker.EmbeddedKafka;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Prometheus Alertmanager (the Debian package's {@code prometheus-alertmanager}, 0.25) for
 * tests: one instance on a free port of 127.0.0.1, gossip off, storage and log in a temporary
 * directory, with the configuration the test writes. A missing binary fails the test with the
 * command that installs it; it never skips.
 */
public final class AlertmanagerProcess implements AutoCloseable {

  /** Overrides where the binary is looked for. */
  public static final String BIN_ENV = "COLLSCOPE_ALERTMANAGER_BIN";

  static final String INSTALL_HINT =
      "prometheus-alertmanager (0.25) is needed by the alerting tests and was not found on PATH"
          + " or in /usr/bin (or $"
          + BIN_ENV
          + "). Install it with: apt-get install -y prometheus-alertmanager"
          + " (or run dev/setup-test-tools.sh)";

  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private final Path binary;
  private final Path dir;
  private final Path config;
  private final int port;
  private final AlertmanagerClient client;
  private Process process;
  private int starts;

  private AlertmanagerProcess(Path binary, Path dir, Path config, int port) {
    this.binary = binary;
    this.dir = dir;
    this.config = config;
    this.port = port;
    this.client = new AlertmanagerClient(url(), Duration.ofSeconds(5));
  }

  /** Starts Alertmanager with the given configuration (YAML) and waits until it is ready. */
  public static AlertmanagerProcess start(String configYaml) {
    Path bin = findBinary();
    try {
      Path dir = Files.createTempDirectory("collscope-alertmanager-");
      Path config = dir.resolve("alertmanager.yml");
      Files.writeString(config, configYaml, StandardCharsets.UTF_8);
      AlertmanagerProcess am = new AlertmanagerProcess(bin, dir, config, EmbeddedKafka.freePort());
      am.launch();
      return am;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A configuration with one receiver: a webhook to {@code webhookUrl} (resolved notifications
   * too), or no receiver at all when it is null; groups by cluster, job and communicator and sends
   * a group's first notification after 1 s.
   */
  public static String config(String webhookUrl) {
    String receiver =
        webhookUrl == null
            ? "  - name: collscope\n"
            : "  - name: collscope\n"
                + "    webhook_configs:\n"
                + "      - url: '"
                + webhookUrl
                + "'\n"
                + "        send_resolved: true\n";
    return "route:\n"
        + "  receiver: collscope\n"
        + "  group_by: [alertname, cluster, job, communicator]\n"
        + "  group_wait: 1s\n"
        + "  group_interval: 1s\n"
        + "  repeat_interval: 1h\n"
        + "receivers:\n"
        + receiver;
  }

  /** The binary: $COLLSCOPE_ALERTMANAGER_BIN, else on PATH, else /usr/bin; fails if absent. */
  public static Path findBinary() {
    List<Path> candidates = new ArrayList<>();
    String env = System.getenv(BIN_ENV);
    if (env != null && !env.isBlank()) candidates.add(Path.of(env));
    String path = System.getenv("PATH");
    if (path != null) {
      for (String d : path.split(java.io.File.pathSeparator)) {
        if (!d.isEmpty()) candidates.add(Path.of(d, "prometheus-alertmanager"));
      }
    }
    candidates.add(Path.of("/usr/bin/prometheus-alertmanager"));
    for (Path p : candidates) if (Files.isRegularFile(p) && Files.isExecutable(p)) return p;
    throw new AssertionError(INSTALL_HINT);
  }

  private void launch() throws IOException {
    List<String> cmd =
        List.of(
            binary.toString(),
            "--config.file=" + config,
            "--storage.path=" + dir.resolve("data"),
            "--web.listen-address=127.0.0.1:" + port,
            "--cluster.listen-address=",
            "--log.level=info");
    Path log = dir.resolve("alertmanager-" + (++starts) + ".log");
    process =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    while (!client.ready()) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "alertmanager exited with "
                + process.exitValue()
                + " before it was ready: "
                + tail(log));
      }
      if (System.nanoTime() > deadline) {
        stopProcess();
        throw new IllegalStateException(
            "alertmanager not ready within " + READY_TIMEOUT + ": " + tail(log));
      }
      sleep(100);
    }
  }

  /** Alertmanager's URL, e.g. {@code http://127.0.0.1:40123}. */
  public URI url() {
    return URI.create("http://127.0.0.1:" + port);
  }

  public AlertmanagerClient client() {
    return client;
  }

  public boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Stops it (SIGTERM, then SIGKILL after 10 s). Alerts live in memory only: they are gone. */
  public void stop() {
    stopProcess();
  }

  /** Starts it again on the same port, storage and configuration, and waits until it is ready. */
  public void restart() {
    stopProcess();
    try {
      launch();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The last lines of the latest log. */
  public String logTail() {
    return tail(dir.resolve("alertmanager-" + starts + ".log"));
  }

  private void stopProcess() {
    if (process == null) return;
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    stopProcess();
    try (var files = Files.walk(dir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // leave it
    }
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
