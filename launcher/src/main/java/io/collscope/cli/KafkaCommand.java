package io.collscope.cli;

import io.collscope.broker.EmbeddedKafka;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope kafka}: a standalone single-node KRaft broker from the Maven artifacts. */
@Command(
    name = "kafka",
    mixinStandardHelpOptions = true,
    description = "Run a single-node KRaft Kafka broker until interrupted.")
final class KafkaCommand implements Callable<Integer> {

  @Option(
      names = "--port",
      defaultValue = Defaults.KAFKA_PORT,
      description = "Client port. Default: ${DEFAULT-VALUE}")
  int port;

  @Option(
      names = "--data-dir",
      defaultValue = Defaults.KAFKA_DATA,
      description = "Data directory (kept between runs). Default: ${DEFAULT-VALUE}")
  Path dataDir;

  @Override
  public Integer call() throws Exception {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("--port must be in 1..65535, got " + port);
    }
    try (EmbeddedKafka kafka =
        EmbeddedKafka.start(dataDir.toAbsolutePath(), port, false, Duration.ofSeconds(90))) {
      System.out.println(
          "Kafka ready at " + kafka.bootstrapServers() + " (log " + kafka.logFile() + ")");
      System.out.flush();
      int rc = kafka.waitFor();
      System.err.println("collscope kafka: broker exited with " + rc);
      return rc == 0 || rc == 143 ? Defaults.EXIT_OK : Defaults.EXIT_FAILURE;
    }
  }
}
