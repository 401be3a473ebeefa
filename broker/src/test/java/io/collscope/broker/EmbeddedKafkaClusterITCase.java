package io.collscope.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Three real KRaft nodes, each its own JVM: topics are replicated three times with two in sync
 * required, and an idempotent producer with acks=all loses and duplicates nothing while the
 * partition's leader is SIGKILLed under it. Produced is the producer's own count of acknowledged
 * sends; consumed is what a read_committed reader finds, counted per sequence.
 */
class EmbeddedKafkaClusterITCase {

  @Test
  void theLeaderSigkilledMidRunLosesNothingAndDuplicatesNothing() throws Exception {
    java.nio.file.Path dir;
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.startTemporary(3)) {
      dir = kafka.logFile(1).getParent().getParent();
      String topic = EmbeddedKafka.freshTopic("cluster-it");
      kafka.createTopics(1, topic);
      TopicPartitionInfo p = kafka.describe(List.of(topic)).get(topic).get(0);
      assertThat(p.replicas()).hasSize(3);
      assertThat(p.isr()).hasSize(3);

      Set<Long> acknowledged = new ConcurrentSkipListSet<>();
      AtomicLong failed = new AtomicLong();
      long sent = 0;
      int leader;
      try (KafkaProducer<String, String> producer =
          new KafkaProducer<>(
              Map.of(
                  ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                  kafka.bootstrapServers(),
                  ProducerConfig.ACKS_CONFIG,
                  "all",
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  true,
                  ProducerConfig.LINGER_MS_CONFIG,
                  5),
              new StringSerializer(),
              new StringSerializer())) {
        leader = kafka.leaderOf(topic, 0);
        long killAt = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        long endAt = System.nanoTime() + Duration.ofSeconds(14).toNanos();
        boolean killed = false;
        while (System.nanoTime() < endAt) {
          long seq = ++sent;
          producer.send(
              new ProducerRecord<>(topic, "k", Long.toString(seq)),
              (md, e) -> {
                if (e == null) acknowledged.add(seq);
                else failed.incrementAndGet();
              });
          if (!killed && System.nanoTime() > killAt) {
            kafka.kill(leader);
            killed = true;
          }
          Thread.sleep(2);
        }
        producer.flush();
      }
      int newLeader = kafka.leaderOf(topic, 0);
      assertThat(newLeader).as("the leader moved off the killed node").isNotEqualTo(leader);

      Map<Long, Integer> consumed = new HashMap<>();
      List<ConsumerRecord<byte[], byte[]>> records =
          TopicDrainer.drain(
              kafka.bootstrapServers(),
              topic,
              Duration.ofSeconds(60),
              l -> l.size() >= acknowledged.size());
      for (ConsumerRecord<byte[], byte[]> r : records) {
        consumed.merge(
            Long.parseLong(new String(r.value(), StandardCharsets.UTF_8)), 1, Integer::sum);
      }
      Set<Long> lost = new TreeSet<>(acknowledged);
      lost.removeAll(consumed.keySet());
      long duplicated = records.size() - consumed.size();
      System.out.printf(
          "replicated broker leader SIGKILL: sent %d, acknowledged %d, failed %d, consumed %d"
              + " distinct of %d records, lost %d, duplicated %d%n",
          sent,
          acknowledged.size(),
          failed.get(),
          consumed.size(),
          records.size(),
          lost.size(),
          duplicated);
      assertThat(failed.get()).as("sends that failed").isZero();
      assertThat(acknowledged).as("acknowledged").hasSize((int) sent);
      assertThat(lost).as("acknowledged but not read back").isEmpty();
      assertThat(duplicated).as("read back more than once").isZero();

      kafka.restart(leader);
      kafka.awaitFullyReplicated(Duration.ofSeconds(60));
      assertThat(kafka.describe(List.of(topic)).get(topic).get(0).isr()).hasSize(3);
    }
    assertThat(dir).doesNotExist();
  }
}
