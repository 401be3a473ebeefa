package io.collscope.flink.window;

import io.collscope.flink.delta.SnapshotDelta;
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
    if (a.peerWaitUs == null || a.peerWaitUs.length != d.peerWaitCycles.length) {
      a.peerWaitUs = new double[d.peerWaitCycles.length];
      a.peerArrivedLast = new long[d.peerArrivedLast.length];
    }
    if (a.histogram == null || a.histogram.length != d.histogram.length) {
      a.histogram = new long[d.histogram.length];
    }
    a.communicator = d.communicator;
    a.rank = d.rank;
    a.worldSize = d.worldSize;
    a.host = d.host;
    a.cyclesPerSecond = d.cyclesPerSecond;
    double us = 1e6 / d.cyclesPerSecond;
    a.calls += d.calls;
    a.bytes += d.bytes;
    a.timeouts += d.timeouts;
    a.guardUs += d.guardCycles * us;
    a.copyUs += d.copyCycles * us;
    a.publishUs += d.publishCycles * us;
    a.waitUs += d.waitCycles * us;
    a.reduceUs += d.reduceCycles * us;
    for (int p = 0; p < a.peerWaitUs.length; p++) {
      a.peerWaitUs[p] += d.peerWaitCycles[p] * us;
      a.peerArrivedLast[p] += d.peerArrivedLast[p];
    }
    for (int i = 0; i < a.histogram.length; i++) {
      a.histogram[i] += d.histogram[i];
    }
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
    a.calls += b.calls;
    a.bytes += b.bytes;
    a.timeouts += b.timeouts;
    a.guardUs += b.guardUs;
    a.copyUs += b.copyUs;
    a.publishUs += b.publishUs;
    a.waitUs += b.waitUs;
    a.reduceUs += b.reduceUs;
    for (int p = 0; p < a.peerWaitUs.length; p++) {
      a.peerWaitUs[p] += b.peerWaitUs[p];
      a.peerArrivedLast[p] += b.peerArrivedLast[p];
    }
    for (int i = 0; i < a.histogram.length; i++) {
      a.histogram[i] += b.histogram[i];
    }
    return a;
  }
}
