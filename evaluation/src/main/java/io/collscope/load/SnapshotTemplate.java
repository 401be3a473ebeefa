package io.collscope.load;

import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.CompactPeers;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import io.collscope.sim.FaultModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A few simulated report intervals of one communicator ({@link OneShotSimulator}, the accuracy
 * evaluation's discrete-event model of the protocol, with its faults), kept as one flat vector of
 * cumulative counters per rank and interval, and replayed cyclically as long as the load runs: the
 * counters of interval {@code x} are {@code (x / m) × V[m] + V[x % m]}, so they keep growing and
 * every replayed interval's delta is a simulated one. Many communicators of one size share a
 * template, each at its own phase of the cycle.
 *
 * <p>Large communicators (from {@code compactFrom} ranks) are kept in the compact per-peer form of
 * {@link CompactPeers}: the peers each rank lists are chosen once over the whole template, so every
 * replayed record lists the same peers and their deltas are exact. A vector then holds the
 * counters, the phases, the latency histogram, the listed peers' wait, arrived-last, lateness and
 * lateness histogram, and the others' sums: a few hundred longs per rank and interval, whatever the
 * world size, and O(vector) work per generated record.
 */
final class SnapshotTemplate {

  final int worldSize;
  final int intervals;
  final long intervalNanos;
  final boolean lateness;
  private final int buckets;
  private final int[][] listed; // per rank; null: dense
  private final long[][][] vectors; // [rank][k - 1]: cumulative at the end of interval k
  private final boolean[] alive; // reported every interval of the template

  private SnapshotTemplate(
      int worldSize,
      int intervals,
      long intervalNanos,
      boolean lateness,
      int buckets,
      int[][] listed,
      long[][][] vectors,
      boolean[] alive) {
    this.worldSize = worldSize;
    this.intervals = intervals;
    this.intervalNanos = intervalNanos;
    this.lateness = lateness;
    this.buckets = buckets;
    this.listed = listed;
    this.vectors = vectors;
    this.alive = alive;
  }

  /**
   * Simulates {@code intervals} report intervals of a {@code worldSize}-rank communicator with
   * {@code faults}, twice: once to choose each rank's listed peers over the whole template (compact
   * worlds only), once to keep its vectors.
   */
  static SnapshotTemplate simulate(
      int worldSize,
      int intervals,
      long intervalNanos,
      FaultModel faults,
      int compactFrom,
      int maxPeers,
      long seed) {
    SimSpec spec =
        SimSpec.of(worldSize)
            .withDurationNanos(intervals * intervalNanos + intervalNanos / 2)
            .withSnapshots(intervalNanos, intervalNanos / 10)
            .withSeed(seed);
    SimIdentity id = SimIdentity.of("template", "template", "template", Instant.EPOCH);
    boolean compact = worldSize >= compactFrom;
    int[][] listed = new int[worldSize][];
    if (compact) {
      RankTotals[] last = new RankTotals[worldSize];
      OneShotSimulator.run(
          spec, faults, id, SnapshotSink.to(s -> last[s.getRank()] = RankTotals.of(s)));
      for (int r = 0; r < worldSize; r++) {
        listed[r] =
            last[r] == null
                ? new int[] {r}
                : new CompactPeers.Selector(maxPeers).select(last[r], r);
      }
    }
    long[][][] vectors = new long[worldSize][intervals][];
    int[] count = new int[worldSize];
    boolean[] lateness = {true};
    int[] buckets = {0};
    OneShotSimulator.run(
        spec,
        faults,
        id,
        SnapshotSink.to(
            s -> {
              int r = s.getRank();
              if (count[r] >= intervals) return;
              RankTotals t = RankTotals.of(s);
              lateness[0] &= t.hasLateness();
              buckets[0] = t.histogramBuckets();
              vectors[r][count[r]++] = flatten(t, compact ? listed[r] : null);
            }));
    boolean[] alive = new boolean[worldSize];
    for (int r = 0; r < worldSize; r++) alive[r] = count[r] == intervals;
    return new SnapshotTemplate(
        worldSize,
        intervals,
        intervalNanos,
        lateness[0],
        buckets[0],
        compact ? listed : null,
        vectors,
        alive);
  }

  boolean alive(int rank) {
    return alive[rank];
  }

  boolean compact() {
    return listed != null;
  }

  /**
   * Rank {@code rank}'s counters after {@code x} intervals from the start of the cycle, minus those
   * after {@code from}: what an emitter that started at interval {@code from} has counted.
   */
  long[] cumulative(int rank, long from, long x) {
    long[] a = at(rank, x);
    long[] b = at(rank, from);
    for (int i = 0; i < a.length; i++) a[i] -= b[i];
    return a;
  }

  private long[] at(int rank, long x) {
    long[][] v = vectors[rank];
    long[] cycle = v[intervals - 1];
    long[] out = new long[cycle.length];
    long q = x / intervals;
    int k = (int) (x % intervals);
    for (int i = 0; i < out.length; i++) {
      out[i] = q * cycle[i] + (k == 0 ? 0 : v[k - 1][i]);
    }
    return out;
  }

  // ---- the flat vector -------------------------------------------------------------------------

  private static long[] flatten(RankTotals t, int[] listed) {
    int n = t.worldSize();
    int[] peers = listed != null ? listed : identity(n);
    boolean late = t.hasLateness();
    List<Long> out = new ArrayList<>();
    for (Counter c : Counter.values()) out.add(t.get(c));
    for (Phase p : Phase.values()) out.add(t.cycles(p));
    for (long h : t.histogram()) out.add(h);
    for (int p : peers) out.add(t.peerWaitCycles()[p]);
    for (int p : peers) out.add(t.peerArrivedLast()[p]);
    if (late) {
      for (int p : peers) out.add(t.peerLateCycles()[p]);
      for (int p : peers) {
        for (int b = 0; b < RankTotals.LATE_BUCKETS; b++) {
          out.add(t.peerLateHistogram()[p * RankTotals.LATE_BUCKETS + b]);
        }
      }
    }
    if (listed != null) {
      CounterSnapshot s = CompactPeers.writeCompact(new CounterSnapshot(), t, listed);
      out.add(s.getOthersWaitCycles());
      out.add(s.getOthersArrivedLast());
      if (late) {
        out.add(s.getOthersLateCycles());
        out.addAll(s.getOthersLateHistogram());
      }
    }
    long[] a = new long[out.size()];
    for (int i = 0; i < a.length; i++) a[i] = out.get(i);
    return a;
  }

  /** Writes a vector of rank {@code rank} into the counter fields of {@code s}. */
  CounterSnapshot writeCounters(CounterSnapshot s, int rank, long[] v) {
    int[] peers = listed != null ? listed[rank] : identity(worldSize);
    int k = peers.length;
    int i = 0;
    for (Counter c : Counter.values()) s.put(c.fieldName(), v[i++]);
    for (Phase p : Phase.values()) s.put(p.cyclesField(), v[i++]);
    s.setLatencyHistogram(slice(v, i, buckets));
    i += buckets;
    s.setPeerWaitCycles(slice(v, i, k));
    i += k;
    s.setPeerArrivedLast(slice(v, i, k));
    i += k;
    if (lateness) {
      s.setPeerLateCycles(slice(v, i, k));
      i += k;
      s.setPeerLateHistogram(slice(v, i, k * RankTotals.LATE_BUCKETS));
      i += k * RankTotals.LATE_BUCKETS;
    } else {
      s.setPeerLateCycles(List.of());
      s.setPeerLateHistogram(List.of());
    }
    if (listed != null) {
      List<Integer> index = new ArrayList<>(k);
      for (int p : peers) index.add(p);
      s.setPeerIndex(index);
      s.setOthersWaitCycles(v[i++]);
      s.setOthersArrivedLast(v[i++]);
      if (lateness) {
        s.setOthersLateCycles(v[i++]);
        s.setOthersLateHistogram(slice(v, i, RankTotals.LATE_BUCKETS));
      } else {
        s.setOthersLateHistogram(List.of());
      }
    } else {
      s.setPeerIndex(List.of());
      s.setOthersLateHistogram(List.of());
    }
    return s;
  }

  private static List<Long> slice(long[] v, int from, int len) {
    List<Long> l = new ArrayList<>(len);
    for (int i = from; i < from + len; i++) l.add(v[i]);
    return l;
  }

  private static int[] identity(int n) {
    int[] a = new int[n];
    for (int i = 0; i < n; i++) a[i] = i;
    return a;
  }
}
