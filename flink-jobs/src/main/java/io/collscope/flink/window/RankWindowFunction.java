package io.collscope.flink.window;

import io.collscope.avro.RankWindow;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/** Turns a rank's window sums into per-collective means: the {@link RankWindow} record. */
public final class RankWindowFunction
    extends ProcessWindowFunction<RankWindowAccumulator, RankWindow, RankKey, TimeWindow> {

  @Override
  public void process(
      RankKey key, Context ctx, Iterable<RankWindowAccumulator> in, Collector<RankWindow> out) {
    for (RankWindowAccumulator a : in) {
      out.collect(toRankWindow(a, ctx.window().getStart(), ctx.window().getEnd()));
    }
  }

  public static RankWindow toRankWindow(RankWindowAccumulator held, long start, long end) {
    RankWindowAccumulator a = RankWindowAggregate.readable(held);
    RankTotals t = a.totals;
    long calls = t.get(Counter.CALLS);
    // Means over the collectives the accounted sums stand for (SampledCalls): the calls where the
    // emitter accounts every one, or where the accumulator predates the sample (-1).
    long accounted = a.accountedCalls < 0 ? calls : a.accountedCalls;
    long sampled = a.sampledCalls < 0 ? calls : a.sampledCalls;
    double per = accounted == 0 ? 0 : 1.0 / accounted;
    // The histogram counts cycles of the whole window: convert it at the window's mean rate (the
    // clock samples summed over the window). Within a factor-of-two bucket that is exact enough.
    double clockHz = t.clockRate(a.cyclesPerSecond);
    List<Double> peerWait = new ArrayList<>(a.peerWaitUs.length);
    for (double us : a.peerWaitUs) peerWait.add(us * per);
    List<Double> peerLate = new ArrayList<>(a.peerLateUs.length);
    for (double us : a.peerLateUs) peerLate.add(us * per);
    List<Double> peerLateP99 = new ArrayList<>(peerLate.size());
    long[] lateHist = t.peerLateHistogram();
    for (int p = 0; p < peerLate.size(); p++) {
      peerLateP99.add(
          Histograms.lateQuantileUs(lateHist, p * RankTotals.LATE_BUCKETS, 0.99, clockHz));
    }
    RankWindow w = new RankWindow();
    w.setCluster(a.cluster);
    w.setJob(a.job);
    w.setCommunicator(a.communicator);
    w.setCollective(a.collective == null ? "" : a.collective);
    w.setRank(a.rank);
    w.setWorldSize(a.worldSize);
    w.setHost(a.host);
    w.setWindowStart(Instant.ofEpochMilli(start));
    w.setWindowEnd(Instant.ofEpochMilli(end));
    w.setCalls(calls);
    w.setSampleEvery(a.sampleEvery);
    w.setSampledCalls(sampled);
    w.setBytes(t.get(Counter.BYTES));
    w.setTimeouts(t.get(Counter.TIMEOUTS));
    for (Phase p : Phase.values()) w.put(p.meanUsField(), a.phaseUs[p.ordinal()] * per);
    w.setP50Us(Histograms.quantileUs(t.histogram(), 0.50, clockHz));
    w.setP99Us(Histograms.quantileUs(t.histogram(), 0.99, clockHz));
    w.setClockHz(clockHz);
    w.setPeerWaitMeanUs(peerWait);
    w.setPeerLateMeanUs(peerLate);
    w.setPeerLateP99Us(peerLateP99);
    w.setPeerArrivedLast(RankTotals.boxed(t.peerArrivedLast()));
    w.setCtaLeadMaxRounds(Histograms.leadQuantileRounds(a.leadHistogram, 1.0));
    w.setCtaLeadP99Rounds(Histograms.leadQuantileRounds(a.leadHistogram, 0.99));
    w.setThrottleStallsPerCall(calls == 0 ? 0 : (double) a.throttleStalls / calls);
    w.setTilesPerCall(calls == 0 ? 0 : (double) a.tiles / calls);
    // Compact: the listed peers above, and the value every other peer has.
    List<Integer> index = new ArrayList<>(a.peerIndex.length);
    for (int p : a.peerIndex) index.add(p);
    w.setPeerIndex(index);
    boolean compact = a.peerIndex.length > 0;
    w.setOthersWaitMeanUs(compact ? a.othersWaitUs * per : 0);
    w.setOthersLateMeanUs(compact ? a.othersLateUs * per : 0);
    w.setOthersLateP99Us(
        compact && a.othersLateHistogram.length > 0
            ? Histograms.lateQuantileUs(a.othersLateHistogram, 0, 0.99, clockHz)
            : 0);
    w.setOthersArrivedLast(compact ? a.othersArrivedLast : 0);
    return w;
  }
}
