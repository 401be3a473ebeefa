package io.collscope.flink.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.RankWindow;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.flink.sink.CollectingSink;
import io.collscope.flink.testing.MiniClusters;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Fuzzed input through the whole job on a MiniCluster (decode → delta → windows → attribution →
 * alerts): the job finishes, every contract breach is dead-lettered with a reason that names it,
 * and the canary communicator fed alongside the garbage comes out exact. CI runs {@link #COUNT}
 * records; {@code collscope fuzz --count 1000000} is the long run (docs/RELIABILITY.md).
 */
class FuzzITCase {

  static final long COUNT = 40_000;
  static final long SEED = 20261130;

  @RegisterExtension
  static final MiniClusterExtension CLUSTER = MiniClusters.oneTaskManagerTwoSlots();

  @Test
  void theJobSurvivesFuzzedInputAndItsStateStaysSound() throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    // One source reader, as one Kafka partition: a second would split the index range and run
    // ahead in event time (see RecordedSource).
    env.setParallelism(1);
    CollectingSink<RankWindow> windows = new CollectingSink<>();
    CollectingSink<Attribution> attributions = new CollectingSink<>();
    CollectingSink<DeadLetter> deadLetters = new CollectingSink<>();
    CollectingSink<Alert> alerts = new CollectingSink<>();
    AttributionJob.topology(
        env,
        FuzzedRecords.source(SEED, COUNT),
        new AttributionJob.Sinks(windows, attributions, deadLetters, alerts),
        JobOptions.defaults());
    env.execute("fuzz"); // throws if the job failed
    assertThat(io.collscope.schema.AvroCodec.limitsInForce()).as("Avro limits set").isTrue();

    // Every contract breach is in the dead letters, with a reason that says what was wrong.
    Map<Long, DeadLetter> byOffset = new HashMap<>();
    for (DeadLetter d : deadLetters.received()) byOffset.put(d.getOffset(), d);
    Map<FuzzedRecords.Semantic, Integer> breaches = new TreeMap<>();
    for (long i = 0; i < COUNT; i++) {
      FuzzedRecords.Kind kind = FuzzedRecords.kindOf(i);
      if (kind == FuzzedRecords.Kind.CANARY) {
        assertThat(byOffset).as("canary %d is valid", i).doesNotContainKey(i);
      }
      if (kind != FuzzedRecords.Kind.SEMANTIC) continue;
      FuzzedRecords.Semantic s = FuzzedRecords.semanticOf(i);
      DeadLetter d = byOffset.get(i);
      assertThat(d).as("record %d (%s) dead-lettered", i, s).isNotNull();
      assertThat(d.getDetail().toString()).as("record %d (%s)", i, s).contains(s.reasonContains);
      breaches.merge(s, 1, Integer::sum);
    }
    assertThat(breaches).hasSize(FuzzedRecords.Semantic.values().length);
    assertThat(deadLetters.received())
        .as("random bytes and truncations fail too")
        .hasSizeGreaterThan((int) (COUNT / 8 * 3));

    // The canary's windows account for every call it made, no more, no less: no delta lost to a
    // neighbour's garbage, none counted twice.
    for (int rank = 0; rank < 2; rank++) {
      final int r = rank;
      List<RankWindow> mine =
          windows.received().stream()
              .filter(w -> w.getCommunicator().toString().equals(FuzzedRecords.CANARY))
              .filter(w -> w.getRank() == r)
              .toList();
      long calls = mine.stream().mapToLong(RankWindow::getCalls).sum();
      assertThat(calls)
          .as("rank %d: calls over its windows", r)
          .isEqualTo(FuzzedRecords.canaryCalls(COUNT, r));
      for (RankWindow w : mine) {
        assertThat(w.getCopyMeanUs()).as("rank %d copy us/call", r).isCloseTo(2.0, EXACT);
        assertThat(w.getWaitMeanUs()).as("rank %d wait us/call", r).isCloseTo(5.0, EXACT);
      }
    }
    assertThat(attributions.received())
        .anySatisfy(
            a -> assertThat(a.getCommunicator().toString()).isEqualTo(FuzzedRecords.CANARY));
  }

  private static final Offset<Double> EXACT = Offset.offset(1e-6);
}
