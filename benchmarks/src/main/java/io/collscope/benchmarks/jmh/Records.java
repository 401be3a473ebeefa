package io.collscope.benchmarks.jmh;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.model.CompactPeers;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Synthetic inputs of the microbenchmarks: one rank's cumulative counters in a world of W ranks
 * (every peer about 10 µs late per call with jitter, rank W/2 300 µs), as records in the form an
 * emitter sends at that size (compact from {@link CompactPeers#DEFAULT_COMPACT_FROM}), and one
 * window's rank windows of every rank.
 */
final class Records {

  private Records() {}

  static RankTotals totals(int world, int rank, long calls, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed);
    RankTotals t = new RankTotals(world, 40);
    t.set(Counter.CALLS, calls);
    t.set(Counter.BYTES, calls << 20);
    t.set(Counter.CLOCK_NS, calls * 40_000);
    t.set(Counter.CLOCK_CYCLES, calls * 40_000);
    for (Phase p : Phase.values()) t.setCycles(p, calls * (2_000 + rnd.nextInt(1_000)));
    int slow = world / 2;
    for (int p = 0; p < world; p++) {
      if (p == rank) continue;
      long late = p == slow ? 300_000 : 10_000 + rnd.nextInt(5_000);
      // A few distinct collectives' worth of histogram, the sums for all of them.
      for (int c = 0; c < 4; c++) t.recordLateness(p, late);
      t.peerLateCycles()[p] = late * calls;
      t.peerLateHistogram()[p * RankTotals.LATE_BUCKETS + RankTotals.lateBucketOf(late)] = calls;
      t.peerWaitCycles()[p] = p == slow ? 300_000 * calls : 0;
      t.peerArrivedLast()[p] = p == slow ? calls : 0;
    }
    for (long c = 0; c < Math.min(calls, 64); c++) t.recordLatency(40_000 + c);
    return t;
  }

  /** Rank 0's record after {@code calls} collectives, in the form of its world's emitters. */
  static CounterSnapshot snapshot(int world, long seq, long calls) {
    RankTotals t = totals(world, 0, calls, 1);
    CounterSnapshot s = t.writeTo(new CounterSnapshot());
    s.setCluster("bench");
    s.setJob("bench");
    s.setCommunicator("w" + world);
    s.setCollective("allreduce_oneshot_f32");
    s.setBackend("sim");
    s.setWorldSize(world);
    s.setRank(0);
    s.setHost("node-0");
    s.setDevice("sim");
    s.setBootId("boot-0");
    s.setSeq(seq);
    s.setEventTime(Instant.parse("2026-01-01T00:00:00Z").plusSeconds(seq));
    s.setCyclesPerSecond(1_000_000_000L);
    s.setReadRetries(0L);
    if (world >= CompactPeers.DEFAULT_COMPACT_FROM) {
      CompactPeers.writeCompact(
          s, t, new CompactPeers.Selector(CompactPeers.DEFAULT_MAX_PEERS).select(t, 0));
    }
    return s;
  }

  /**
   * Makes a dense rank window compact as the job's windows of compact records are: the rank itself,
   * the slow rank and 14 other peers listed, every other peer at the others' mean.
   */
  private static void compact(RankWindow w, int slow, SplittableRandom rnd) {
    int world = w.getWorldSize();
    java.util.TreeSet<Integer> listed = new java.util.TreeSet<>(List.of(w.getRank(), slow));
    while (listed.size() < CompactPeers.DEFAULT_MAX_PEERS) listed.add(rnd.nextInt(world));
    List<Double> wait = new ArrayList<>(), late = new ArrayList<>(), p99 = new ArrayList<>();
    List<Long> last = new ArrayList<>();
    double ow = 0, ol = 0, op = 0, olast = 0;
    for (int p = 0; p < world; p++) {
      if (listed.contains(p)) {
        wait.add(w.getPeerWaitMeanUs().get(p));
        late.add(w.getPeerLateMeanUs().get(p));
        p99.add(w.getPeerLateP99Us().get(p));
        last.add(w.getPeerArrivedLast().get(p));
      } else {
        ow += w.getPeerWaitMeanUs().get(p);
        ol += w.getPeerLateMeanUs().get(p);
        op += w.getPeerLateP99Us().get(p);
        olast += w.getPeerArrivedLast().get(p);
      }
    }
    int others = world - listed.size();
    w.setPeerIndex(new ArrayList<>(listed));
    w.setPeerWaitMeanUs(wait);
    w.setPeerLateMeanUs(late);
    w.setPeerLateP99Us(p99);
    w.setPeerArrivedLast(last);
    w.setOthersWaitMeanUs(ow / others);
    w.setOthersLateMeanUs(ol / others);
    w.setOthersLateP99Us(op / others);
    w.setOthersArrivedLast(Math.round(olast / others));
  }

  /**
   * One window's rank windows of every rank of a world of {@code world}: rank W/2 is slow. Compact
   * from {@link CompactPeers#DEFAULT_COMPACT_FROM} ranks, as the job's windows of compact records.
   */
  static List<RankWindow> window(int world) {
    SplittableRandom rnd = new SplittableRandom(world);
    List<RankWindow> out = new ArrayList<>(world);
    int slow = world / 2;
    for (int r = 0; r < world; r++) {
      List<Double> wait = new ArrayList<>(world);
      List<Double> late = new ArrayList<>(world);
      List<Double> p99 = new ArrayList<>(world);
      List<Long> last = new ArrayList<>(world);
      for (int p = 0; p < world; p++) {
        double l = p == r ? 0 : p == slow ? 300 : 10 + 5 * rnd.nextDouble();
        late.add(l);
        p99.add(p == r ? 0 : l + 16);
        wait.add(p == slow && r != slow ? 300.0 : 0.0);
        last.add(p == slow && r != slow ? 1000L : 0L);
      }
      RankWindow w = new RankWindow();
      w.setTimedKeys(List.of());
      w.setTimedKernelNs(List.of());
      w.setNetPeers(List.of());
      w.setNetSendWaitMeanUs(List.of());
      w.setNetSendSteps(List.of());
      w.setNetRecvWaitMeanUs(List.of());
      w.setNetRecvSteps(List.of());
      w.setCluster("bench");
      w.setJob("bench");
      w.setCollective("allreduce_oneshot_f32");
      w.setCommunicator("w" + world);
      w.setRank(r);
      w.setWorldSize(world);
      w.setHost("node-" + r / 8);
      w.setWindowStart(Instant.parse("2026-01-01T00:00:00Z"));
      w.setWindowEnd(Instant.parse("2026-01-01T00:00:10Z"));
      w.setCalls(1000L);
      w.setBytes(1000L << 20);
      w.setTimeouts(0L);
      w.setGuardMeanUs(0.5);
      w.setCopyMeanUs(2.0);
      w.setPublishMeanUs(1.0);
      w.setWaitMeanUs(r == slow ? 10.0 : 300.0);
      w.setReduceMeanUs(3.0);
      w.setP50Us(512.0);
      w.setP99Us(1024.0);
      w.setClockHz(1e9);
      w.setPeerWaitMeanUs(wait);
      w.setPeerLateMeanUs(late);
      w.setPeerLateP99Us(p99);
      w.setPeerArrivedLast(last);
      w.setPeerIndex(new ArrayList<>());
      if (world >= CompactPeers.DEFAULT_COMPACT_FROM) compact(w, slow, rnd);
      out.add(w);
    }
    return out;
  }
}
