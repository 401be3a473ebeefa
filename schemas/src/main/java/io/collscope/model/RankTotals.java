package io.collscope.model;

import io.collscope.avro.CounterSnapshot;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One rank's cumulative counters — or the difference of two of them: the counters of {@link
 * Counter}, the cycles of each {@link Phase}, per-peer wait cycles, arrived-last counts, lateness
 * cycles and lateness histograms, and the log2 latency histogram. The one value type behind the
 * counter block's writer and reader, the snapshot record and the job's deltas, so none of them
 * spells out a field by hand.
 *
 * <p>Mutable: a writer accumulates into it. Not thread-safe. Its no-argument constructor and bean
 * accessors make it a POJO that stream processors serialize field by field.
 */
public final class RankTotals {

  private long[] counters;
  private long[] phaseCycles;
  private long[] peerWaitCycles;
  private long[] peerArrivedLast;
  private long[] peerLateCycles;
  private long[] peerLateHistogram;
  private long[] histogram;

  /** Buckets of each peer's lateness histogram: see {@link #lateBucketOf}. */
  public static final int LATE_BUCKETS = 16;

  /** Bucket 0 holds lateness below {@code 2^(LATE_SHIFT + 1)} cycles. */
  public static final int LATE_SHIFT = 9;

  /** An empty shape for deserializers; use {@link #RankTotals(int, int)}. */
  public RankTotals() {
    this(0, 0);
  }

  public RankTotals(int worldSize, int histogramBuckets) {
    this(
        new long[Counter.COUNT],
        new long[Phase.COUNT],
        new long[worldSize],
        new long[worldSize],
        new long[worldSize],
        new long[worldSize * LATE_BUCKETS],
        new long[histogramBuckets]);
  }

  private RankTotals(
      long[] counters,
      long[] phases,
      long[] peerWait,
      long[] peerLast,
      long[] peerLate,
      long[] peerLateHist,
      long[] hist) {
    this.counters = counters;
    this.phaseCycles = phases;
    this.peerWaitCycles = peerWait;
    this.peerArrivedLast = peerLast;
    this.peerLateCycles = peerLate;
    this.peerLateHistogram = peerLateHist;
    this.histogram = hist;
  }

  // Bean accessors of the whole arrays, for serializers.
  public long[] getCounters() {
    return counters;
  }

  public void setCounters(long[] counters) {
    this.counters = counters;
  }

  public long[] getPhaseCycles() {
    return phaseCycles;
  }

  public void setPhaseCycles(long[] phaseCycles) {
    this.phaseCycles = phaseCycles;
  }

  public long[] getPeerWaitCycles() {
    return peerWaitCycles;
  }

  public void setPeerWaitCycles(long[] peerWaitCycles) {
    this.peerWaitCycles = peerWaitCycles;
  }

  public long[] getPeerArrivedLast() {
    return peerArrivedLast;
  }

  public void setPeerArrivedLast(long[] peerArrivedLast) {
    this.peerArrivedLast = peerArrivedLast;
  }

  public long[] getPeerLateCycles() {
    return peerLateCycles;
  }

  public void setPeerLateCycles(long[] peerLateCycles) {
    this.peerLateCycles = peerLateCycles;
  }

  public long[] getPeerLateHistogram() {
    return peerLateHistogram;
  }

  public void setPeerLateHistogram(long[] peerLateHistogram) {
    this.peerLateHistogram = peerLateHistogram;
  }

  public long[] getHistogram() {
    return histogram;
  }

  public void setHistogram(long[] histogram) {
    this.histogram = histogram;
  }

  public int worldSize() {
    return peerWaitCycles.length;
  }

  public int histogramBuckets() {
    return histogram.length;
  }

  public long get(Counter c) {
    return counters[c.ordinal()];
  }

  public void set(Counter c, long v) {
    counters[c.ordinal()] = v;
  }

  public void add(Counter c, long v) {
    counters[c.ordinal()] += v;
  }

  public long cycles(Phase p) {
    return phaseCycles[p.ordinal()];
  }

  public void setCycles(Phase p, long v) {
    phaseCycles[p.ordinal()] = v;
  }

