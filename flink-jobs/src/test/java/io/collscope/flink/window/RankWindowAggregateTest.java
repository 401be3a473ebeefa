package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.RankWindow;
import io.collscope.flink.delta.SnapshotDelta;
import org.junit.jupiter.api.Test;

class RankWindowAggregateTest {

  private static SnapshotDelta delta(long cps, long calls, long waitCycles, int bucket) {
    SnapshotDelta d = new SnapshotDelta();
    d.communicator = "c";
    d.rank = 0;
    d.worldSize = 2;
    d.host = "h";
    d.cyclesPerSecond = cps;
    d.calls = calls;
    d.waitCycles = waitCycles;
    d.peerWaitCycles = new long[] {0, waitCycles};
    d.peerArrivedLast = new long[] {0, calls};
    d.histogram = new long[40];
    d.histogram[bucket] = calls;
    return d;
  }

  @Test
  void meansPerCollectiveUseEachDeltasOwnClock() {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a = agg.createAccumulator();
    // 100 calls, 1 ms of wait at 1 GHz; then 100 calls, 2e6 cycles at 2 GHz (also 1 ms)
    agg.add(delta(1_000_000_000L, 100, 1_000_000, 10), a);
    agg.add(delta(2_000_000_000L, 100, 2_000_000, 12), a);
    RankWindow w = RankWindowFunction.toRankWindow(agg.getResult(a), 0, 10_000);
    assertThat(w.getCalls()).isEqualTo(200);
    assertThat(w.getWaitUs()).isCloseTo(10.0, within(1e-9)); // 2 ms over 200 calls
    assertThat(w.getPeerWaitUs()).containsExactly(0.0, 10.0);
    assertThat(w.getPeerArrivedLast()).containsExactly(0L, 200L);
    // p50 lands in bucket 10 ([1024, 2048) cycles) -> upper edge 2048 cycles at 2 GHz
    assertThat(w.getP50Us()).isCloseTo(2048 / 2000.0, within(1e-9));
    assertThat(w.getP99Us()).isCloseTo(8192 / 2000.0, within(1e-9));
  }

  @Test
  void mergeAddsUp() {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a = agg.add(delta(1_000_000_000L, 10, 1000, 3), agg.createAccumulator());
    RankWindowAccumulator b = agg.add(delta(1_000_000_000L, 30, 3000, 3), agg.createAccumulator());
    RankWindowAccumulator m = agg.merge(a, b);
    assertThat(m.calls).isEqualTo(40);
    assertThat(m.histogram[3]).isEqualTo(40);
    assertThat(agg.merge(agg.createAccumulator(), m)).isSameAs(m);
  }

  @Test
  void anEmptyHistogramHasNoQuantile() {
    assertThat(Histograms.quantileUs(new long[40], 0.5, 1_000_000_000L)).isZero();
  }
}
