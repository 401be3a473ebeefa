package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.SnapshotSink;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.model.CompactPeers;
import io.collscope.model.RankTotals;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Compact records stay compact through the delta and the rank window, and lose nothing doing so:
 * the compact window of a 256-rank communicator with a slow rank and a slow link, made dense, is
 * the window the job made before by expanding every record (listed peers as recorded, the others at
 * their mean) and summing dense deltas — value for value — while it holds a few dozen peers.
 */
class CompactWindowTest {

  static final int WORLD = 256;
  static final long WINDOW_MS = 2_000;

  @Test
  void aCompactWindowIsTheExpandedRecordsDenseWindowValueForValue() {
    FaultPlan plan = FaultPlan.parse(List.of("slow-rank=100:300us,slow-link=3->200:300us"), WORLD);
    CompactPeers.Compactor compactor = new CompactPeers.Compactor(WORLD);
    Map<Integer, CounterSnapshot> last = new HashMap<>();
    Map<Long, Map<Integer, RankWindowAccumulator>> compact = new HashMap<>();
    Map<Long, Map<Integer, RankWindowAccumulator>> dense = new HashMap<>();
    // The whole union: the cap (RankWindowAggregate.DEFAULT_MAX_WINDOW_PEERS) folds peers into the
    // others' value, which CappedWindowTest covers.
    RankWindowAggregate agg = new RankWindowAggregate(Integer.MAX_VALUE);
    int[] maxListed = {0};
    OneShotSimulator.run(
        SimSpec.of(WORLD).withDurationNanos(3_000_000_000L),
        FaultPlanModel.of(plan),
        SimIdentity.of("cl", "job", "dp0", Instant.parse("2026-01-01T00:00:00Z")),
        SnapshotSink.to(
            s -> {
              int r = s.getRank();
              CounterSnapshot c = compactor.compact(s);
              CounterSnapshot prev = last.put(r, c);
              if (prev != null) assertThat(DeltaFunction.backwardsField(prev, c)).isNull();
              SnapshotDelta d = DeltaFunction.delta(c, prev);
              assertThat(d.compact()).isTrue();
              // What the job did before: both records expanded, subtracted, clamped.
              SnapshotDelta e = DeltaFunction.delta(c, prev);
              e.peerIndex = new int[0];
              e.totals =
                  prev == null
                      ? RankTotals.of(c)
                      : RankTotals.of(c).minus(RankTotals.of(prev)).clampPeersAtZero();
              long start = Math.floorDiv(d.eventTimeMs, WINDOW_MS) * WINDOW_MS;
              RankWindowAccumulator a =
                  compact
                      .computeIfAbsent(start, x -> new HashMap<>())
                      .computeIfAbsent(r, x -> agg.createAccumulator());
              agg.add(d, a);
              maxListed[0] =
                  Math.max(maxListed[0], RankWindowAggregate.readable(a).peerIndex.length);
              agg.add(
                  e,
                  dense
                      .computeIfAbsent(start, x -> new HashMap<>())
                      .computeIfAbsent(r, x -> agg.createAccumulator()));
            }));

    assertThat(compact).isNotEmpty();
    int windows = 0;
    for (var byStart : compact.entrySet()) {
      long start = byStart.getKey();
      for (var byRank : byStart.getValue().entrySet()) {
        RankWindow c = RankWindowFunction.toRankWindow(byRank.getValue(), start, start + WINDOW_MS);
        RankWindow d =
            RankWindowFunction.toRankWindow(
                dense.get(start).get(byRank.getKey()), start, start + WINDOW_MS);
        assertThat(c.getPeerIndex()).isNotEmpty().hasSizeLessThan(WORLD / 4);
        assertThat(d.getPeerIndex()).isEmpty();
        // Value for value, but the lateness errors: a compact window keeps no batches (its peers
        // come
        // and go between deltas), so its error is the histogram's alone, which the dense window's
        // error (the larger of that and the batch means') never falls below.
        RankWindow expanded = CompactPeers.expand(c);
        List<Double> compactSe = expanded.getPeerLateSeUs();
        List<Double> denseSe = d.getPeerLateSeUs();
        assertThat(compactSe).hasSameSizeAs(denseSe).isNotEmpty();
        for (int p = 0; p < denseSe.size(); p++) {
          assertThat(compactSe.get(p)).isLessThanOrEqualTo(denseSe.get(p) + 1e-9);
        }
        expanded.setPeerLateSeUs(denseSe);
        assertThat(expanded).isEqualTo(d);
        windows++;
      }
    }
    assertThat(windows).isGreaterThan(WORLD);
    // The slow link's receiver lists its sender; everyone lists the slow rank.
    assertThat(maxListed[0]).isBetween(1, 4 * CompactPeers.DEFAULT_MAX_PEERS);
  }
}
