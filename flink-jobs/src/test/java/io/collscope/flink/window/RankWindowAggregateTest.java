package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.RankWindow;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

class RankWindowAggregateTest {

  private static final long GHZ = 1_000_000_000L;

  /**
   * A delta of {@code calls} collectives of {@code waitCycles} wait, whose clock samples say the
   * clock ran at {@code clockHz} ({@code 0}: no samples, as from emitters before them).
   */
  private static SnapshotDelta delta(
      long startupHz, long clockHz, long calls, long waitCycles, int bucket) {
    SnapshotDelta d = new SnapshotDelta();
    d.cluster = "cl";
    d.job = "j";
    d.communicator = "c";
    d.rank = 0;
    d.worldSize = 2;
    d.host = "h";
    d.cyclesPerSecond = startupHz;
    RankTotals t = new RankTotals(2, 40);
    t.set(Counter.CALLS, calls);
    t.setCycles(Phase.WAIT, waitCycles);
    t.peerWaitCycles()[1] = waitCycles;
    t.peerArrivedLast()[1] = calls;
    t.histogram()[bucket] = calls;
    if (clockHz > 0) {
      // 1 ms of samples at clockHz
      t.set(Counter.CLOCK_NS, 1_000_000);
      t.set(Counter.CLOCK_CYCLES, clockHz / 1000);
    }
    d.totals = t;
    return d;
  }

  @Test
  void eachDeltaIsConvertedAtTheRateItsClockSamplesShow() {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a = agg.createAccumulator();
    // Start-up calibration said 2 GHz both times, but the clock was capped to 1 GHz for the first
    // delta: 1e6 cycles then are 1 ms, 2e6 cycles at 2 GHz are 1 ms too.
    agg.add(delta(2 * GHZ, GHZ, 100, 1_000_000, 10), a);
    agg.add(delta(2 * GHZ, 2 * GHZ, 100, 2_000_000, 12), a);
    RankWindow w = RankWindowFunction.toRankWindow(agg.getResult(a), 0, 10_000);
    assertThat(w.getCalls()).isEqualTo(200);
    assertThat(w.getWaitMeanUs()).isCloseTo(10.0, within(1e-9)); // 2 ms over 200 calls
    assertThat(w.getPeerWaitMeanUs()).containsExactly(0.0, 10.0);
    assertThat(w.getPeerArrivedLast()).containsExactly(0L, 200L);
    // the window's mean rate: 3e6 sampled cycles over 2 ms
    assertThat(w.getClockHz()).isCloseTo(1.5e9, within(1.0));
    // p50 lands in bucket 10 ([1024, 2048) cycles) -> upper edge 2048 cycles at 1.5 GHz
    assertThat(w.getP50Us()).isCloseTo(2048 / 1500.0, within(1e-9));
  }

  @Test
  void withoutClockSamplesTheStartupRateIsUsed() {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a =
        agg.add(delta(2 * GHZ, 0, 100, 2_000_000, 12), agg.createAccumulator());
    RankWindow w = RankWindowFunction.toRankWindow(a, 0, 10_000);
    assertThat(w.getWaitMeanUs()).isCloseTo(10.0, within(1e-9));
    assertThat(w.getClockHz()).isEqualTo(2e9);
    assertThat(w.getP99Us()).isCloseTo(8192 / 2000.0, within(1e-9));
  }

  @Test
  void mergeAddsUp() {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a = agg.add(delta(GHZ, 0, 10, 1000, 3), agg.createAccumulator());
    RankWindowAccumulator b = agg.add(delta(GHZ, 0, 30, 3000, 3), agg.createAccumulator());
    RankWindowAccumulator m = agg.merge(a, b);
    RankTotals sums = RankWindowAggregate.readable(m).totals;
    assertThat(sums.get(Counter.CALLS)).isEqualTo(40);
    assertThat(sums.histogram()[3]).isEqualTo(40);
    assertThat(m.phaseUs[Phase.WAIT.ordinal()]).isCloseTo(4.0, within(1e-9));
    assertThat(agg.merge(agg.createAccumulator(), m)).isSameAs(m);
  }