  public void addCycles(Phase p, long v) {
    phaseCycles[p.ordinal()] += v;
  }

  /**
   * Index p: wait cycles billed to peer p — the whole wait of each collective goes to the peer(s)
   * that gated it (the last arrival; ties share). The live array: writers add to it in place.
   */
  public long[] peerWaitCycles() {
    return peerWaitCycles;
  }

  /** Index p: collectives in which p arrived last. The live array. */
  public long[] peerArrivedLast() {
    return peerArrivedLast;
  }

  /**
   * Index p: cycles from this rank's publication until peer p's flag was seen, summed over
   * collectives — each peer's whole lateness, not split with the peers late with it. The live
   * array.
   */
  public long[] peerLateCycles() {
    return peerLateCycles;
  }

  /**
   * Index {@code p * LATE_BUCKETS + b}: collectives in which peer p's lateness fell in bucket b
   * ({@link #lateBucketOf}). The live array.
   */
  public long[] peerLateHistogram() {
    return peerLateHistogram;
  }

  /** Counts one collective in which peer p was {@code cycles} late: its sum and its histogram. */
  public void recordLateness(int p, long cycles) {
    peerLateCycles[p] += cycles;
    peerLateHistogram[p * LATE_BUCKETS + lateBucketOf(cycles)]++;
  }

  /**
   * Bucket b of a lateness histogram: 0 holds [0, 2^10) cycles, b in 1..14 holds [2^(9+b),
   * 2^(10+b)), 15 is open-ended from 2^24 (about 0.5 µs to 8 ms at 2 GHz; 1 µs to 17 ms on the CPU
   * backend, whose cycles are ns). Factor-of-two buckets over the range where a peer's lateness
   * matters, few enough to keep per peer.
   */
  public static int lateBucketOf(long cycles) {
    int b = cycles <= 1 ? 0 : 63 - Long.numberOfLeadingZeros(cycles) - LATE_SHIFT;
    return Math.max(0, Math.min(b, LATE_BUCKETS - 1));
  }

  /** Whether these counters carry the per-peer lateness of counter snapshots version 4. */
  public boolean hasLateness() {
    return peerLateCycles.length == worldSize() && worldSize() > 0;
  }

  /** The live log2 latency histogram. */
  public long[] histogram() {
    return histogram;
  }

  /**
   * The clock's rate while these counters were counted, in cycles per second: the ratio of the
   * clock samples (cycles and wall-clock ns of the same intervals), which follows the clock when
   * power capping or boost changes it; {@code startupRate} when there are no samples (a delta
   * without collectives, or records of emitters that predate the samples).
   */
  public double clockRate(long startupRate) {
    long ns = get(Counter.CLOCK_NS);
    long cycles = get(Counter.CLOCK_CYCLES);
    return ns > 0 && cycles > 0 ? cycles * 1e9 / ns : startupRate;
  }

  /** Counts one collective of {@code cycles} latency in the log2 histogram. */
  public void recordLatency(long cycles) {
    histogram[bucketOf(cycles, histogram.length)]++;
  }

  /** Bucket i holds [2^i, 2^(i+1)); 0 and 1 land in bucket 0; the last bucket is open-ended. */
  public static int bucketOf(long cycles, int buckets) {
    int b = cycles <= 1 ? 0 : 63 - Long.numberOfLeadingZeros(cycles);
    return Math.min(b, buckets - 1);
  }

  public RankTotals copy() {
    return new RankTotals(
        counters.clone(),
        phaseCycles.clone(),
        peerWaitCycles.clone(),
        peerArrivedLast.clone(),
        peerLateCycles.clone(),
        peerLateHistogram.clone(),
        histogram.clone());
  }

  /** Adds every counter of {@code other} (same shape) to this one. */
  public void addAll(RankTotals other) {
    addScaled(other, 1);
  }

  /** This minus {@code earlier}, counter by counter (same shape). */
  public RankTotals minus(RankTotals earlier) {
    RankTotals d = copy();
    d.addScaled(earlier, -1);
    return d;
  }

