package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.schema.Snapshots;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code collscope emit} in its own JVM stopped by SIGTERM, as a scheduler stops it: it finishes
 * the ranks' collectives, takes a last snapshot, drains its spool, prints its summary and exits 143
 * (128 + SIGTERM, what the JVM reports for a signal whose hooks completed); every snapshot of every
 * rank is in the topic, sequences 1..n with no gap.
 */
class EmitSigtermITCase {

  @TempDir Path dir;

  @Test
  void sigtermDrainsTheSpoolAndEveryRanksSnapshotsAreDelivered() throws Exception {
    try (EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      String topic = EmbeddedKafka.freshTopic("sigterm");
      Path log = dir.resolve("emit.log");
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-cp");
      cmd.add(System.getProperty("java.class.path"));
      cmd.add(Collscope.class.getName());
      cmd.addAll(
          List.of(
              "emit",
              "--bootstrap",
              kafka.bootstrapServers(),
              "--topic",
              topic,
              "--ranks",
              "4",
              "--interval",
              "200ms",
              "--backend",
              "cpu",
              "--spool",
              dir.resolve("spool").toString()));
      Process emit =
          new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      // Running and publishing: some snapshots of every rank are in the topic.
      TopicDrainer.drain(kafka.bootstrapServers(), topic, 4 * 5, Duration.ofSeconds(90));
      emit.destroy(); // SIGTERM
      assertThat(emit.waitFor(60, TimeUnit.SECONDS)).as("stopped; see %s", log).isTrue();
      String out = Files.readString(log, StandardCharsets.UTF_8);
      System.out.println(out);
      assertThat(emit.exitValue()).as(out).isEqualTo(143);
      assertThat(out).contains(" 0 left", "0 failed deliveries");
      long published = Long.parseLong(out.replaceAll("(?s).*published (\\d+) snapshots.*", "$1"));

      Map<Integer, TreeSet<Long>> seqs = new TreeMap<>();
      for (ConsumerRecord<byte[], byte[]> r :
          TopicDrainer.drain(
              kafka.bootstrapServers(), topic, (int) published, Duration.ofSeconds(60))) {
        CounterSnapshot s = Snapshots.decode(r.value());
        seqs.computeIfAbsent(s.getRank(), k -> new TreeSet<>()).add(s.getSeq());
      }
      assertThat(seqs).containsOnlyKeys(0, 1, 2, 3);
      long total = 0;
      for (var e : seqs.entrySet()) {
        assertThat(e.getValue().first()).isEqualTo(1);
        assertThat(e.getValue().last())
            .as("rank %d: 1..n with no gap", e.getKey())
            .isEqualTo(e.getValue().size());
        total += e.getValue().size();
      }
      assertThat(total).as("every published snapshot").isEqualTo(published);
    }
  }
}
