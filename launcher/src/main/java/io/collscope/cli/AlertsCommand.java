package io.collscope.cli;

import io.collscope.alerts.AlertForwarder;
import io.collscope.alerts.AlertmanagerClient;
import io.collscope.broker.TopicDrainer;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope alerts forward}: deliver the alerts topic to Prometheus Alertmanager. */
@Command(
    name = "alerts",
    mixinStandardHelpOptions = true,
    description = "Alert delivery.",
    subcommands = {AlertsCommand.Forward.class})
final class AlertsCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  @Command(
      name = "forward",
      mixinStandardHelpOptions = true,
      description = {
        "Send the transitions of the alerts topic to Prometheus Alertmanager (POST /api/v2/alerts),"
            + " as Prometheus does: firing alerts again every --resend interval with endsAt ="
            + " now + 4 x resend, resolved ones for 15 minutes; failed deliveries are retried with"
            + " back-off. Runs until interrupted."
      })
  static final class Forward implements Callable<Integer> {

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @CommandLine.Mixin KafkaClientOptions kafkaClient;

    @Option(
        names = "--alertmanager",
        required = true,
        description = "Alertmanager's URL, e.g. http://localhost:9093.")
    String alertmanager;

    @Option(
        names = "--bootstrap",
        defaultValue = Defaults.BOOTSTRAP,
        description = "Kafka bootstrap servers. Default: ${DEFAULT-VALUE}")
    String bootstrap;

    @Option(
        names = "--topic",
        defaultValue = Defaults.ALERT_TOPIC,
        description = "The alerts topic. Default: ${DEFAULT-VALUE}")
    String topic;

    @Option(
        names = "--resend",
        defaultValue = "30s",
        converter = DurationConverter.class,
        description = "Send every alert again this often. Default: ${DEFAULT-VALUE}")
    Duration resend;

    @Option(
        names = "--from-beginning",
        negatable = true,
        defaultValue = "true",
        fallbackValue = "true",
        description =
            "Rebuild the alert state from the topic's beginning (default); --no-from-beginning:"
                + " only transitions produced after start.")
    boolean fromBeginning;

    @Option(
        names = "--alertmanager-basic-auth-username",
        description = "Basic auth to Alertmanager (Prometheus: basic_auth.username).")
    String basicAuthUsername;

    @Option(
        names = "--alertmanager-basic-auth-password-file",
        description = "Its password, the file's first line (basic_auth.password_file).")
    java.nio.file.Path basicAuthPasswordFile;

    @Option(
        names = "--alertmanager-bearer-token-file",
        description = "A bearer token, the file's first line (authorization.credentials_file).")
    java.nio.file.Path bearerTokenFile;

    @Option(
        names = "--alertmanager-ca-file",
        description =
            "PEM CA certificate(s) that sign Alertmanager's TLS certificate, besides the JVM's"
                + " (tls_config.ca_file).")
    java.nio.file.Path caFile;

    @Option(
        names = "--generator-url",
        description = "Sent as each alert's generatorURL (e.g. a dashboard); default: none.")
    String generatorUrl;

    @Option(
        names = "--seconds",
        defaultValue = "0",
        description = "Stop after this many seconds; 0: run until interrupted.")
    long seconds;

    @Override
    public Integer call() throws InterruptedException {
      URI url;
      try {
        url = AlertmanagerClient.parseUrl(alertmanager);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--alertmanager " + e.getMessage());
      }
      if (resend.isZero()) throw new IllegalArgumentException("--resend must be > 0");
      if (seconds < 0) throw new IllegalArgumentException("--seconds must be >= 0");
      if (generatorUrl != null) {
        try {
          AlertmanagerClient.parseUrl(generatorUrl);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("--generator-url " + e.getMessage());
        }
      }
      if (basicAuthPasswordFile != null && basicAuthUsername == null) {
        throw new IllegalArgumentException(
            "--alertmanager-basic-auth-password-file needs --alertmanager-basic-auth-username");
      }
      if (basicAuthUsername != null && bearerTokenFile != null) {
        throw new IllegalArgumentException(
            "--alertmanager-basic-auth-username and --alertmanager-bearer-token-file exclude each"
                + " other");
      }
      for (java.nio.file.Path f :
          new java.nio.file.Path[] {basicAuthPasswordFile, bearerTokenFile, caFile}) {
        if (f != null && !java.nio.file.Files.isReadable(f)) {
          throw new IllegalArgumentException("cannot read " + f);
        }
      }
      AlertmanagerClient client =
          new AlertmanagerClient(
              url,
              Duration.ofSeconds(10),
              new AlertmanagerClient.Credentials(
                  basicAuthUsername, basicAuthPasswordFile, bearerTokenFile, caFile));
      AlertForwarder forwarder =
          new AlertForwarder(client, AlertForwarder.Config.of(resend, generatorUrl));
      CountDownLatch done = new CountDownLatch(1);
      Thread hook =
          new Thread(
              () -> {
                forwarder.stop();
                try {
                  done.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "collscope-alerts-stop");
      Runtime.getRuntime().addShutdownHook(hook);
      Thread timer = null;
      if (seconds > 0) {
        timer =
            new Thread(
                () -> {
                  try {
                    Thread.sleep(seconds * 1000);
                    forwarder.stop();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                },
                "collscope-alerts-timer");
        timer.setDaemon(true);
        timer.start();
      }
      spec.commandLine()
          .getErr()
          .printf(
              "forwarding %s from %s to %s every %s%n",
              topic,
              bootstrap,
              url,
              resend.toMillis() % 1000 == 0 ? resend.toSeconds() + "s" : resend.toMillis() + "ms");
      spec.commandLine().getErr().flush();
      try (KafkaConsumer<byte[], byte[]> c =
          TopicDrainer.consumer(bootstrap, fromBeginning, kafkaClient.properties())) {
        forwarder.run(c, topic);
      } finally {
        done.countDown();
        if (timer != null) timer.interrupt();
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // the hook is running
        }
      }
      spec.commandLine().getErr().println("stopped: " + forwarder.stats());
      return Defaults.EXIT_OK;
    }
  }
}