  private void addScaled(RankTotals other, int sign) {
    requireSameShape(other);
    addInto(counters, other.counters, sign);
    addInto(phaseCycles, other.phaseCycles, sign);
    addInto(peerWaitCycles, other.peerWaitCycles, sign);
    addInto(peerArrivedLast, other.peerArrivedLast, sign);
    addInto(peerLateCycles, other.peerLateCycles, sign);
    addInto(peerLateHistogram, other.peerLateHistogram, sign);
    addInto(histogram, other.histogram, sign);
  }

  /**
   * Which counter is lower here than in {@code earlier} — cumulative counters never go backwards
   * within one boot — or how the shape changed; null when every counter held or grew.
   */
  public String firstBackwards(RankTotals earlier) {
    if (worldSize() != earlier.worldSize()) {
      return "world_size changed " + earlier.worldSize() + " -> " + worldSize();
    }
    if (histogramBuckets() != earlier.histogramBuckets()) {
      return "latency_histogram changed length "
          + earlier.histogramBuckets()
          + " -> "
          + histogramBuckets();
    }
    if (peerLateCycles.length != earlier.peerLateCycles.length) {
      return "peer_late_cycles changed length "
          + earlier.peerLateCycles.length
          + " -> "
          + peerLateCycles.length;
    }
    return firstBelow(earlier, (name, was, now) -> name + " went backwards " + was + " -> " + now);
  }

  /**
   * As {@link #firstBackwards(RankTotals)}, but without the per-peer counters when {@code perPeer}
   * is false: those of compact records are estimates for unlisted peers ({@link CompactPeers}).
   */
  public String firstBackwards(RankTotals earlier, boolean perPeer) {
    if (perPeer) return firstBackwards(earlier);
    RankTotals a = earlier.copy();
    RankTotals b = copy();
    for (RankTotals t : new RankTotals[] {a, b}) {
      t.peerWaitCycles = new long[t.worldSize()];
      t.peerArrivedLast = new long[t.worldSize()];
      Arrays.fill(t.peerLateCycles, 0);
      Arrays.fill(t.peerLateHistogram, 0);
    }
    return b.firstBackwards(a);
  }

  /** Per-peer counters below zero (estimated deltas of compact records) become zero. */
  public RankTotals clampPeersAtZero() {
    for (long[] a :
        new long[][] {peerWaitCycles, peerArrivedLast, peerLateCycles, peerLateHistogram}) {
      for (int i = 0; i < a.length; i++) if (a[i] < 0) a[i] = 0;
    }
    return this;
  }

  /** The first negative counter (a broken writer), or null. */
  public String firstNegative() {
    return firstBelow(minus(this), (name, zero, now) -> name + " is negative: " + now);
  }

  /**
   * The first counter above {@code max}, described, or null. Window sums add many deltas of a
   * counter; one near 2^63 would overflow them into negative means.
   */
  public String firstAbove(long max) {
    RankTotals cap = copy();
    for (long[] a :
        new long[][] {
          cap.counters,
          cap.phaseCycles,
          cap.peerWaitCycles,
          cap.peerArrivedLast,
          cap.peerLateCycles,
          cap.peerLateHistogram,
          cap.histogram
        }) {
      java.util.Arrays.fill(a, max);
    }
    return cap.firstBelow(this, (name, value, limit) -> name + " is " + value + ", above " + limit);
  }

  /** How a counter below its bound is described. */
  private interface Below {
    String describe(String name, long bound, long value);
  }

  /** The first counter lower here than in {@code bound} (same shape), described, or null. */
  private String firstBelow(RankTotals bound, Below below) {
    for (Counter c : Counter.values()) {
      if (get(c) < bound.get(c)) return below.describe(c.fieldName(), bound.get(c), get(c));
    }
    for (Phase p : Phase.values()) {
      if (cycles(p) < bound.cycles(p)) {
        return below.describe(p.cyclesField(), bound.cycles(p), cycles(p));
      }
    }
    String f = firstBelow("peer_wait_cycles", bound.peerWaitCycles, peerWaitCycles, below);
    if (f == null)
      f = firstBelow("peer_arrived_last", bound.peerArrivedLast, peerArrivedLast, below);
    if (f == null) f = firstBelow("peer_late_cycles", bound.peerLateCycles, peerLateCycles, below);
    if (f == null)
      f = firstBelow("peer_late_histogram", bound.peerLateHistogram, peerLateHistogram, below);
    if (f == null) f = firstBelow("latency_histogram", bound.histogram, histogram, below);
    return f;
  }

