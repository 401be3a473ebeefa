package io.collscope.model;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The compact per-peer form of a counter snapshot (version 6) for large communicators: entries for
 * a few listed peers — the rank itself and the peers that stood out — and one "others" sum per
 * per-peer counter for everyone else. A dense 1,024-rank record carries 19 × 1,024 per-peer longs
 * (about 30 KB); a compact one about 40 bytes per listed peer.
 *
 * <p><b>What the attribution keeps.</b> A slow rank or link shows as a few peers whose lateness
 * stands far above the rest: those are listed, with their exact counters. An unlisted peer reads as
 * the mean of the others ({@link #expand}): the floor, the noise and the column tests of the
 * attribution are taken over cells that are nearly all typical ones, and a typical cell is what the
 * mean of typical cells is. What is lost is the spread between unremarkable peers.
 *
 * <p><b>Deltas.</b> Listed peers stay listed while there is room ({@link Selector}: sticky), so the
 * consumer's delta of a listed peer is exact. When a peer enters the list, its delta is its counter
 * now minus the others' mean before (its own history had been averaged with theirs); when one
 * leaves (only to make room), the reverse. Such a per-peer delta is an estimate, and may be
 * negative: consumers clamp per-peer deltas of compact records at zero instead of calling them
 * counters that went backwards. Every other counter is exact.
 */
public final class CompactPeers {

  private CompactPeers() {}

  /** Peers listed at most, the rank itself included: about 16 × 40 bytes. */
  public static final int DEFAULT_MAX_PEERS = 16;

  /** From this world size on the emitters write compact records by default. */
  public static final int DEFAULT_COMPACT_FROM = 128;

  /** A peer whose lateness in an interval exceeds this many times the median peer's stands out. */
  public static final double STANDS_OUT = 1.5;

  /**
   * Buckets (factors of two) above the median peer's mean lateness from which a collective counts
   * as a tail: a peer late by 8× the typical lateness in a few collectives stands out even when its
   * mean does not.
   */
  public static final int TAIL_BUCKETS_ABOVE = 3;

  /** Whether a snapshot record is compact. */
  public static boolean isCompact(CounterSnapshot s) {
    return s.getPeerIndex() != null && !s.getPeerIndex().isEmpty();
  }

  /**
   * The dense counters of a compact record: listed peers as recorded, every other peer the mean of
   * the others (rounded down). A dense record as it is.
   */
  static void expandInto(
      CounterSnapshot s,
      long[] peerWait,
      long[] peerLast,
      long[] peerLate,
      long[] peerLateHist,
      boolean lateness) {
    List<Integer> index = s.getPeerIndex();
    int n = peerWait.length;
    int others = n - index.size();
    long wait = others > 0 ? s.getOthersWaitCycles() / others : 0;
    long last = others > 0 ? s.getOthersArrivedLast() / others : 0;
    long late = others > 0 ? s.getOthersLateCycles() / others : 0;
    long[] hist = new long[RankTotals.LATE_BUCKETS];
    List<Long> oh = s.getOthersLateHistogram();
    if (others > 0 && lateness) {
      for (int b = 0; b < hist.length && b < oh.size(); b++) hist[b] = oh.get(b) / others;
    }
    Arrays.fill(peerWait, wait);
    Arrays.fill(peerLast, last);
    if (lateness) {
      Arrays.fill(peerLate, late);
      for (int p = 0; p < n; p++) {
        System.arraycopy(hist, 0, peerLateHist, p * RankTotals.LATE_BUCKETS, hist.length);
      }
    }
    List<Long> w = s.getPeerWaitCycles();
    List<Long> l = s.getPeerArrivedLast();
    List<Long> lc = s.getPeerLateCycles();
    List<Long> lh = s.getPeerLateHistogram();
    for (int i = 0; i < index.size(); i++) {
      int p = index.get(i);
      peerWait[p] = w.get(i);
      peerLast[p] = l.get(i);
      if (lateness) {
        peerLate[p] = lc.get(i);
        for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
          peerLateHist[p * RankTotals.LATE_BUCKETS + b] = lh.get(i * RankTotals.LATE_BUCKETS + b);
        }
      }
    }
  }

  /** The peers of two ascending lists of peers, ascending, each once. */
  public static int[] union(int[] a, int[] b) {
    int[] out = new int[a.length + b.length];
    int i = 0, j = 0, n = 0;
    while (i < a.length || j < b.length) {
      if (j >= b.length || (i < a.length && a[i] < b[j])) out[n++] = a[i++];
      else if (i >= a.length || b[j] < a[i]) out[n++] = b[j++];
      else {
        out[n++] = a[i++];
        j++;
      }
    }
    return n == out.length ? out : Arrays.copyOf(out, n);
  }

  /** The problem of a compact record's per-peer part, or null (a dense record: null). */
  public static String validate(CounterSnapshot s) {
    if (!isCompact(s)) return null;
    List<Integer> index = s.getPeerIndex();
    int n = s.getWorldSize();
    int k = index.size();
    int prev = -1;
    boolean self = false;
    for (int p : index) {
      if (p <= prev || p >= n) {
        return "peer_index must be ascending within [0, " + n + "), has " + p + " after " + prev;
      }
      self |= p == s.getRank();
      prev = p;
    }
    if (!self) return "peer_index must list the rank itself (" + s.getRank() + ")";
    if (s.getPeerWaitCycles().size() != k || s.getPeerArrivedLast().size() != k) {
      return "compact per-peer arrays have "
          + s.getPeerWaitCycles().size()
          + "/"
          + s.getPeerArrivedLast().size()
          + " entries, peer_index has "
          + k;
    }
    int late = s.getPeerLateCycles().size();
    int lateHist = s.getPeerLateHistogram().size();
    int othersHist = s.getOthersLateHistogram().size();
    boolean none = late == 0 && lateHist == 0 && othersHist == 0;
    boolean all =
        late == k
            && lateHist == k * RankTotals.LATE_BUCKETS
            && othersHist == RankTotals.LATE_BUCKETS;
    if (!none && !all) {
      return "compact peer_late_cycles/peer_late_histogram/others_late_histogram have "
          + late
          + "/"
          + lateHist
          + "/"
          + othersHist
          + " entries, expected none or "
          + k
          + "/"
          + k * RankTotals.LATE_BUCKETS
          + "/"
          + RankTotals.LATE_BUCKETS;
    }
    if (s.getOthersWaitCycles() < 0
        || s.getOthersArrivedLast() < 0
        || s.getOthersLateCycles() < 0
        || s.getOthersLateHistogram().stream().anyMatch(v -> v < 0)) {
      return "an others_* counter is negative";
    }
    return null;
  }

  /**
   * Writes {@code t}'s per-peer counters into {@code s} in compact form, listing {@code listed}
   * (ascending, the rank itself included); every other counter as {@link RankTotals#writeTo}.
   */
  public static CounterSnapshot writeCompact(CounterSnapshot s, RankTotals t, int[] listed) {
    t.writeTo(s);
    int n = t.worldSize();
    boolean lateness = t.hasLateness();
    int k = listed.length;
    long[] w = new long[k];
    long[] l = new long[k];
    long[] lc = new long[lateness ? k : 0];
    long[] lh = new long[lateness ? k * RankTotals.LATE_BUCKETS : 0];
    long ow = 0, ol = 0, olc = 0;
    long[] oh = new long[lateness ? RankTotals.LATE_BUCKETS : 0];
    boolean[] isListed = new boolean[n];
    for (int p : listed) isListed[p] = true;
    for (int i = 0; i < k; i++) {
      int p = listed[i];
      w[i] = t.peerWaitCycles()[p];
      l[i] = t.peerArrivedLast()[p];
      if (lateness) {
        lc[i] = t.peerLateCycles()[p];
        System.arraycopy(
            t.peerLateHistogram(),
            p * RankTotals.LATE_BUCKETS,
            lh,
            i * RankTotals.LATE_BUCKETS,
            RankTotals.LATE_BUCKETS);
      }
    }
    for (int p = 0; p < n; p++) {
      if (isListed[p]) continue;
      ow += t.peerWaitCycles()[p];
      ol += t.peerArrivedLast()[p];
      if (lateness) {
        olc += t.peerLateCycles()[p];
        for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
          oh[b] += t.peerLateHistogram()[p * RankTotals.LATE_BUCKETS + b];
        }
      }
    }
    List<Integer> index = new ArrayList<>(k);
    for (int p : listed) index.add(p);
    s.setPeerIndex(index);
    s.setPeerWaitCycles(RankTotals.boxed(w));
    s.setPeerArrivedLast(RankTotals.boxed(l));
    s.setPeerLateCycles(RankTotals.boxed(lc));
    s.setPeerLateHistogram(RankTotals.boxed(lh));
    s.setOthersWaitCycles(ow);
    s.setOthersArrivedLast(ol);
    s.setOthersLateCycles(olc);
    s.setOthersLateHistogram(RankTotals.boxed(oh));
    return s;
  }

  /**
   * Makes the records of every rank of one communicator compact as their emitters would: a {@link
   * Selector} per rank, {@link #DEFAULT_MAX_PEERS} peers each. For simulations, load and tests that
   * produce every rank's records in one place. Not thread-safe.
   */
  public static final class Compactor {
    private final Selector[] selectors;

    public Compactor(int worldSize) {
      selectors = new Selector[worldSize];
    }

    /** A compact copy of {@code s} (left as it is), its peers chosen by its rank's selector. */
    public CounterSnapshot compact(CounterSnapshot s) {
      int r = s.getRank();
      if (selectors[r] == null) selectors[r] = new Selector(DEFAULT_MAX_PEERS);
      RankTotals t = RankTotals.of(s);
      return writeCompact(CounterSnapshot.newBuilder(s).build(), t, selectors[r].select(t, r));
    }
  }

  /**
   * Chooses, for one rank's successive snapshots, which peers a compact record lists: the rank
   * itself, then the peers that stand out in the interval since the last snapshot (lateness above
   * {@link #STANDS_OUT} × the median peer's, or collectives in the tail buckets), most late first;
   * then, while there is room, the peers listed before (sticky, so their deltas stay exact). Not
   * thread-safe: one per rank.
   */
  public static final class Selector {
    private final int maxPeers;
    private RankTotals previous;
    private int[] listed = new int[0];

    public Selector(int maxPeers) {
      if (maxPeers < 1) throw new IllegalArgumentException("maxPeers must be >= 1");
      this.maxPeers = maxPeers;
    }

    /** The peers to list for cumulative counters {@code now} of rank {@code self}, ascending. */
    public int[] select(RankTotals now, int self) {
      int n = now.worldSize();
      RankTotals interval =
          previous == null || previous.worldSize() != n ? now : now.minus(previous);
      previous = now.copy();
      boolean lateness = interval.hasLateness();
      long[] score = lateness ? interval.peerLateCycles() : interval.peerWaitCycles();
      long[] sorted = new long[n - 1];
      long calls = Math.max(1, interval.get(Counter.CALLS));
      for (int p = 0, i = 0; p < n; p++) if (p != self) sorted[i++] = score[p];
      Arrays.sort(sorted);
      long median = sorted.length == 0 ? 0 : sorted[sorted.length / 2];
      int tailFrom = RankTotals.lateBucketOf(Math.max(1, median / calls)) + TAIL_BUCKETS_ABOVE;
      long[] tail = new long[n];
      if (lateness && tailFrom < RankTotals.LATE_BUCKETS) {
        long[] h = interval.peerLateHistogram();
        for (int p = 0; p < n; p++) {
          for (int b = tailFrom; b < RankTotals.LATE_BUCKETS; b++) {
            tail[p] += h[p * RankTotals.LATE_BUCKETS + b];
          }
        }
      }
      List<Integer> standOut = new ArrayList<>();
      for (int p = 0; p < n; p++) {
        if (p != self && (score[p] > STANDS_OUT * median || tail[p] > 0)) standOut.add(p);
      }
      // Most late first; tail-only peers by their tail counts after them.
      double bar = STANDS_OUT * median;
      standOut.sort(
          java.util.Comparator.<Integer>comparingInt(p -> score[p] > bar ? 0 : 1)
              .thenComparingLong(p -> score[p] > bar ? -score[p] : -tail[p]));
      boolean[] chosen = new boolean[n];
      chosen[self] = true;
      int count = 1;
      for (int p : standOut) {
        if (count >= maxPeers) break;
        if (!chosen[p]) {
          chosen[p] = true;
          count++;
        }
      }
      for (int p : listed) {
        if (count >= maxPeers) break;
        if (p < n && !chosen[p]) {
          chosen[p] = true;
          count++;
        }
      }
      int[] out = new int[count];
      for (int p = 0, i = 0; p < n; p++) if (chosen[p]) out[i++] = p;
      listed = out;
      return out.clone();
    }
  }

  /**
   * The dense rank window that a compact one (RankWindow version 6, {@code peer_index}) stands for:
   * every peer not in {@code peer_index} at the {@code others_*} values; a dense window as it is.
   * For readers that index the per-peer arrays by peer number (docs/SCALE.md), as {@link
   * RankTotals#of} is for snapshots.
   */
  public static RankWindow expand(RankWindow w) {
    List<Integer> index = w.getPeerIndex();
    if (index == null || index.isEmpty()) return w;
    int n = w.getWorldSize();
    boolean lateness = !w.getPeerLateMeanUs().isEmpty();
    List<Double> wait = new ArrayList<>(n);
    List<Double> late = new ArrayList<>(lateness ? n : 0);
    List<Double> p99 = new ArrayList<>(lateness ? n : 0);
    List<Long> last = new ArrayList<>(n);
    boolean errors = w.getPeerLateSeUs() != null && !w.getPeerLateSeUs().isEmpty();
    boolean tails = w.getPeerLateTailShare() != null && !w.getPeerLateTailShare().isEmpty();
    List<Double> se = new ArrayList<>(errors ? n : 0);
    List<Double> share = new ArrayList<>(tails ? n : 0);
    for (int p = 0, i = 0; p < n; p++) {
      boolean listed = i < index.size() && index.get(i) == p;
      wait.add(listed ? w.getPeerWaitMeanUs().get(i) : w.getOthersWaitMeanUs());
      last.add(listed ? w.getPeerArrivedLast().get(i) : w.getOthersArrivedLast());
      if (lateness) {
        late.add(listed ? w.getPeerLateMeanUs().get(i) : w.getOthersLateMeanUs());
        p99.add(listed ? w.getPeerLateP99Us().get(i) : w.getOthersLateP99Us());
      }
      if (errors) se.add(listed ? w.getPeerLateSeUs().get(i) : w.getOthersLateSeUs());
      if (tails) share.add(listed ? w.getPeerLateTailShare().get(i) : w.getOthersLateTailShare());
      if (listed) i++;
    }
    RankWindow d = RankWindow.newBuilder(w).build();
    d.setPeerIndex(new ArrayList<>());
    d.setPeerWaitMeanUs(wait);
    d.setPeerLateMeanUs(late);
    d.setPeerLateP99Us(p99);
    d.setPeerArrivedLast(last);
    d.setOthersWaitMeanUs(0.0);
    d.setOthersLateMeanUs(0.0);
    d.setOthersLateP99Us(0.0);
    d.setOthersArrivedLast(0L);
    d.setPeerLateSeUs(se);
    d.setOthersLateSeUs(0.0);
    d.setPeerLateTailShare(share);
    d.setOthersLateTailShare(0.0);
    return d;
  }
}
