package io.collscope.flink.window;

import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.model.CompactPeers;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.AggregateFunction;

/**
 * Sums a rank's deltas over a window (incrementally: one accumulator per rank and window).
 *
 * <p>Dense deltas (small worlds) sum into dense arrays, per peer, as they always did. Compact
 * deltas (large worlds, {@link SnapshotDelta#peerIndex}) sum into a compact accumulator: the union
 * of the peers they listed and one value for all the others. Both hold the same sums a dense
 * accumulator of the expanded deltas would: every unlisted peer of a delta gets the same value, so
 * the peers no delta of the window listed have equal sums, and a peer that a later delta lists
 * starts from that common sum. Dense is not made a special case of the compact form: at 8 or 64
 * ranks listing every peer would only add the index.
 *
 * <p>The union is capped ({@link #DEFAULT_MAX_WINDOW_PEERS}, as many as a record lists): the deltas
 * of a 2 s window list about 40 peers between them, most only once, for an interval in which they
 * stood a little out of the noise. Beyond the cap the accumulator keeps the rank itself and the
 * peers that differ most from the others' common value — relatively, in mean lateness (wait without
 * lateness), in lateness p99 or in arrived-last count — and folds the rest into the others' value
 * as the emitter's compaction does: the others' value becomes the mean over the unlisted peers and
 * the folded ones (sums kept; arrived-last counts and histogram buckets rounded to the nearest
 * count). A slow rank, a slow link's sender in its receiver's row and a peer with an intermittent
 * tail are the peers that differ most; the folded ones are those nearest the common value, so
 * folding them moves it least. Between deltas a compact accumulator keeps its count arrays sparse
 * ({@link SparseCounts}, {@link #readable}).
 */
