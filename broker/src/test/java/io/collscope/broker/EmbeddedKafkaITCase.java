package io.collscope.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class EmbeddedKafkaITCase {

  @Test
  void startsARealBrokerThatStoresAndServesRecordsAndStopsWithoutTrace() throws Exception {
    java.nio.file.Path dir;
    try (EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      dir = kafka.dataDir();
      String topic = EmbeddedKafka.freshTopic("broker-it");
      try (KafkaProducer<String, String> p =
          new KafkaProducer<>(
              Map.of(
                  ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                  kafka.bootstrapServers(),
                  ProducerConfig.ACKS_CONFIG,
                  "all"),
              new StringSerializer(),
              new StringSerializer())) {
        for (int i = 0; i < 10; i++) {
          p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
        }
      }
      List<ConsumerRecord<byte[], byte[]>> got =
          TopicDrainer.drain(kafka.bootstrapServers(), topic, 10, Duration.ofSeconds(30));
      assertThat(got).hasSize(10);
      assertThat(got)
          .extracting(r -> new String(r.value(), StandardCharsets.UTF_8))
          .contains("v0", "v9");
      assertThat(java.nio.file.Files.readString(kafka.logFile())).contains("Kafka Server started");
    }
    assertThat(dir).doesNotExist();
  }
}
