package io.collscope.cli;

import io.collscope.exporter.Exporter;
import io.collscope.exporter.ExporterAccess;
import io.collscope.exporter.ExporterState;
import io.collscope.exporter.OutputTopicReader;
import io.collscope.kafka.BrokerUnreachableException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope exporter}: Prometheus metrics of the attribution job's output topics. */
@Command(
    name = "exporter",
    mixinStandardHelpOptions = true,
    description = {
      "Serve Prometheus metrics of the job's output topics on http://HOST:PORT/metrics: the"
          + " latest window of every communicator and rank (latency p50/p99, per-phase us, max"
          + " wait, verdict, findings, culprits), alert state, pipeline lag and dead letters."
          + " Series of a rank or communicator with no record for --series-ttl are removed."
          + " Runs until interrupted (docs/MONITORING.md)."
    })
final class ExporterCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Option(
      names = "--bootstrap",
      defaultValue = Defaults.BOOTSTRAP,
      description = "Kafka bootstrap servers. Default: ${DEFAULT-VALUE}")
  String bootstrap;

  @Option(
      names = "--port",
      defaultValue = Defaults.EXPORTER_PORT,
      description =
          "Port of the metrics endpoint (all interfaces); 0: a free one. Default: ${DEFAULT-VALUE}")
  int port;

  @Option(
      names = "--bind",
      defaultValue = "${env:COLLSCOPE_EXPORTER_BIND:-127.0.0.1}",
      description =
          "Address to serve /metrics on: loopback unless told otherwise; 0.0.0.0 for every"
              + " interface (env COLLSCOPE_EXPORTER_BIND). Default: ${DEFAULT-VALUE}")
  String bind;

  @Option(
      names = "--tls-keystore",
      description = "Serve HTTPS with the key and certificate of this PKCS12 key store.")
  java.nio.file.Path tlsKeystore;

  @Option(
      names = "--tls-keystore-password-file",
      description = "File whose first line is the --tls-keystore password (none: empty).")
  java.nio.file.Path tlsKeystorePasswordFile;

  @Option(
      names = "--basic-auth-users",
      description =
          "File of user:password lines: scrapes without one of them are refused (401). Keep it"
              + " 0600; Prometheus sends the password from its basic_auth.password_file.")
  java.nio.file.Path basicAuthUsers;

  @Option(
      names = "--series-ttl",
      defaultValue = Defaults.SERIES_TTL,
      converter = DurationConverter.class,
      description =
          "Remove the series of a rank or communicator when no record about it was written for"
              + " this long. Default: ${DEFAULT-VALUE}")
  Duration seriesTtl;

  @Option(
      names = "--rank-window-topic",
      defaultValue = Defaults.RANK_WINDOW_TOPIC,
      description = "The job's rank-window topic. Default: ${DEFAULT-VALUE}")
  String rankWindowTopic;

  @Option(
      names = "--attribution-topic",
      defaultValue = Defaults.ATTRIBUTION_TOPIC,
      description = "The job's attribution topic. Default: ${DEFAULT-VALUE}")
  String attributionTopic;

  @Option(
      names = "--alert-topic",
      defaultValue = Defaults.ALERT_TOPIC,
      description = "The job's alert topic. Default: ${DEFAULT-VALUE}")
  String alertTopic;

  @Option(
      names = "--deadletter-topic",
      defaultValue = Defaults.DEADLETTER_TOPIC,
      description = "The job's dead-letter topic. Default: ${DEFAULT-VALUE}")
  String deadletterTopic;

  @Option(
      names = "--broker-timeout",
      defaultValue = Defaults.BROKER_TIMEOUT,
      converter = DurationConverter.class,
      description = "How long to wait for the broker at start. Default: ${DEFAULT-VALUE}")
  Duration brokerTimeout;

  @Option(
      names = "--seconds",
      defaultValue = "0",
      description = "Stop after this many seconds; 0: run until interrupted.")
  long seconds;

  @Override
  public Integer call() throws Exception {
    OutputTopicReader.Topics topics = checkOptions();
    PrintWriter err = spec.commandLine().getErr();
    ExporterAccess access =
        new ExporterAccess(bind, tlsKeystore, tlsKeystorePasswordFile, basicAuthUsers);
    try {
      kafkaClient.checkAccepted(bootstrap, brokerTimeout);
    } catch (BrokerUnreachableException e) {
      err.println("collscope exporter: " + e.getMessage());
      err.flush();
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    CountDownLatch closed = new CountDownLatch(1);
    // On SIGTERM: tell the loop below to stop, and keep the JVM up until the exporter closed.
    Thread hook =
        new Thread(
            () -> {
              stopped.countDown();
              try {
                closed.await(15, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "collscope-exporter-stop");
    try (Exporter exporter =
        Exporter.start(bootstrap, kafkaClient.properties(), topics, port, seriesTtl, access)) {
      Runtime.getRuntime().addShutdownHook(hook);
      err.printf(
          "collscope exporter: %s://%s:%d/metrics%s, reading %s from %s, series TTL %ds%n",
          access.tls() ? "https" : "http",
          bind,
          exporter.port(),
          basicAuthUsers != null ? " (basic auth)" : "",
          String.join(", ", topics.all()),
          bootstrap,
          seriesTtl.toSeconds());
      err.flush();
      long deadline = seconds == 0 ? Long.MAX_VALUE : System.nanoTime() + seconds * 1_000_000_000L;
      // Until the time is up, the process is told to stop, or the reader failed.
      while (System.nanoTime() < deadline && stopped.getCount() > 0) {
        if (exporter.awaitReader(Duration.ofMillis(200))) break;
      }
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running
      }
      if (exporter.failure().isPresent()) {
        err.println("collscope exporter: error: " + exporter.failure().get());
        err.flush();
        return Defaults.EXIT_FAILURE;
      }
      StringBuilder read = new StringBuilder();
      for (ExporterState.TopicStats t : exporter.state().topics()) {
        read.append(
            String.format(" %s=%d (%d undecodable)", t.topic(), t.records(), t.undecodable()));
      }
      err.println("collscope exporter: stopped; records read:" + read);
      err.flush();
    } finally {
      closed.countDown();
    }
    return Defaults.EXIT_OK;
  }

  private OutputTopicReader.Topics checkOptions() {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("--port must be in 0..65535, got " + port);
    }
    if (seriesTtl.isZero()) throw new IllegalArgumentException("--series-ttl must be > 0");
    if (bind.isBlank()) throw new IllegalArgumentException("--bind must not be empty");
    if (tlsKeystorePasswordFile != null && tlsKeystore == null) {
      throw new IllegalArgumentException("--tls-keystore-password-file needs --tls-keystore");
    }
    for (java.nio.file.Path f :
        new java.nio.file.Path[] {tlsKeystore, tlsKeystorePasswordFile, basicAuthUsers}) {
      if (f != null && !java.nio.file.Files.isReadable(f)) {
        throw new IllegalArgumentException("cannot read " + f);
      }
    }
    if (brokerTimeout.isZero()) throw new IllegalArgumentException("--broker-timeout must be > 0");
    if (seconds < 0) throw new IllegalArgumentException("--seconds must be >= 0");
    OutputTopicReader.Topics topics =
        new OutputTopicReader.Topics(
            rankWindowTopic, attributionTopic, alertTopic, deadletterTopic);
    for (String t : topics.all()) {
      if (t.isBlank()) throw new IllegalArgumentException("topic names must not be empty");
    }
    if (new HashSet<>(topics.all()).size() != topics.all().size()) {
      throw new IllegalArgumentException(
          "the four topics must differ, got " + String.join(", ", topics.all()));
    }
    return topics;
  }
}
