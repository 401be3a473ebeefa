package io.collscope.alerts;

import io.collscope.testing.ServerProcess;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A real Prometheus Alertmanager (the Debian package's {@code prometheus-alertmanager}, 0.25) for
 * tests: one instance on a free port of 127.0.0.1, gossip off, storage and log in a temporary
 * directory, with the configuration the test writes. A missing binary fails the test with the
 * command that installs it; it never skips.
 */
public final class AlertmanagerProcess implements AutoCloseable {

  static final ServerProcess.Program PROGRAM =
      new ServerProcess.Program(
          "prometheus-alertmanager",
          "prometheus-alertmanager",
          "COLLSCOPE_ALERTMANAGER_BIN",
          "the alerting tests");

  private final ServerProcess server;
  private final AlertmanagerClient client;

  private AlertmanagerProcess(ServerProcess server) {
    this.server = server;
    this.client = new AlertmanagerClient(server.url(), Duration.ofSeconds(5));
  }

  /** Starts Alertmanager with the given configuration (YAML) and waits until it is ready. */
  public static AlertmanagerProcess start(String configYaml) {
    return new AlertmanagerProcess(
        ServerProcess.start(
            PROGRAM,
            (dir, port) -> {
              Path config = dir.resolve("alertmanager.yml");
              Files.writeString(config, configYaml, StandardCharsets.UTF_8);
              return List.of(
                  "--config.file=" + config,
                  "--storage.path=" + dir.resolve("data"),
                  "--web.listen-address=127.0.0.1:" + port,
                  "--cluster.listen-address=",
                  "--log.level=info");
            }));
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
    return PROGRAM.find();
  }

  /** Alertmanager's URL, e.g. {@code http://127.0.0.1:40123}. */
  public URI url() {
    return server.url();
  }

  public AlertmanagerClient client() {
    return client;
  }

  public boolean isRunning() {
    return server.isRunning();
  }

  /** Stops it (SIGTERM, then SIGKILL after 10 s). Alerts live in memory only: they are gone. */
  public void stop() {
    server.stop();
  }

  /** Starts it again on the same port, storage and configuration, and waits until it is ready. */
  public void restart() {
    server.restart();
  }

  /** The last lines of the latest log. */
  public String logTail() {
    return server.logTail();
  }

  @Override
  public void close() {
    server.close();
  }
}
