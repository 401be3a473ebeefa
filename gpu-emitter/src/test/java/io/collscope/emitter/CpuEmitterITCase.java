package io.collscope.emitter;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.model.RankTotals;
import io.collscope.schema.Snapshots;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** 4 CPU ranks with an injected slow rank emit into a real broker; the records tell the truth. */
class CpuEmitterITCase {

  private static EmbeddedKafka kafka;

  @BeforeAll
  static void startBroker() {
    kafka = EmbeddedKafka.startTemporary();
  }

  @AfterAll
  static void stopBroker() {
    kafka.close();
  }

  @Test
  void slowRankTwoIsTheDominantPeerWaitOfEveryOtherRank() throws Exception {
    String topic = EmbeddedKafka.freshTopic("snapshots");
    int n = 4;
    FaultPlan plan = FaultPlan.parse(List.of("slow-rank=2:300us"), n);
    Identity id = Identity.of("it-cluster", "it-job", "comm-it");
    Emitter.Result result;
    try (CpuCollective backend = new CpuCollective(CollectiveConfig.of(n), plan);
        KafkaSnapshotSink sink =
            KafkaSnapshotSink.connect(kafka.bootstrapServers(), topic, 4, Duration.ofSeconds(30))) {
      result = new Emitter(backend, id, sink, Duration.ofMillis(500)).run(Duration.ofSeconds(6));
    }
    assertThat(result.failure()).isEmpty();
    assertThat(result.failedDeliveries()).isZero();
    assertThat(result.published()).isGreaterThanOrEqualTo(4L * 10);

    List<ConsumerRecord<byte[], byte[]>> records =
        TopicDrainer.drain(
            kafka.bootstrapServers(), topic, (int) result.published(), Duration.ofSeconds(60));
    assertThat(records).hasSize((int) result.published());

    Map<Integer, List<CounterSnapshot>> byRank = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> rec : records) {
      CounterSnapshot s = Snapshots.decode(rec.value());
      assertThat(new String(rec.key(), StandardCharsets.UTF_8))
          .isEqualTo("it-cluster/it-job/comm-it/" + s.getRank());
      assertThat(rec.timestamp()).isEqualTo(s.getEventTime().toEpochMilli());
      assertThat(s.getBootId()).isEqualTo(id.bootId());
      byRank.computeIfAbsent(s.getRank(), r -> new ArrayList<>()).add(s);
    }
    assertThat(byRank).containsOnlyKeys(0, 1, 2, 3);

    for (List<CounterSnapshot> series : byRank.values()) {
      // one key per rank -> one partition -> Kafka order is publication order
      for (int i = 1; i < series.size(); i++) {
        CounterSnapshot a = series.get(i - 1);
        CounterSnapshot b = series.get(i);
        assertThat(b.getSeq()).isGreaterThan(a.getSeq());
        assertMonotonic(a, b);
      }
    }

    for (int r = 0; r < n; r++) {
      if (r == 2) continue;
      List<CounterSnapshot> series = byRank.get(r);
      CounterSnapshot last = series.get(series.size() - 1);
      assertThat(last.getCalls()).isGreaterThan(1_000);
      List<Long> waits = last.getPeerWaitCycles();
      for (int p = 0; p < n; p++) {
        if (p == 2 || p == r) continue;
        assertThat(waits.get(2))
            .as("rank %d: wait on peer 2 vs peer %d (%s)", r, p, waits)
            .isGreaterThan(waits.get(p));
      }
    }
  }

  private static void assertMonotonic(CounterSnapshot a, CounterSnapshot b) {
    assertThat(RankTotals.of(b).firstBackwards(RankTotals.of(a)))
        .as("seq %d -> %d", a.getSeq(), b.getSeq())
        .isNull();
  }
}
