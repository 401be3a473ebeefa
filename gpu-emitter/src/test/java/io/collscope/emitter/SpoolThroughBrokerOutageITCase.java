package io.collscope.emitter;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.schema.Snapshots;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The outage of the reliability issue, for real: 4 CPU ranks emit every 250 ms for 16 s; the broker
 * is SIGKILLed 3 s in and restarted on the same data directory and port 8 s later; emitting goes on
 * throughout. Every (rank, boot, seq) the reporter published must be in the topic — 0 lost — and
 * the spool must be drained by the end of the run. The topic is read to its end offsets, so copies
 * a resend put there are counted, not cut off at the expected count.
 */
class SpoolThroughBrokerOutageITCase {

  @TempDir Path tmp;

  @Test
  void aBrokerKilledMidRunLosesNoSnapshot() throws Exception {
    Path data = tmp.resolve("kafka");
    EmbeddedKafka kafka = EmbeddedKafka.start(data, 0, false, EmbeddedKafka.DEFAULT_START_TIMEOUT);
    int port = kafka.port();
    EmbeddedKafka[] restarted = new EmbeddedKafka[1];
    long[] backlog = new long[1];
    // When the broker's restart began, when it answered again, and when the spool had drained.
    long[] recovery = new long[3];
    String topic = EmbeddedKafka.freshTopic("spooled");
    Identity id = Identity.of("it", "outage", "tp0");
    Emitter.Result result;
    SpoolingSnapshotSink sink =
        KafkaSnapshotSink.connectSpooled(
            kafka.bootstrapServers(),
            topic,
            4,
            Duration.ofSeconds(30),
            tmp.resolve("spool"),
            8 << 20);
    try (CpuCollective backend = new CpuCollective(CollectiveConfig.of(4), FaultPlan.NONE)) {
      Emitter emitter = new Emitter(backend, id, sink, Duration.ofMillis(250));
      Thread chaos =
          new Thread(
              () -> {
                try {
                  Thread.sleep(3000);
                  kafka.kill();
                  Thread.sleep(7500);
                  backlog[0] = sink.pending(); // what the outage left in the spool
                  Thread.sleep(500);
                  recovery[0] = System.nanoTime();
                  restarted[0] =
                      EmbeddedKafka.start(data, port, true, EmbeddedKafka.DEFAULT_START_TIMEOUT);
                  recovery[1] = System.nanoTime();
                  while (sink.pending() > 0 && System.nanoTime() - recovery[1] < 30_000_000_000L) {
                    Thread.sleep(50);
                  }
                  recovery[2] = System.nanoTime();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              });
      chaos.start();
      result = emitter.run(Duration.ofSeconds(16));
      chaos.join();
    }
    assertThat(restarted[0]).as("broker restarted").isNotNull();
    assertThat(backlog[0]).as("snapshots spooled during the outage").isGreaterThan(4 * 20);
    assertThat(sink.outages()).as("the outage was noticed").isPositive();
    try (EmbeddedKafka again = restarted[0]) {
      try (sink) {
        assertThat(sink.awaitDrained(Duration.ofSeconds(60))).as("spool drained").isTrue();
      }
      assertThat(result.failure()).isEmpty();
      assertThat(sink.failed()).isZero();
      assertThat(Files.exists(tmp.resolve("spool"))).isTrue();

      // Read to the topic's end, not to the count expected: copies beyond it are counted too.
      List<ConsumerRecord<byte[], byte[]>> records =
          TopicDrainer.drainToEnd(again.bootstrapServers(), topic, Duration.ofSeconds(60));
      DeliveryTally tally = DeliveryTally.of(records);
      TreeMap<Integer, TreeSet<Long>> seqs = new TreeMap<>();
      for (ConsumerRecord<byte[], byte[]> r : records) {
        CounterSnapshot s = Snapshots.decode(r.value());
        assertThat(s.getBootId()).isEqualTo(id.bootId());
        seqs.computeIfAbsent(s.getRank(), k -> new TreeSet<>()).add(s.getSeq());
        assertThat(r.headers().lastHeader(SpoolingSnapshotSink.DROPPED_HEADER)).isNotNull();
      }
      assertThat(tally.distinct()).as("every published snapshot").isEqualTo(result.published());
      assertThat(tally.gaps()).as("sequence gaps").isZero();
      assertThat(seqs).containsOnlyKeys(0, 1, 2, 3);
      for (var e : seqs.entrySet()) {
        assertThat(e.getValue().first()).isEqualTo(1);
        assertThat(e.getValue().last())
            .as("rank %d: its highest sequence is the last it published", e.getKey())
            .isEqualTo(e.getValue().size());
      }
      long highestTotal = tally.highest().values().stream().mapToLong(Long::longValue).sum();
      assertThat(highestTotal)
          .as("no lost tail after a rank's last sequence")
          .isEqualTo(result.published());
      // docs/RELIABILITY.md's row (dev/chaos/run-all collects it).
      Path row = Path.of("target", "reliability", "SpoolThroughBrokerOutageITCase.tsv");
      Files.createDirectories(row.getParent());
      Files.writeString(
          row,
          String.join(
                  "\t",
                  "broker SIGKILLed 3 s into a run, restarted on the same data directory and port"
                      + " 8 s later",
                  "`SpoolThroughBrokerOutageITCase` (4 CPU ranks, 250 ms interval, 16 s)",
                  result.published() + " snapshots (" + backlog[0] + " spooled during the outage)",
                  tally.distinct()
                      + " distinct (cluster, job, communicator, rank, boot, seq) in the topic read to"
                      + " its end, "
                      + tally.gaps()
                      + " sequence gaps",
                  Long.toString(result.published() - tally.distinct()),
                  tally.duplicated()
                      + " in the topic (at least once; the job drops copies by key, no job runs"
                      + " here)",
                  String.format(
                      java.util.Locale.ROOT,
                      "spool drained %.1f s after the broker answered again (%.1f s after its"
                          + " restart began, a JVM start included)",
                      Math.max(0, recovery[2] - recovery[1]) / 1e9,
                      (recovery[2] - recovery[0]) / 1e9))
              + "\n");
    }
  }
}
