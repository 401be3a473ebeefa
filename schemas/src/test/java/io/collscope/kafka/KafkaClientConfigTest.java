package io.collscope.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaClientConfigTest {

  @TempDir Path dir;

  @Test
  void theFilesPropertiesWinOverTheDefaultsAndItsSecretsAreNeverShown() throws Exception {
    Path f = dir.resolve("client.properties");
    Files.writeString(
        f,
        String.join(
            "\n",
            "security.protocol=SASL_SSL",
            "sasl.mechanism=SCRAM-SHA-512",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"emitter\" password=\"s3cret-pw\";",
            "ssl.truststore.password=store-pw",
            "acks=1",
            ""));
    KafkaClientConfig c = KafkaClientConfig.load(f);
    Map<String, Object> m = c.applyTo(Map.of("acks", "all", "bootstrap.servers", "b:9092"));
    assertThat(m)
        .containsEntry("acks", "1")
        .containsEntry("security.protocol", "SASL_SSL")
        .containsEntry("bootstrap.servers", "b:9092");
    assertThat(c.toString())
        .contains("security.protocol=SASL_SSL", "sasl.jaas.config=[hidden]")
        .doesNotContain("s3cret-pw", "store-pw", "emitter");
  }

  @Test
  void aFileThatSetsTheConnectionsOwnKeysOrCannotBeReadIsRefusedInOneLine() throws Exception {
    Path f = dir.resolve("bad.properties");
    Files.writeString(f, "bootstrap.servers=elsewhere:9092\n");
    assertThatThrownBy(() -> KafkaClientConfig.load(f))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sets bootstrap.servers")
        .hasMessageContaining("--bootstrap");
    assertThatThrownBy(() -> KafkaClientConfig.load(dir.resolve("missing.properties")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("cannot read Kafka client properties");
    assertThat(KafkaClientConfig.loadOrNone("").isEmpty()).isTrue();
  }
}
