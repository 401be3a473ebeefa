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
    w.setPeerLateSeUs(new ArrayList<>());
    w.setPeerLateTailShare(new ArrayList<>());
    lateErrorsAndTails(w, a, accounted, sampled, clockHz);
    List<Long> timedKeys = new ArrayList<>(a.timedKeys.length);
    List<Long> timedNs = new ArrayList<>(a.timedKeys.length);
    for (int i = 0; i < a.timedKeys.length; i++) {
      timedKeys.add(a.timedKeys[i]);
      timedNs.add(a.timedKernelNs[i]);
    }
    w.setTimedKeys(timedKeys);
    w.setTimedKernelNs(timedNs);
    w.setTimedDropped(a.timedDropped);
    NetworkWaits.writeTo(w, a);
    return w;
  }

  /**
   * The lateness means' standard errors and the tail shares (RankWindow version 8): what the
   * attribution's tests weigh a cell's mean and a peer's tail against.
   *
   * <p>A cell's standard error is the larger of two estimates. The histogram's: the spread of the
   * peer's lateness over single collectives, divided by the square root of the sampled collectives
   * (not the weighted counts: a sampled GPU histogram counts each timed collective sample_every
   * times). It assumes independent collectives. The batch means': each delta of the window is a
   * batch, and the spread of the batches' means keeps what consecutive collectives share (a host
   * busy for 100 ms delays a hundred of them), which the first misses. With few batches the second
   * is itself noisy; taking the larger errs towards a wider bar, never a narrower one.
   *
   * <p>The tail edge is one bucket above the one that holds the median peer's 99th percentile: a
   * typical peer has at most about 1 % of its collectives there, a peer slow in 10 % of them has
   * those 10 %, so the share stands out of the row whatever its mean does.
   */
  static void lateErrorsAndTails(
      RankWindow w, RankWindowAccumulator a, long accounted, long sampled, double clockHz) {
    RankTotals t = a.totals;
    long[] hist = t.peerLateHistogram();
    int entries = a.peerLateUs.length;
    boolean compact = a.peerIndex.length > 0;
    if (entries == 0 && !(compact && a.othersLateHistogram.length > 0)) return;
    if (clockHz <= 0 || sampled <= 0 || accounted <= 0) return;
    int B = RankTotals.LATE_BUCKETS;
    List<Double> se = new ArrayList<>(entries);
    double n = accounted;
    for (int e = 0; e < entries; e++) {
      double var = Histograms.lateVarianceUs2(hist, e * B, clockHz) / sampled;
      if (!compact && a.batches >= 2 && a.peerLateSquares.length == entries) {
        double m = a.peerLateUs[e] / n;
        double s2 = a.peerLateSquares[e] - 2 * m * a.peerLateCross[e] + m * m * a.batchCallsSquares;
        double batchVar = Math.max(0, s2) / (n * n) * a.batches / (a.batches - 1.0);
        var = Math.max(var, batchVar);
      }
      se.add(Math.sqrt(var));
    }
    w.setPeerLateSeUs(se);
    if (compact && a.othersLateHistogram.length > 0) {
      w.setOthersLateSeUs(
          Math.sqrt(Histograms.lateVarianceUs2(a.othersLateHistogram, 0, clockHz) / sampled));
    }
    // The edge: the median over the peers (not the rank itself) of their p99 buckets, plus one.
    List<Integer> p99Buckets = new ArrayList<>();
    int othersCount = compact ? Math.max(0, a.worldSize - entries) : 0;
    for (int e = 0; e < entries; e++) {
      int peer = compact ? a.peerIndex[e] : e;
      if (peer == a.rank) continue;
      int q = Histograms.lateQuantileBucket(hist, e * B, 0.99);
      if (q >= 0) p99Buckets.add(q);
    }
    int othersBucket =
        othersCount > 0 && a.othersLateHistogram.length > 0
            ? Histograms.lateQuantileBucket(a.othersLateHistogram, 0, 0.99)
            : -1;
    int edge = weightedMedianBucket(p99Buckets, othersBucket, othersBucket >= 0 ? othersCount : 0);
    if (edge < 0) return;
    edge = Math.min(edge + 1, B - 1);
    w.setLateTailEdgeUs(Histograms.lateBucketLowerUs(edge, clockHz));
    List<Double> shares = new ArrayList<>(entries);
    for (int e = 0; e < entries; e++) shares.add(Histograms.lateShareFrom(hist, e * B, edge));
    w.setPeerLateTailShare(shares);
    if (compact && a.othersLateHistogram.length > 0) {
      w.setOthersLateTailShare(Histograms.lateShareFrom(a.othersLateHistogram, 0, edge));
    }
  }

  /** The lower median of the buckets, {@code extra} repeated {@code extraCount} times; -1: none. */
  private static int weightedMedianBucket(List<Integer> buckets, int extra, int extraCount) {
    long total = buckets.size() + (long) extraCount;
    if (total == 0) return -1;
    int[] counts = new int[RankTotals.LATE_BUCKETS];
    for (int b : buckets) counts[b]++;
    long seen = 0;
    long rank = (total + 1) / 2;
    for (int b = 0; b < counts.length; b++) {
      seen += counts[b] + (b == extra ? extraCount : 0);
      if (seen >= rank) return b;
    }
    return counts.length - 1;
  }
}