  private static String firstBelow(String name, long[] bound, long[] values, Below below) {
    for (int i = 0; i < values.length; i++) {
      if (values[i] < bound[i]) return below.describe(name + "[" + i + "]", bound[i], values[i]);
    }
    return null;
  }

  // ---- the snapshot record ---------------------------------------------------------------------

  /** The counters of a snapshot record. */
  public static RankTotals of(CounterSnapshot s) {
    RankTotals t;
    if (CompactPeers.isCompact(s)) {
      // Dense again, unlisted peers at the others' mean: see CompactPeers.
      int n = s.getWorldSize();
      boolean lateness = !s.getPeerLateCycles().isEmpty();
      t =
          new RankTotals(
              new long[Counter.COUNT],
              new long[Phase.COUNT],
              new long[n],
              new long[n],
              new long[lateness ? n : 0],
              new long[lateness ? n * LATE_BUCKETS : 0],
              unboxed(s.getLatencyHistogram()));
      CompactPeers.expandInto(
          s, t.peerWaitCycles, t.peerArrivedLast, t.peerLateCycles, t.peerLateHistogram, lateness);
    } else {
      t =
          new RankTotals(
              new long[Counter.COUNT],
              new long[Phase.COUNT],
              unboxed(s.getPeerWaitCycles()),
              unboxed(s.getPeerArrivedLast()),
              unboxed(s.getPeerLateCycles()),
              unboxed(s.getPeerLateHistogram()),
              unboxed(s.getLatencyHistogram()));
    }
    readScalars(t, s);
    return t;
  }

  /**
   * The counters, phase cycles and latency histogram of a snapshot record, without its per-peer
   * counters (empty arrays): what the consumer of a compact record checks and subtracts as exact
   * while it keeps the per-peer part compact.
   */
  public static RankTotals withoutPeersOf(CounterSnapshot s) {
    RankTotals t =
        new RankTotals(
            new long[Counter.COUNT],
            new long[Phase.COUNT],
            new long[0],
            new long[0],
            new long[0],
            new long[0],
            unboxed(s.getLatencyHistogram()));
    readScalars(t, s);
    return t;
  }

  /**
   * Writes every counter and per-peer array into a snapshot record; the caller sets its identity.
   */
  public CounterSnapshot writeTo(CounterSnapshot s) {
    for (Counter c : Counter.values()) s.put(c.fieldName(), get(c));
    for (Phase p : Phase.values()) s.put(p.cyclesField(), cycles(p));
    s.setPeerWaitCycles(boxed(peerWaitCycles));
    s.setPeerArrivedLast(boxed(peerArrivedLast));
    s.setPeerLateCycles(boxed(peerLateCycles));
    s.setPeerLateHistogram(boxed(peerLateHistogram));
    // Not counters: the emitters that time collectives (the NCCL sidecar) set them after this.
    if (s.getTimedKeys() == null) s.setTimedKeys(new ArrayList<>());
    if (s.getTimedKernelNs() == null) s.setTimedKernelNs(new ArrayList<>());
    if (s.getNetPeers() == null) s.setNetPeers(new ArrayList<>());
    if (s.getNetSendWaitNs() == null) s.setNetSendWaitNs(new ArrayList<>());
    if (s.getNetSendSteps() == null) s.setNetSendSteps(new ArrayList<>());
    if (s.getNetRecvWaitNs() == null) s.setNetRecvWaitNs(new ArrayList<>());
    if (s.getNetRecvSteps() == null) s.setNetRecvSteps(new ArrayList<>());
    s.setLatencyHistogram(boxed(histogram));
    // Dense: every peer has its entries (CompactPeers.writeCompact makes it compact).
    s.setPeerIndex(new ArrayList<>());
    s.setOthersWaitCycles(0L);
    s.setOthersArrivedLast(0L);
    s.setOthersLateCycles(0L);
    s.setOthersLateHistogram(new ArrayList<>());
    // persistent-CTA drift (version 5): empty unless the writer's kernel has persistent CTAs
    if (s.getCtaLeadHistogram() == null) s.setCtaLeadHistogram(new ArrayList<>());
    // every collective accounted (version 7), unless the writer samples and says so
    s.setSampleEvery(1);
    s.setSampledCalls(null);
    return s;
  }

