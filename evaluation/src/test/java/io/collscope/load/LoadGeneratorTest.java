package io.collscope.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.FindingKind;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.offline.OfflineAttribution;
import io.collscope.model.CompactPeers;
import io.collscope.schema.Snapshots;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LoadGeneratorTest {

  static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

  @Test
  void everyRankReportsEachCommunicatorOnceARoundWithGrowingCountersAndTheFaultIsFound()
      throws Exception {
    LoadGenerator gen =
        new LoadGenerator(
            "cl",
            "job",
            32,
            LoadGenerator.parseKinds("tp:8,dp:32", 32),
            Map.of("dp0", List.of("slow-rank=3:300us")),
            1000,
            3,
            32,
            CompactPeers.DEFAULT_MAX_PEERS,
            START);
    assertThat(gen.communicators()).isEqualTo(5);
    assertThat(gen.recordsPerRound()).isEqualTo(64);

    Map<String, CounterSnapshot> last = new HashMap<>();
    List<CounterSnapshot> dp0 = new ArrayList<>();
    long[] compactBytes = {0, 0};
    for (int round = 1; round <= 7; round++) {
      long j =
          gen.nextRound(
              (key, value, ts) -> {
                CounterSnapshot s;
                try {
                  s = Snapshots.decode(value);
                } catch (Exception e) {
                  throw new AssertionError(e);
                }
                assertThat(ts).isEqualTo(s.getEventTime().toEpochMilli());
                assertThat(new String(key))
                    .isEqualTo("cl/job/" + s.getCommunicator() + "/" + s.getRank());
                CounterSnapshot prev = last.put(new String(key), s);
                if (prev != null) {
                  assertThat(s.getSeq()).isEqualTo(prev.getSeq() + 1);
                  assertThat(DeltaFunction.backwardsField(prev, s)).isNull();
                  assertThat(s.getCalls()).isGreaterThan(prev.getCalls());
                }
                assertThat(CompactPeers.isCompact(s))
                    .isEqualTo(s.getCommunicator().toString().startsWith("dp"));
                if (CompactPeers.isCompact(s)) {
                  compactBytes[0] += value.length;
                  compactBytes[1]++;
                }
                if (s.getCommunicator().toString().equals("dp0")) dp0.add(s);
              });
      assertThat(j).isEqualTo(round);
    }
    assertThat(last).hasSize(64);
    assertThat((double) compactBytes[0] / compactBytes[1]).isLessThan(1024);

    OfflineAttribution offline = new OfflineAttribution(2_000, Thresholds.DEFAULT);
    dp0.forEach(offline::add);
    List<Attribution> windows = offline.attributions();
    assertThat(windows).isNotEmpty();
    for (Attribution a : windows) {
      assertThat(a.getFindings())
          .anyMatch(f -> f.getKind() == FindingKind.SLOW_RANK && f.getRank() == 3);
    }
  }

  @Test
  void badSpecsSayWhatIsWrong() {
    assertThatThrownBy(() -> LoadGenerator.parseKinds("tp8", 64)).hasMessageContaining("KIND:SIZE");
    assertThatThrownBy(() -> LoadGenerator.parseKinds("tp:24", 64))
        .hasMessageContaining("does not divide");
    assertThatThrownBy(
            () ->
                new LoadGenerator(
                    "cl",
                    "job",
                    16,
                    LoadGenerator.parseKinds("tp:8", 16),
                    Map.of("dp9", List.of("slow-rank=1:1ms")),
                    1000,
                    2,
                    128,
                    16,
                    START))
        .hasMessageContaining("dp9");
  }
}