  @Test
  void theStateKeepsTheCountsSparseAndAPreviousVersionsAccumulatorGoesOn() throws Exception {
    RankWindowAggregate agg = new RankWindowAggregate();
    RankWindowAccumulator a = agg.add(delta(GHZ, 0, 10, 1000, 3), agg.createAccumulator());
    // Between deltas the arrays are in the packed bytes; readers see them in full.
    assertThat(a.packedCounts).isNotEmpty();
    assertThat(a.totals).isNull();
    assertThat(RankWindowAggregate.readable(a).totals.get(Counter.CALLS)).isEqualTo(10);
    assertThat(a.totals).isNull(); // readable decodes a copy
    // The previous version's accumulator: the arrays in full, no packed bytes (null, as Flink's
    // POJO schema evolution leaves a field the savepoint lacks).
    RankWindowAccumulator previous = RankWindowAggregate.readable(a);
    previous.packedCounts = null;
    // Through Flink's POJO serializer, as the state backend writes and reads it.
    TypeSerializer<RankWindowAccumulator> serializer =
        TypeInformation.of(RankWindowAccumulator.class)
            .createSerializer(new SerializerConfigImpl());
    DataOutputSerializer out = new DataOutputSerializer(256);
    serializer.serialize(a, out);
    RankWindowAccumulator restored =
        serializer.deserialize(new DataInputDeserializer(out.getCopyOfBuffer()));
    agg.add(delta(GHZ, 0, 30, 3000, 3), restored);
    agg.add(delta(GHZ, 0, 30, 3000, 3), previous);
    assertThat(RankWindowFunction.toRankWindow(restored, 0, 1000))
        .isEqualTo(RankWindowFunction.toRankWindow(previous, 0, 1000));
    assertThat(RankWindowAggregate.readable(restored).totals.get(Counter.CALLS)).isEqualTo(40);
  }

  @Test
  void networkWaitsAreSummedPerPeerAcrossDeltasAndMergesAndWrittenAsMeansPerStep() {
    RankWindowAggregate agg = new RankWindowAggregate();
    SnapshotDelta d1 = delta(GHZ, 0, 10, 1000, 3);
    d1.netPeers = new int[] {1};
    d1.netSendNs = new long[] {40_000};
    d1.netSendSteps = new long[] {4};
    d1.netRecvNs = new long[] {8_000};
    d1.netRecvSteps = new long[] {4};
    SnapshotDelta d2 = delta(GHZ, 0, 10, 1000, 3);
    d2.netPeers = new int[] {1};
    d2.netSendNs = new long[] {20_000};
    d2.netSendSteps = new long[] {4};
    d2.netRecvNs = new long[] {0};
    d2.netRecvSteps = new long[] {0};
    RankWindowAccumulator a = agg.add(d1, agg.createAccumulator());
    RankWindowAccumulator b = agg.add(d2, agg.createAccumulator());
    RankWindow w = RankWindowFunction.toRankWindow(agg.merge(a, b), 0, 10_000);
    assertThat(w.getNetPeers()).containsExactly(1);
    assertThat(w.getNetSendWaitMeanUs()).containsExactly(7.5); // 60 us over 8 steps
    assertThat(w.getNetSendSteps()).containsExactly(8L);
    assertThat(w.getNetRecvWaitMeanUs()).containsExactly(2.0);
    assertThat(w.getNetRecvSteps()).containsExactly(4L);
    // without network waits (other emitters): empty lists
    RankWindow plain =
        RankWindowFunction.toRankWindow(
            agg.add(delta(GHZ, 0, 10, 1000, 3), agg.createAccumulator()), 0, 10_000);
    assertThat(plain.getNetPeers()).isEmpty();
    assertThat(plain.getNetSendWaitMeanUs()).isEmpty();
  }

  @Test
  void anEmptyHistogramHasNoQuantile() {
    assertThat(Histograms.quantileUs(new long[40], 0.5, GHZ)).isZero();
  }

  @Test
  void aPeersLatenessQuantileIsInterpolatedWithinItsBucket() {
    int b = RankTotals.LATE_BUCKETS;
    long[] hist = new long[2 * b];
    // peer 1: 99 collectives in bucket 2 ([2048, 4096) cycles), 1 in bucket 10 ([2^19, 2^20))
    hist[b + 2] = 99;
    hist[b + 10] = 1;
    double oneGhzUs = 1e-3; // a cycle at 1 GHz, in us
    // The 50th of 100 lies halfway into bucket 2: 2048 + 2048 * 50/99 cycles.
    assertThat(Histograms.lateQuantileUs(hist, b, 0.5, 1e9))
        .isCloseTo((2048 + 2048 * 50.0 / 99) * oneGhzUs, within(1e-9));
    assertThat(Histograms.lateQuantileUs(hist, b, 0.995, 1e9))
        .as("the tail lands in the high bucket")
        .isCloseTo((524288 + 524288 * 0.5) * oneGhzUs, within(1e-6));
    assertThat(Histograms.lateQuantileUs(hist, 0, 0.99, 1e9)).as("peer 0 has no counts").isZero();
    hist[b + b - 1] = 1000;
    assertThat(Histograms.lateQuantileUs(hist, b, 0.99, 1e9))
        .as("the open last bucket reports its lower edge")
        .isCloseTo(Math.scalb(1.0, b - 1 + RankTotals.LATE_SHIFT) * oneGhzUs, within(1e-6));
  }
}
