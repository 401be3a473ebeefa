package io.collscope.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class WindowCountTest {

  /** Snapshots of rank 0, boot b, at 500 ms steps; calls grow 10 per snapshot. */
  private static List<CounterSnapshot> boot(String b, int from, int to) {
    List<CounterSnapshot> out = new ArrayList<>();
    for (int seq = from; seq <= to; seq++) {
      out.add(
          SnapshotFixtures.snapshot("c", 0, 1)
              .setBootId(b)
              .setSeq(seq)
              .setCalls(10L * seq)
              .setEventTime(Instant.ofEpochMilli(500L * seq))
              .build());
    }
    return out;
  }

  private static RankWindow window(long end, long calls) {
    RankWindow w = new RankWindow(); // only the fields WindowCount reads
    w.setCommunicator("c");
    w.setRank(0);
    w.setWindowEnd(Instant.ofEpochMilli(end));
    w.setCalls(calls);
    return w;
  }

  @Test
  void aBootsFirstSnapshotIsADeltaFromZeroAndEveryCallIsCountedOnce() {
    // seq 1..4 at 500, 1000, 1500, 2000 ms: windows of 1 s end at 1000 (seq 1), 2000 (2, 3), 3000.
    List<CounterSnapshot> s = boot("b", 1, 4);
    WindowCount exact =
        WindowCount.of(
            s, 1000, 0, 3000, List.of(window(1000, 10), window(2000, 20), window(3000, 10)));
    assertThat(exact.exact()).as("%s", exact).isTrue();
    assertThat(exact.expectedCalls()).isEqualTo(40);

    WindowCount twice =
        WindowCount.of(
            s,
            1000,
            0,
            3000,
            List.of(window(1000, 10), window(2000, 20), window(2000, 20), window(3000, 10)));
    assertThat(twice.windowsCommittedTwice()).isEqualTo(1);
    assertThat(twice.excessCalls()).isEqualTo(20);
    assertThat(twice.exact()).isFalse();

    WindowCount missing =
        WindowCount.of(s, 1000, 0, 3000, List.of(window(1000, 10), window(3000, 10)));
    assertThat(missing.seenWindows()).isEqualTo(2);
    assertThat(missing.missingCalls()).isEqualTo(20);
    assertThat(missing.exact()).isFalse();
  }

  @Test
  void aFirstSightingMidBootOnlySetsTheBaselineAndCopiesCountOnce() {
    List<CounterSnapshot> s = new ArrayList<>(boot("b", 3, 4)); // seq 3 at 1500, 4 at 2000
    s.add(s.get(1)); // a copy read back twice
    WindowCount w = WindowCount.of(s, 1000, 0, 3000, List.of(window(3000, 10)));
    assertThat(w.expectedWindows()).isEqualTo(1);
    assertThat(w.exact()).as("%s", w).isTrue();
  }

  @Test
  void deliveryCountsLostAndDuplicatedByIdentity() {
    List<CounterSnapshot> s = new ArrayList<>(boot("b", 1, 3));
    s.add(s.get(0));
    Set<String> produced =
        Set.of(
            DeliveryCount.key(s.get(0)),
            DeliveryCount.key(s.get(1)),
            DeliveryCount.key(s.get(2)),
            DeliveryCount.key(s.get(0).getCluster(), s.get(0).getJob(), "c", 0, "b", 4));
    DeliveryCount d = DeliveryCount.of(produced, s);
    assertThat(d.produced()).isEqualTo(4);
    assertThat(d.consumed()).isEqualTo(3);
    assertThat(d.lost())
        .containsExactly(
            DeliveryCount.key(s.get(0).getCluster(), s.get(0).getJob(), "c", 0, "b", 4));
    assertThat(d.duplicated()).isEqualTo(1);
  }
}