public final class RankWindowAggregate
    implements AggregateFunction<SnapshotDelta, RankWindowAccumulator, RankWindowAccumulator> {

  private static final int B = RankTotals.LATE_BUCKETS;

  /**
   * The most peers a compact window lists: the emitter's {@link CompactPeers#DEFAULT_MAX_PEERS}.
   */
  public static final int DEFAULT_MAX_WINDOW_PEERS = CompactPeers.DEFAULT_MAX_PEERS;

  /**
   * Deviations are relative to the others' value plus this many µs per call: a near-zero common
   * value (a quiet peer set) does not make every microsecond of difference stand out.
   */
  static final double DEVIATION_FLOOR_US = 1.0;

  private final int maxPeers;

  /** Compact windows capped at {@link #DEFAULT_MAX_WINDOW_PEERS} listed peers. */
  public RankWindowAggregate() {
    this(DEFAULT_MAX_WINDOW_PEERS);
  }

  /**
   * Compact windows capped at {@code maxPeers} listed peers ({@code Integer.MAX_VALUE}: the whole
   * union, every value exact).
   */
  public RankWindowAggregate(int maxPeers) {
    if (maxPeers < 1) throw new IllegalArgumentException("maxPeers must be >= 1");
    this.maxPeers = maxPeers;
  }

  @Override
  public RankWindowAccumulator createAccumulator() {
    return new RankWindowAccumulator();
  }

  @Override
  public RankWindowAccumulator add(SnapshotDelta d, RankWindowAccumulator a) {
    unpack(a);
    return packed(addUnpacked(d, a));
  }

  private RankWindowAccumulator addUnpacked(SnapshotDelta d, RankWindowAccumulator a) {
    RankTotals t = d.totals;
    boolean lateness = t.getPeerLateCycles().length > 0;
    if (a.totals == null
        || a.worldSize != d.worldSize
        || compact(a) != d.compact()
        || a.totals.histogramBuckets() != t.histogramBuckets()
        || lateness(a) != lateness) {
      // First delta, or a rank that rebooted into another shape within the window: the window
      // describes the latest shape only.
      reset(a, d, lateness);
    }
    a.cluster = d.cluster;
    a.job = d.job;
    a.communicator = d.communicator;
    a.collective = d.collective;
    a.rank = d.rank;
    a.worldSize = d.worldSize;
    a.host = d.host;
    a.cyclesPerSecond = d.cyclesPerSecond;
    a.leadHistogram = addInto(a.leadHistogram, d.leadHistogram);
    a.throttleStalls += d.throttleStalls;
    a.tiles += d.tiles;
    TimedCollectives.append(a, d.timedKeys, d.timedKernelNs, 0);
    NetworkWaits.add(a, d.netPeers, d.netSendNs, d.netSendSteps, d.netRecvNs, d.netRecvSteps);
    if (a.accountedCalls >= 0) {
      a.sampledCalls += d.sampled();
      a.accountedCalls += d.accounted();
    }
    if (d.sampled() > 0) a.sampleEvery = (int) (d.accounted() / d.sampled());
    double usPerCycle = 1e6 / t.clockRate(d.cyclesPerSecond);
    for (Phase p : Phase.values()) a.phaseUs[p.ordinal()] += t.cycles(p) * usPerCycle;
    long[] peerWait = t.peerWaitCycles();
    long[] peerLate = t.peerLateCycles();
    if (d.compact()) {
      addCounters(a.totals, t);
      double[] waitUs = new double[peerWait.length];
      for (int i = 0; i < waitUs.length; i++) waitUs[i] = peerWait[i] * usPerCycle;
      double[] lateUs = new double[peerLate.length];
      for (int i = 0; i < lateUs.length; i++) lateUs[i] = peerLate[i] * usPerCycle;
      absorb(
          a,
          d.peerIndex,
          waitUs,
          lateUs,
          t.peerArrivedLast(),
          t.peerLateHistogram(),
          d.othersWaitCycles * usPerCycle,
          d.othersLateCycles * usPerCycle,
          d.othersArrivedLast,
          d.othersLateHistogram);
      cap(a, maxPeers);
      return a;
    }
    a.totals.addAll(t);
    for (int p = 0; p < peerWait.length; p++) a.peerWaitUs[p] += peerWait[p] * usPerCycle;
    for (int p = 0; p < peerLate.length; p++) a.peerLateUs[p] += peerLate[p] * usPerCycle;
    addBatch(a, peerLate, usPerCycle, d.accounted());
    return a;
  }

  /**
   * One delta of a dense window as a batch of its lateness (see {@link
   * RankWindowAccumulator#peerLateSquares}). A delta with no accounted collective is no batch.
   */
  private static void addBatch(
      RankWindowAccumulator a, long[] peerLate, double usPerCycle, long accounted) {
    if (accounted <= 0 || peerLate.length == 0) return;
    if (a.peerLateSquares.length != peerLate.length) {
      if (a.batches > 0) return; // restored from a job without batches: the histogram alone
      a.peerLateSquares = new double[peerLate.length];
      a.peerLateCross = new double[peerLate.length];
    }
    double n = accounted;
    for (int p = 0; p < peerLate.length; p++) {
      double us = peerLate[p] * usPerCycle;
      a.peerLateSquares[p] += us * us;
      a.peerLateCross[p] += us * n;
    }
    a.batchCallsSquares += n * n;
    a.batches++;
  }

  static boolean compact(RankWindowAccumulator a) {
    return a.peerIndex.length > 0;
  }

  private static void reset(RankWindowAccumulator a, SnapshotDelta d, boolean lateness) {
    RankTotals t = d.totals;
    a.phaseUs = new double[Phase.COUNT];
    a.sampledCalls = a.accountedCalls = 0;
    a.peerLateSquares = a.peerLateCross = new double[0];
    a.batchCallsSquares = 0;
    a.batches = 0;
    TimedCollectives.clear(a);
    NetworkWaits.clear(a);
    if (!d.compact()) {
      a.totals = t.minus(t);
      a.peerWaitUs = new double[t.worldSize()];
      a.peerLateUs = new double[t.peerLateCycles().length];
      a.peerIndex = new int[0];
      a.othersWaitUs = a.othersLateUs = 0;
      a.othersArrivedLast = 0;
      a.othersLateHistogram = new long[0];
      return;
    }
    // The counters only; the per-peer part grows as deltas list peers. Wait and lateness are kept
    // in microseconds alone (the dense form also sums their cycles, which nothing reads).
    a.totals = new RankTotals(0, t.histogramBuckets());
    a.peerIndex = new int[0];
    a.peerWaitUs = new double[0];
    a.peerLateUs = new double[0];
    a.othersWaitUs = a.othersLateUs = 0;
    a.othersArrivedLast = 0;
    a.othersLateHistogram = new long[lateness ? B : 0];
  }

  /** Whether a's window has per-peer lateness (compact: its others' histogram says so). */
  static boolean lateness(RankWindowAccumulator a) {
    return compact(a) ? a.othersLateHistogram.length > 0 : a.peerLateUs.length > 0;
  }

  /** The counters, phase cycles and latency histogram of t added to a's (not the per-peer part). */
  private static void addCounters(RankTotals a, RankTotals t) {
    add(a.getCounters(), t.getCounters());
    add(a.getPhaseCycles(), t.getPhaseCycles());
    add(a.getHistogram(), t.getHistogram());
  }

  private static void add(long[] into, long[] from) {
    for (int i = 0; i < into.length; i++) into[i] += from[i];
  }

  /**
   * Adds one compact per-peer part (a delta's, or another accumulator's) to a compact accumulator:
   * listed peers by position in {@code index}, every other peer the {@code each*} values. A peer
   * listed for the first time starts from the others' common sum.
   */
  private static void absorb(
      RankWindowAccumulator a,
      int[] index,
      double[] waitUs,
      double[] lateUs,
      long[] last,
      long[] lateHist,
      double eachWaitUs,
      double eachLateUs,
      long eachLast,
      long[] eachLateHist) {
    boolean lateness = a.othersLateHistogram.length > 0;
    int[] merged = CompactPeers.union(a.peerIndex, index);
    if (merged.length != a.peerIndex.length) grow(a, merged, lateness);
    long[] accLast = a.totals.peerArrivedLast();
    long[] accHist = a.totals.peerLateHistogram();
    for (int m = 0, j = 0; m < merged.length; m++) {
      boolean listed = j < index.length && index[j] == merged[m];
      a.peerWaitUs[m] += listed ? waitUs[j] : eachWaitUs;
      accLast[m] += listed ? last[j] : eachLast;
      if (lateness) {
        a.peerLateUs[m] += listed ? lateUs[j] : eachLateUs;
        for (int b = 0; b < B; b++) {
          accHist[m * B + b] += listed ? lateHist[j * B + b] : eachLateHist[b];
        }
      }
      if (listed) j++;
    }
    a.othersWaitUs += eachWaitUs;
    a.othersArrivedLast += eachLast;
    if (lateness) {
      a.othersLateUs += eachLateUs;
      for (int b = 0; b < B; b++) a.othersLateHistogram[b] += eachLateHist[b];
    }
  }

  /** Re-lays a's per-peer part over {@code merged} (a superset): new peers at the others' sums. */
  private static void grow(RankWindowAccumulator a, int[] merged, boolean lateness) {
    int n = merged.length;
    double[] wait = new double[n];
    double[] late = new double[lateness ? n : 0];
    long[] last = new long[n];
    long[] hist = new long[lateness ? n * B : 0];
    long[] oldLast = a.totals.peerArrivedLast();
    long[] oldHist = a.totals.peerLateHistogram();
    for (int m = 0, o = 0; m < n; m++) {
      boolean had = o < a.peerIndex.length && a.peerIndex[o] == merged[m];
      wait[m] = had ? a.peerWaitUs[o] : a.othersWaitUs;
      last[m] = had ? oldLast[o] : a.othersArrivedLast;
      if (lateness) {
        late[m] = had ? a.peerLateUs[o] : a.othersLateUs;
        if (had) System.arraycopy(oldHist, o * B, hist, m * B, B);
        else System.arraycopy(a.othersLateHistogram, 0, hist, m * B, B);
      }
      if (had) o++;
    }
    a.peerIndex = merged;
    a.peerWaitUs = wait;
    a.peerLateUs = late;
    a.totals.setPeerArrivedLast(last);
    a.totals.setPeerLateHistogram(hist);
  }

  /**
   * {@code a} with its count arrays in full: {@code a} itself, or — a compact accumulator as the
   * state keeps it between deltas — a copy with them decoded. For readers of the window's sums.
   */
  public static RankWindowAccumulator readable(RankWindowAccumulator a) {
    if (!isPacked(a)) return a;
    RankWindowAccumulator c = new RankWindowAccumulator();
    c.cluster = a.cluster;
    c.job = a.job;
    c.communicator = a.communicator;
    c.collective = a.collective;
    c.rank = a.rank;
    c.worldSize = a.worldSize;
    c.host = a.host;
    c.cyclesPerSecond = a.cyclesPerSecond;
    c.phaseUs = a.phaseUs;
    c.peerWaitUs = a.peerWaitUs;
    c.peerLateUs = a.peerLateUs;
    c.peerIndex = a.peerIndex;
    c.othersWaitUs = a.othersWaitUs;
    c.othersLateUs = a.othersLateUs;
    c.othersArrivedLast = a.othersArrivedLast;
    c.leadHistogram = a.leadHistogram;
    c.throttleStalls = a.throttleStalls;
    c.tiles = a.tiles;
    c.sampledCalls = a.sampledCalls;
    c.accountedCalls = a.accountedCalls;
    c.peerLateSquares = a.peerLateSquares;
    c.peerLateCross = a.peerLateCross;
    c.batchCallsSquares = a.batchCallsSquares;
    c.batches = a.batches;
    c.sampleEvery = a.sampleEvery;
    c.timedKeys = a.timedKeys;
    c.timedKernelNs = a.timedKernelNs;
    c.timedDropped = a.timedDropped;
    c.netPeers = a.netPeers;
    c.netSendNs = a.netSendNs;
    c.netSendSteps = a.netSendSteps;
    c.netRecvNs = a.netRecvNs;
    c.netRecvSteps = a.netRecvSteps;
    c.packedCounts = a.packedCounts;
    unpack(c);
    return c;
  }

  /**
   * Whether a's count arrays are in {@link RankWindowAccumulator#packedCounts}: not in an
   * accumulator restored from the previous version's state (no such field; Flink's POJO schema
   * evolution leaves an added field at its Java default, null).
   */
  static boolean isPacked(RankWindowAccumulator a) {
    return a.packedCounts != null && a.packedCounts.length > 0;
  }

  /**
   * Decodes a compact accumulator's count arrays into the totals and the others' histogram, where
   * {@link #pack} left them (an accumulator of the previous version, and a dense one, hold them in
   * full: nothing to do).
   */
  private static void unpack(RankWindowAccumulator a) {
    if (!isPacked(a)) return;
    long[][] c = SparseCounts.decode(a.packedCounts, 9);
    a.totals = new RankTotals();
    a.totals.setCounters(c[0]);
    a.totals.setPhaseCycles(c[1]);
    a.totals.setHistogram(c[2]);
    a.totals.setPeerArrivedLast(c[3]);
    a.totals.setPeerLateHistogram(c[4]);
    a.totals.setPeerWaitCycles(c[5]);
    a.totals.setPeerLateCycles(c[6]);
    a.othersLateHistogram = c[7];
    a.peerIndex = new int[c[8].length];
    for (int i = 0, p = 0; i < c[8].length; i++) a.peerIndex[i] = p += (int) c[8][i];
    a.packedCounts = new byte[0];
  }

  /**
   * An accumulator as the state keeps it between deltas: its count arrays (counters, phase cycles,
   * latency histogram, the peers' arrived-last counts and lateness histograms, a dense window's
   * per-peer cycles, the others' histogram, the listed peers) sparse in {@link
   * RankWindowAccumulator#packedCounts}, the arrays themselves empty. Dense accumulators too: an
   * 8-rank window's eight lateness histograms are 1 KB as longs.
   */
  private static RankWindowAccumulator packed(RankWindowAccumulator a) {
    if (a.totals == null) return a;
    a.packedCounts =
        SparseCounts.encode(
            a.totals.getCounters(),
            a.totals.getPhaseCycles(),
            a.totals.getHistogram(),
            a.totals.getPeerArrivedLast(),
            a.totals.getPeerLateHistogram(),
            a.totals.getPeerWaitCycles(),
            a.totals.getPeerLateCycles(),
            a.othersLateHistogram,
            gaps(a.peerIndex));
    // Every array of the totals is in the bytes: the totals themselves (7 arrays' headers) go too.
    a.totals = null;
    a.othersLateHistogram = new long[0];
    a.peerIndex = new int[0];
    return a;
  }

  /** The listed peers as gaps (the first from 0): one byte each mostly, not four. */
  private static long[] gaps(int[] ascending) {
    long[] g = new long[ascending.length];
    for (int i = 0; i < g.length; i++) g[i] = ascending[i] - (i == 0 ? 0 : ascending[i - 1]);
    return g;
  }

  /**
   * Keeps at most {@code maxPeers} listed peers of a compact accumulator (count arrays unpacked):
   * the rank itself and the peers that differ most from the others' value; the others' value
   * becomes the mean over the unlisted and the folded peers.
   */
  static void cap(RankWindowAccumulator a, int maxPeers) {
    int n = a.peerIndex.length;
    if (n <= maxPeers) return;
    boolean lateness = lateness(a);
    long calls = Math.max(1, a.totals.get(Counter.CALLS));
    double rate = a.totals.clockRate(a.cyclesPerSecond);
    long[] last = a.totals.peerArrivedLast();
    long[] hist = a.totals.peerLateHistogram();
    double othersP99 =
        lateness ? Histograms.lateQuantileUs(a.othersLateHistogram, 0, 0.99, rate) : 0;
    double[] deviation = new double[n];
    List<Integer> order = new ArrayList<>(n);
    for (int m = 0; m < n; m++) {
      double dev =
          lateness
              ? relative(a.peerLateUs[m] / calls, a.othersLateUs / calls)
              : relative(a.peerWaitUs[m] / calls, a.othersWaitUs / calls);
      if (lateness) {
        dev =
            Math.max(dev, relative(Histograms.lateQuantileUs(hist, m * B, 0.99, rate), othersP99));
      }
      dev = Math.max(dev, Math.abs(last[m] - a.othersArrivedLast) / (double) calls);
      deviation[m] = a.peerIndex[m] == a.rank ? Double.POSITIVE_INFINITY : dev;
      order.add(m);
    }
    // Most different first; among equals the lower peer (deterministic).
    order.sort((x, y) -> Double.compare(deviation[y], deviation[x]));
    boolean[] keep = new boolean[n];
    for (int i = 0; i < maxPeers; i++) keep[order.get(i)] = true;
    long unlisted = (long) a.worldSize - n;
    long folded = n - maxPeers;
    double wait = a.othersWaitUs * unlisted;
    double late = a.othersLateUs * unlisted;
    double lastSum = (double) a.othersArrivedLast * unlisted;
    double[] histSum = new double[a.othersLateHistogram.length];
    for (int b = 0; b < histSum.length; b++)
      histSum[b] = (double) a.othersLateHistogram[b] * unlisted;
    int[] index = new int[maxPeers];
    double[] keptWait = new double[maxPeers];
    double[] keptLate = new double[lateness ? maxPeers : 0];
    long[] keptLast = new long[maxPeers];
    long[] keptHist = new long[lateness ? maxPeers * B : 0];
    for (int m = 0, k = 0; m < n; m++) {
      if (keep[m]) {
        index[k] = a.peerIndex[m];
        keptWait[k] = a.peerWaitUs[m];
        keptLast[k] = last[m];
        if (lateness) {
          keptLate[k] = a.peerLateUs[m];
          System.arraycopy(hist, m * B, keptHist, k * B, B);
        }
        k++;
        continue;
      }
      wait += a.peerWaitUs[m];
      lastSum += last[m];
      if (lateness) {
        late += a.peerLateUs[m];
        for (int b = 0; b < B; b++) histSum[b] += hist[m * B + b];
      }
    }
    double others = unlisted + folded;
    a.othersWaitUs = wait / others;
    a.othersArrivedLast = Math.round(lastSum / others);
    if (lateness) {
      a.othersLateUs = late / others;
      for (int b = 0; b < B; b++) a.othersLateHistogram[b] = Math.round(histSum[b] / others);
    }
    a.peerIndex = index;
    a.peerWaitUs = keptWait;
    a.peerLateUs = keptLate;
    a.totals.setPeerArrivedLast(keptLast);
    a.totals.setPeerLateHistogram(keptHist);
  }

  /** |value − common| relative to the common value plus {@link #DEVIATION_FLOOR_US}. */
  private static double relative(double value, double common) {
    return Math.abs(value - common) / (Math.abs(common) + DEVIATION_FLOOR_US);
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
    unpack(a);
    unpack(b);
    return packed(mergeUnpacked(a, b));
  }

  private RankWindowAccumulator mergeUnpacked(RankWindowAccumulator a, RankWindowAccumulator b) {
    if (a.rank < 0) return b;
    if (b.rank < 0) return a;
    a.leadHistogram = addInto(a.leadHistogram, b.leadHistogram);
    a.throttleStalls += b.throttleStalls;
    a.tiles += b.tiles;
    if (compact(a) != compact(b)) return b; // another shape: the window describes the latest
    TimedCollectives.append(a, b.timedKeys, b.timedKernelNs, b.timedDropped);
    NetworkWaits.merge(a, b);
    if (a.accountedCalls < 0 || b.accountedCalls < 0) {
      a.sampledCalls = a.accountedCalls = -1;
    } else {
      a.sampledCalls += b.sampledCalls;
      a.accountedCalls += b.accountedCalls;
    }
    a.sampleEvery = b.sampleEvery;
    for (int i = 0; i < a.phaseUs.length; i++) a.phaseUs[i] += b.phaseUs[i];
    if (compact(a)) {
      addCounters(a.totals, b.totals);
      absorb(
          a,
          b.peerIndex,
          b.peerWaitUs,
          b.peerLateUs,
          b.totals.peerArrivedLast(),
          b.totals.peerLateHistogram(),
          b.othersWaitUs,
          b.othersLateUs,
          b.othersArrivedLast,
          b.othersLateHistogram);
      cap(a, maxPeers);
      return a;
    }
    a.totals.addAll(b.totals);
    for (int p = 0; p < a.peerWaitUs.length; p++) a.peerWaitUs[p] += b.peerWaitUs[p];
    for (int p = 0; p < a.peerLateUs.length; p++) a.peerLateUs[p] += b.peerLateUs[p];
    if (a.peerLateSquares.length == b.peerLateSquares.length) {
      for (int p = 0; p < a.peerLateSquares.length; p++) {
        a.peerLateSquares[p] += b.peerLateSquares[p];
        a.peerLateCross[p] += b.peerLateCross[p];
      }
      a.batchCallsSquares += b.batchCallsSquares;
      a.batches += b.batches;
    } else {
      // One side has no batches (empty, or restored from a job before them): the histogram alone.
      a.peerLateSquares = a.peerLateCross = new double[0];
      a.batchCallsSquares = 0;
      a.batches = 0;
    }
    return a;
  }
}
