package io.collscope.flink.offline;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.Finding;
import io.collscope.avro.Verdict;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.SnapshotSink;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.model.CompactPeers;
import io.collscope.schema.Snapshots;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The compact per-peer form keeps the attribution's answer: a 1,024-rank communicator with a slow
 * rank and a slow link, simulated by the accuracy evaluation's protocol model, attributed once from
 * its dense records and once from the same records made compact as an emitter would (each rank's
 * {@link CompactPeers.Selector} over its successive snapshots), gives the same verdict and the same
 * culprits in every window — and the compact records stay within the budget of 1 KB on average.
 */
class CompactPeersAttributionTest {

  static final int WORLD = 1024;
  static final long WINDOW_MS = 2_000;

  @Test
  void aCompactThousandRankWindowIsAttributedAsTheDenseOne() {
    FaultPlan plan = FaultPlan.parse(List.of("slow-rank=700:300us,slow-link=3->900:300us"), WORLD);
    SimSpec spec = SimSpec.of(WORLD).withDurationNanos(4_000_000_000L);
    OfflineAttribution dense = new OfflineAttribution(WINDOW_MS, Thresholds.DEFAULT);
    OfflineAttribution compact = new OfflineAttribution(WINDOW_MS, Thresholds.DEFAULT);
    CompactPeers.Compactor compactor = new CompactPeers.Compactor(WORLD);
    long[] bytes = new long[2];
    long[] records = new long[1];
    OneShotSimulator.run(
        spec,
        FaultPlanModel.of(plan),
        SimIdentity.of("cl", "job", "dp0", Instant.parse("2026-01-01T00:00:00Z")),
        SnapshotSink.to(
            s -> {
              CounterSnapshot c = compactor.compact(s);
              byte[] denseBytes = Snapshots.encode(s);
              byte[] compactBytes = Snapshots.encode(c);
              bytes[0] += denseBytes.length;
              bytes[1] += compactBytes.length;
              records[0]++;
              dense.add(s);
              // Through the wire format: what a consumer decodes and validates.
              compact.add(decode(compactBytes));
            }));

    List<Attribution> a = dense.attributions();
    List<Attribution> b = compact.attributions();
    assertThat(a).hasSize(2).hasSameSizeAs(b);
    for (int i = 0; i < a.size(); i++) {
      assertThat(a.get(i).getVerdict()).isEqualTo(Verdict.MULTIPLE);
      assertThat(culprits(b.get(i))).as("window %d", i).isEqualTo(culprits(a.get(i)));
      assertThat(b.get(i).getVerdict()).isEqualTo(a.get(i).getVerdict());
    }
    assertThat(culprits(a.get(1))).contains("SLOW_RANK 700 -1", "SLOW_LINK 900 3");
    assertThat((double) bytes[1] / records[0]).isLessThanOrEqualTo(1024);
    assertThat((double) bytes[0] / records[0]).isGreaterThan(10_000);
  }

  private static CounterSnapshot decode(byte[] b) {
    try {
      return Snapshots.decode(b);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static List<String> culprits(Attribution a) {
    return a.getFindings().stream().map(CompactPeersAttributionTest::culprit).sorted().toList();
  }

  private static String culprit(Finding f) {
    return f.getKind() + " " + f.getRank() + " " + f.getFromRank();
  }
}
