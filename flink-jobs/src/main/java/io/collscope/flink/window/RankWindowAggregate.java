package io.collscope.flink.window;

import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import org.apache.flink.api.common.functions.AggregateFunction;

/** Sums a rank's deltas over a window (incrementally: one accumulator per rank and window). */
public final class RankWindowAggregate
    implements AggregateFunction<SnapshotDelta, RankWindowAccumulator, RankWindowAccumulator> {

  @Override
  public RankWindowAccumulator createAccumulator() {
    return new RankWindowAccumulator();
  }

  @Override
  public RankWindowAccumulator add(SnapshotDelta d, RankWindowAccumulator a) {
    RankTotals t = d.totals;
    if (a.totals == null
        || a.totals.worldSize() != t.worldSize()
        || a.totals.histogramBuckets() != t.histogramBuckets()
        || a.totals.hasLateness() != t.hasLateness()) {
      // First delta, or a rank that rebooted into another shape within the window: the window
      // describes the latest shape only.
      a.totals = t.minus(t);
      a.phaseUs = new double[Phase.COUNT];
      a.peerWaitUs = new double[t.worldSize()];
      a.peerLateUs = new double[t.peerLateCycles().length];
    }
    a.cluster = d.cluster;
    a.job = d.job;
    a.communicator = d.communicator;
    a.collective = d.collective;
    a.rank = d.rank;
    a.worldSize = d.worldSize;
    a.host = d.host;
    a.cyclesPerSecond = d.cyclesPerSecond;
    a.totals.addAll(t);
    a.leadHistogram = addInto(a.leadHistogram, d.leadHistogram);
    a.throttleStalls += d.throttleStalls;
    a.tiles += d.tiles;
    double usPerCycle = 1e6 / t.clockRate(d.cyclesPerSecond);
    for (Phase p : Phase.values()) a.phaseUs[p.ordinal()] += t.cycles(p) * usPerCycle;
    long[] peerWait = t.peerWaitCycles();
    for (int p = 0; p < peerWait.length; p++) a.peerWaitUs[p] += peerWait[p] * usPerCycle;
    long[] peerLate = t.peerLateCycles();
    for (int p = 0; p < peerLate.length; p++) a.peerLateUs[p] += peerLate[p] * usPerCycle;
    return a;
  }

  /** a + b element-wise; the longer one's length (an empty histogram is no histogram). */
  static long[] addInto(long[] a, long[] b) {
    if (b.length > a.length) a = java.util.Arrays.copyOf(a, b.length);
    for (int i = 0; i < b.length; i++) a[i] += b[i];
    return a;
  }

  @Override
  public RankWindowAccumulator getResult(RankWindowAccumulator a) {
    return a;
  }

  @Override
  public RankWindowAccumulator merge(RankWindowAccumulator a, RankWindowAccumulator b) {
    if (a.rank < 0) return b;
    if (b.rank < 0) return a;
    a.totals.addAll(b.totals);
    a.leadHistogram = addInto(a.leadHistogram, b.leadHistogram);
    a.throttleStalls += b.throttleStalls;
    a.tiles += b.tiles;
    for (int i = 0; i < a.phaseUs.length; i++) a.phaseUs[i] += b.phaseUs[i];
    for (int p = 0; p < a.peerWaitUs.length; p++) a.peerWaitUs[p] += b.peerWaitUs[p];
    for (int p = 0; p < a.peerLateUs.length; p++) a.peerLateUs[p] += b.peerLateUs[p];
    return a;
  }
}
