package io.collscope.cli;

import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.kafka.KafkaClientConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import picocli.CommandLine.Option;

/**
 * {@code --kafka-config FILE}, shared by every command that talks to Kafka: standard Kafka client
 * properties (TLS, SASL) for its producers, consumers and admin clients. A file that cannot be read
 * raises IllegalArgumentException with a one-line message (exit code 2).
 */
final class KafkaClientOptions {

  @Option(
      names = "--kafka-config",
      paramLabel = "FILE",
      description =
          "Kafka client properties (security.protocol, ssl.*, sasl.*: see docs/RELIABILITY.md)"
              + " for every connection to the broker. Default: the file named by $"
              + KafkaClientConfig.ENV
              + ", else plaintext and anonymous.")
  Path file;

  private KafkaClientConfig loaded;

  /** The properties of the file (read once). */
  KafkaClientConfig config() {
    if (loaded == null) {
      try {
        loaded = KafkaClientConfig.fromOptionOrEnv(file);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--kafka-config: " + e.getMessage());
      }
    }
    return loaded;
  }

  /** The properties as a client's configuration map. */
  Map<String, String> properties() {
    return config().properties();
  }

  /**
   * Fails with a one-line reason unless the broker at {@code bootstrap} answers and accepts this
   * client within {@code timeout}: a refused login or a broker that wants TLS is an error, not a
   * silent wait.
   */
  void checkAccepted(String bootstrap, Duration timeout) throws BrokerUnreachableException {
    Map<String, Object> conf =
        config()
            .applyTo(
                Map.of(
                    AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis(),
                    AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis()));
    try (Admin admin = Admin.create(conf)) {
      admin.describeCluster().clusterId().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BrokerUnreachableException("interrupted while connecting to " + bootstrap, e);
    } catch (Exception e) {
      throw new BrokerUnreachableException(
          KafkaSnapshotSink.refusal(bootstrap, config(), timeout, e), e);
    }
  }
}
