package io.collscope.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.JobOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kafka client file's secrets never reach the submitted job's program arguments (which Flink's
 * REST API and web UI show to anyone who can read them): the job is handed the file's path, and
 * reads the file itself where it runs.
 */
class JobArgumentsSecretTest {

  @TempDir Path dir;

  @Test
  void theJobsArgumentsNameTheKafkaConfigFileButHoldNoneOfItsSecrets() throws Exception {
    String secret = "pw-" + java.util.UUID.randomUUID();
    Path client =
        Files.writeString(
            dir.resolve("client.properties"),
            "security.protocol=SASL_SSL\n"
                + "sasl.mechanism=SCRAM-SHA-512\n"
                + "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule"
                + " required username=\"job\" password=\""
                + secret
                + "\";\n"
                + "ssl.truststore.password="
                + secret
                + "\n");
    List<String> args =
        AttributionConfig.arguments(
            AttributionConfig.resolve(
                ConfigFile.none(), Map.of(), Map.of(JobOptions.KAFKA_CONFIG, client.toString())));
    assertThat(String.join(" ", args)).doesNotContain(secret).contains(client.toString());
  }
}
