package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.SnapshotSink;
import io.collscope.flink.attribution.Attributor;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.CompactPeers;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The cap on a compact window's listed peers ({@link RankWindowAggregate#DEFAULT_MAX_WINDOW_PEERS})
 * keeps what the attribution needs: a 256-rank communicator with a slow rank, a slow link and an
 * intermittent slow link, its compact deltas summed once over the whole union of listed peers and
 * once capped. Every capped window lists at most the cap; every rank's lists the slow rank, the
 * slow link's receiver lists its sender; folding keeps each window's sums over all peers; and each
 * window is attributed as the uncapped one is (verdict and culprits).
 */
class CappedWindowTest {

  static final int WORLD = 256;
  static final long WINDOW_MS = 2_000;
  static final int SLOW_RANK = 100;
  static final int LINK_FROM = 3;
  static final int LINK_TO = 200;

  @Test
  void theCapKeepsTheSlowRankAndTheSlowLinkAndTheVerdicts() {
    FaultPlan plan =
        FaultPlan.parse(
            List.of(
                "slow-rank=" + SLOW_RANK + ":300us",
                "slow-link=" + LINK_FROM + "->" + LINK_TO + ":300us",
                "slow-link=7->50:2ms~5%"),
            WORLD);
    CompactPeers.Compactor compactor = new CompactPeers.Compactor(WORLD);
    Map<Integer, CounterSnapshot> last = new HashMap<>();
    Map<Long, Map<Integer, RankWindowAccumulator>> capped = new TreeMap<>();
    Map<Long, Map<Integer, RankWindowAccumulator>> whole = new TreeMap<>();
    RankWindowAggregate cap = new RankWindowAggregate();
    RankWindowAggregate all = new RankWindowAggregate(Integer.MAX_VALUE);
    int[] maxUnion = {0};
    OneShotSimulator.run(
        SimSpec.of(WORLD).withDurationNanos(3_000_000_000L),
        FaultPlanModel.of(plan),
        SimIdentity.of("cl", "job", "dp0", Instant.parse("2026-01-01T00:00:00Z")),
        SnapshotSink.to(
            s -> {
              int r = s.getRank();
              CounterSnapshot c = compactor.compact(s);
              CounterSnapshot prev = last.put(r, c);
              SnapshotDelta d = DeltaFunction.delta(c, prev);
              long start = Math.floorDiv(d.eventTimeMs, WINDOW_MS) * WINDOW_MS;
              cap.add(
                  d,
                  capped
                      .computeIfAbsent(start, x -> new HashMap<>())
                      .computeIfAbsent(r, x -> cap.createAccumulator()));
              RankWindowAccumulator a =
                  whole
                      .computeIfAbsent(start, x -> new HashMap<>())
                      .computeIfAbsent(r, x -> all.createAccumulator());
              all.add(DeltaFunction.delta(c, prev), a);
              maxUnion[0] = Math.max(maxUnion[0], RankWindowAggregate.readable(a).peerIndex.length);
            }));

    // Without the cap the union outgrows it: the cap is what is tested.
    assertThat(maxUnion[0]).isGreaterThan(RankWindowAggregate.DEFAULT_MAX_WINDOW_PEERS);
    int full = 0;
    for (long start : capped.keySet()) {
      List<RankWindow> c = windows(capped.get(start), start);
      List<RankWindow> w = windows(whole.get(start), start);
      for (int i = 0; i < c.size(); i++) {
        RankWindow cw = c.get(i);
        RankWindow ww = w.get(i);
        assertThat(cw.getPeerIndex()).hasSizeLessThanOrEqualTo(16).contains(cw.getRank());
        if (cw.getRank() != SLOW_RANK) {
          assertThat(cw.getPeerIndex())
              .as("rank %d lists the slow rank", cw.getRank())
              .contains(SLOW_RANK);
        }
        if (cw.getRank() == LINK_TO) {
          assertThat(cw.getPeerIndex())
              .as("the link's receiver lists its sender")
              .contains(LINK_FROM);
        }
        // Folding moves values into the others' mean, keeping each sum over all peers.
        assertThat(sumOverPeers(cw.getPeerLateMeanUs(), cw.getOthersLateMeanUs(), cw))
            .isCloseTo(
                sumOverPeers(ww.getPeerLateMeanUs(), ww.getOthersLateMeanUs(), ww),
                within(
                    1e-6
                        * (1
                            + Math.abs(
                                sumOverPeers(
                                    ww.getPeerLateMeanUs(), ww.getOthersLateMeanUs(), ww)))));
        assertThat(sumOverPeers(cw.getPeerWaitMeanUs(), cw.getOthersWaitMeanUs(), cw))
            .isCloseTo(
                sumOverPeers(ww.getPeerWaitMeanUs(), ww.getOthersWaitMeanUs(), ww),
                within(
                    1e-6
                        * (1
                            + Math.abs(
                                sumOverPeers(
                                    ww.getPeerWaitMeanUs(), ww.getOthersWaitMeanUs(), ww)))));
      }
      CommunicatorKey key = new CommunicatorKey("cl", "job", "dp0");
      Attribution ac = Attributor.attribute(key, start, start + WINDOW_MS, c, Thresholds.DEFAULT);
      Attribution aw = Attributor.attribute(key, start, start + WINDOW_MS, w, Thresholds.DEFAULT);
      assertThat(ac.getVerdict()).as("window %d", start).isEqualTo(aw.getVerdict());
      assertThat(culprits(ac)).as("window %d", start).isEqualTo(culprits(aw));
      if (c.size() == WORLD) full++;
    }
    assertThat(full).isPositive();
  }

  private static List<RankWindow> windows(Map<Integer, RankWindowAccumulator> byRank, long start) {
    List<RankWindow> out = new ArrayList<>();
    new TreeMap<>(byRank)
        .values()
        .forEach(a -> out.add(RankWindowFunction.toRankWindow(a, start, start + WINDOW_MS)));
    return out;
  }

  private static double sumOverPeers(List<Double> listed, double others, RankWindow w) {
    double sum = others * (w.getWorldSize() - listed.size());
    for (double v : listed) sum += v;
    return sum;
  }

  private static List<String> culprits(Attribution a) {
    return a.getFindings().stream()
        .map(f -> f.getKind() + " " + f.getRank() + " " + f.getFromRank())
        .sorted()
        .toList();
  }
}
