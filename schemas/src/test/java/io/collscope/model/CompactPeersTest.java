package io.collscope.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.schema.SnapshotFixtures;
import io.collscope.schema.Snapshots;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompactPeersTest {

  static final int N = 64;

  /** Rank 0's counters: every peer 100 cycles late per call, peer 40 by 5,000. */
  static RankTotals totals(long calls, int slowPeer) {
    RankTotals t = new RankTotals(N, 40);
    t.set(Counter.CALLS, calls);
    for (int p = 1; p < N; p++) {
      for (long c = 0; c < calls; c++) t.recordLateness(p, p == slowPeer ? 5_000 : 100);
      t.peerWaitCycles()[p] = p == slowPeer ? 5_000 * calls : 0;
      t.peerArrivedLast()[p] = p == slowPeer ? calls : 0;
    }
    t.addCycles(Phase.WAIT, 5_000 * calls);
    return t;
  }

  @Test
  void aCompactRecordListsThePeerThatStandsOutAndAveragesTheOthers() {
    RankTotals t = totals(10, 40);
    int[] listed = new CompactPeers.Selector(4).select(t, 0);
    assertThat(listed).containsExactly(0, 40);

    CounterSnapshot s =
        CompactPeers.writeCompact(SnapshotFixtures.snapshot("c", 0, N).build(), t, listed);
    s.setWorldSize(N);
    s.setRank(0);
    assertThat(Snapshots.validate(s)).isNull();
    RankTotals back = RankTotals.of(s);
    assertThat(back.peerLateCycles()[40]).isEqualTo(50_000);
    assertThat(back.peerLateCycles()[7]).isEqualTo(1_000); // the others' mean
    assertThat(back.peerArrivedLast()[40]).isEqualTo(10);
    assertThat(back.get(Counter.CALLS)).isEqualTo(10);
  }

  @Test
  void listedPeersStayWhileThereIsRoomSoTheirDeltasAreExact() {
    CompactPeers.Selector sel = new CompactPeers.Selector(4);
    assertThat(sel.select(totals(10, 40), 0)).containsExactly(0, 40);
    // Peer 40 is no longer slow, peer 9 is: both are listed.
    RankTotals later = totals(10, 40);
    RankTotals more = totals(10, 9);
    later.addAll(more);
    assertThat(sel.select(later, 0)).containsExactly(0, 9, 40);
  }

  @Test
  void malformedCompactRecordsAreRejectedWithTheReason() {
    RankTotals t = totals(10, 40);
    CounterSnapshot s =
        CompactPeers.writeCompact(
            SnapshotFixtures.snapshot("c", 0, N).build(), t, new int[] {0, 40});
    s.setWorldSize(N);
    s.setRank(0);

    CounterSnapshot unsorted = CounterSnapshot.newBuilder(s).setPeerIndex(List.of(40, 0)).build();
    assertThat(Snapshots.validate(unsorted)).contains("ascending");

    CounterSnapshot noSelf = CounterSnapshot.newBuilder(s).setPeerIndex(List.of(3, 40)).build();
    assertThat(Snapshots.validate(noSelf)).contains("the rank itself");

    List<Long> shorter = new ArrayList<>(s.getPeerWaitCycles().subList(0, 1));
    CounterSnapshot shortArrays = CounterSnapshot.newBuilder(s).setPeerWaitCycles(shorter).build();
    assertThat(Snapshots.validate(shortArrays)).contains("compact per-peer arrays");

    CounterSnapshot negative = CounterSnapshot.newBuilder(s).setOthersLateCycles(-1L).build();
    assertThat(Snapshots.validate(negative)).contains("negative");
  }

  @Test
  void compactRecordsDecodeThroughTheWireFormat() throws Exception {
    RankTotals t = totals(10, 40);
    CounterSnapshot s =
        CompactPeers.writeCompact(
            SnapshotFixtures.snapshot("c", 0, N).build(), t, new int[] {0, 40});
    s.setWorldSize(N);
    s.setRank(0);
    CounterSnapshot d = Snapshots.decode(Snapshots.encode(s));
    assertThat(RankTotals.of(d)).isEqualTo(RankTotals.of(s));
    assertThat(CompactPeers.isCompact(d)).isTrue();
  }

  @Test
  void perPeerEstimatesMayDipWithoutTheOtherCountersGoingBackwards() {
    RankTotals before = totals(10, 40);
    RankTotals after = totals(20, 40);
    after.peerLateCycles()[7] = 0; // an estimate that fell
    assertThat(after.firstBackwards(before)).contains("peer_late_cycles");
    assertThat(after.firstBackwards(before, false)).isNull();
    after.set(Counter.CALLS, 5);
    assertThat(after.firstBackwards(before, false)).contains("calls");
  }
}
