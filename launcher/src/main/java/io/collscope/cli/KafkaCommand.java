package io.collscope.cli;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.EmbeddedKafkaCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope kafka}: a standalone KRaft broker from the Maven artifacts, or with {@code
 * --nodes N} a replicated cluster of N nodes (each its own JVM; replication 3, min.insync.replicas
 * 2).
 */
@Command(
    name = "kafka",
    mixinStandardHelpOptions = true,
    description = "Run a KRaft Kafka broker (or --nodes N of them, replicated) until interrupted.")
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

  @Option(
      names = "--nodes",
      defaultValue = "1",
      description =
          "KRaft nodes (broker and controller each), on --port and the ports after it; from 3 on,"
              + " every topic has 3 replicas and min.insync.replicas 2. Default: ${DEFAULT-VALUE}")
  int nodes;

  @Override
  public Integer call() throws Exception {
    if (port < 1 || port > 65535 - Math.max(0, nodes - 1)) {
      throw new IllegalArgumentException("--port must be in 1..65535, got " + port);
    }
    if (nodes < 1 || nodes > 9) {
      throw new IllegalArgumentException("--nodes must be in 1..9, got " + nodes);
    }
    if (nodes > 1) {
      try (EmbeddedKafkaCluster kafka =
          EmbeddedKafkaCluster.start(dataDir.toAbsolutePath(), nodes, port, false)) {
        System.out.println(
            "Kafka ready at "
                + kafka.bootstrapServers()
                + " ("
                + nodes
                + " nodes, replication "
                + kafka.replicationFactor()
                + ", min.insync.replicas "
                + kafka.minInsyncReplicas()
                + ", logs "
                + kafka.logFile(1).getParent().getParent()
                + ")");
        System.out.flush();
        kafka.waitFor();
        System.err.println("collscope kafka: every node exited");
        return Defaults.EXIT_OK;
      }
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