  private void requireSameShape(RankTotals o) {
    if (o.worldSize() != worldSize()
        || o.histogramBuckets() != histogramBuckets()
        || o.peerLateCycles.length != peerLateCycles.length) {
      throw new IllegalArgumentException(
          "counters of a world of "
              + o.worldSize()
              + " with "
              + o.histogramBuckets()
              + " buckets do not combine with "
              + worldSize()
              + " and "
              + histogramBuckets());
    }
  }

  private static void addInto(long[] into, long[] from, int sign) {
    for (int i = 0; i < into.length; i++) into[i] += sign * from[i];
  }

  /** Schema positions of the counters and phase cycles: read by position, not looked up by name. */
  private static final int[] COUNTER_POSITIONS =
      Arrays.stream(Counter.values()).mapToInt(c -> position(c.fieldName())).toArray();

  private static final int[] PHASE_POSITIONS =
      Arrays.stream(Phase.values()).mapToInt(p -> position(p.cyclesField())).toArray();

  private static int position(String field) {
    return CounterSnapshot.SCHEMA$.getField(field).pos();
  }

  private static void readScalars(RankTotals t, CounterSnapshot s) {
    for (Counter c : Counter.values()) t.set(c, (Long) s.get(COUNTER_POSITIONS[c.ordinal()]));
    for (Phase p : Phase.values()) t.setCycles(p, (Long) s.get(PHASE_POSITIONS[p.ordinal()]));
  }

  public static long[] unboxed(List<Long> l) {
    // The decoder's lists (every record the job decodes): one array copy, no unboxing.
    if (l instanceof LongList primitive) return primitive.toLongArray();
    long[] a = new long[l.size()];
    for (int i = 0; i < a.length; i++) a[i] = l.get(i);
    return a;
  }

  /**
   * As {@link #unboxed(List)} for a caller that only reads the result: the decoder's array itself
   * where it can (no copy). Writing to it would change the record.
   */
  public static long[] forReading(List<Long> l) {
    return l instanceof LongList primitive ? primitive.valuesForReading() : unboxed(l);
  }

  /** As {@link #unboxed(List)}, for {@code peer_index}. */
  public static int[] unboxedInts(List<Integer> l) {
    if (l instanceof IntList primitive) return primitive.toIntArray();
    int[] a = new int[l.size()];
    for (int i = 0; i < a.length; i++) a[i] = l.get(i);
    return a;
  }

  public static List<Long> boxed(long[] a) {
    List<Long> l = new ArrayList<>(a.length);
    for (long v : a) l.add(v);
    return l;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RankTotals t
        && Arrays.equals(counters, t.counters)
        && Arrays.equals(phaseCycles, t.phaseCycles)
        && Arrays.equals(peerWaitCycles, t.peerWaitCycles)
        && Arrays.equals(peerArrivedLast, t.peerArrivedLast)
        && Arrays.equals(peerLateCycles, t.peerLateCycles)
        && Arrays.equals(peerLateHistogram, t.peerLateHistogram)
        && Arrays.equals(histogram, t.histogram);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(counters) * 31 + Arrays.hashCode(phaseCycles);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("RankTotals{");
    for (Counter c : Counter.values())
      sb.append(c.fieldName()).append('=').append(get(c)).append(' ');
    for (Phase p : Phase.values())
      sb.append(p.cyclesField()).append('=').append(cycles(p)).append(' ');
    return sb.append("peer_wait=")
        .append(Arrays.toString(peerWaitCycles))
        .append(" peer_last=")
        .append(Arrays.toString(peerArrivedLast))
        .append(" peer_late=")
        .append(Arrays.toString(peerLateCycles))
        .append('}')
        .toString();
  }
}
