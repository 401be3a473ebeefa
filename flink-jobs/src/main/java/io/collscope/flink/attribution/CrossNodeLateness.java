package io.collscope.flink.attribution;

import io.collscope.avro.RankWindow;
import io.collscope.model.CompactPeers;
import io.collscope.model.RankTotals;
import io.collscope.model.SampledCalls;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Lateness between ranks on different hosts, from the kernel lengths each rank measured on its own
 * GPU's clock (RankWindow.timed_keys / timed_kernel_ns): the join that node-local shared memory
 * cannot do.
 *
 * <p>Every rank of a communicator times the same collectives (the plugin picks them by a hash of
 * the collective's sequence number, which NCCL keeps equal on every rank). In a collective whose
 * ranks end together (AllReduce, AllGather, ReduceScatter, AlltoAll), a rank that arrived early
 * waits inside its kernel for the last one, so for one collective {@code late(r sees p) = max(0,
 * kernel_r − kernel_p)}: the rank that arrived last has the shortest kernel. Each length is a
 * difference of one GPU's own timer: no two clocks are compared, and no host clock either. This is
 * exactly the node-local join the plugin does through {@code /dev/shm} (the plugin's README), done
 * in the job for every pair of ranks instead.
 *
 * <p>Cells between ranks of one host keep the plugin's shared-memory figures (the same estimator
 * over the same sampled collectives, with the plugin's histograms behind them); cells between
 * hosts, where the plugin saw nothing, get the join's mean, its standard error (the per-collective
 * spread over the square root of the collectives joined), its 99th percentile, its share beyond the
 * row's tail edge and the share of collectives the peer arrived last in. A row with peers on other
 * hosts also gets its wait from the join (its kernel beyond the shortest kernel of the collective,
 * over the collectives every present rank timed), since the plugin could only see the node's ranks
 * and booked the rest of the wait as the collective's own work.
 *
 * <p>Communicators of more than {@link #MAX_RANKS} ranks are left as they are (the pairwise join is
 * quadratic in the ranks): their cross-host cells stay 0, as before the join. Rooted collectives
 * (Broadcast, Reduce) do not end together and are not joined.
 */
public final class CrossNodeLateness {

  /** Largest communicator joined pairwise. */
  public static final int MAX_RANKS = 256;

  /** Collective types (the key's low 3 bits) whose ranks end together: their lengths compare. */
  private static final int END_TOGETHER = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 5;

  private CrossNodeLateness() {}

  /** Whether the key's collective type ends together on every rank. */
  static boolean endsTogether(long key) {
    return (END_TOGETHER >> (int) ((key - 1) & 7) & 1) != 0;
  }

  /**
   * The windows with their cross-host cells filled from the join; the same list when the
   * communicator's windows carry no timed collectives or name one host only.
   */
  public static List<RankWindow> join(List<RankWindow> windows) {
    int n = 0;
    for (RankWindow w : windows) n = Math.max(n, w.getWorldSize());
    if (n > MAX_RANKS || n < 2) return windows;
    // The rows that can be joined: a host, timed collectives, lateness per peer.
    List<RankWindow> timed = new ArrayList<>();
    String firstHost = null;
    boolean severalHosts = false;
    for (RankWindow w : windows) {
      if (w.getRank() < 0 || w.getRank() >= n) continue;
      if (w.getTimedKeys() == null || w.getTimedKeys().isEmpty()) continue;
      if (w.getPeerLateMeanUs() == null || w.getPeerLateMeanUs().isEmpty()) continue;
      timed.add(w);
      String h = Objects.toString(w.getHost(), "");
      if (firstHost == null) firstHost = h;
      else if (!firstHost.equals(h)) severalHosts = true;
    }
    if (!severalHosts) return windows;

    // Kernel lengths by (collective, row): NaN where the row did not time it in this window.
    int m = timed.size();
    Map<Long, double[]> byKey = new HashMap<>();
    for (int i = 0; i < m; i++) {
      RankWindow w = timed.get(i);
      List<Long> keys = w.getTimedKeys();
      List<Long> ns = w.getTimedKernelNs();
      for (int e = 0; e < keys.size() && e < ns.size(); e++) {
        long key = keys.get(e);
        if (!endsTogether(key)) continue;
        double[] d = byKey.computeIfAbsent(key, x -> nans(m));
        d[i] = ns.get(e) / 1e3; // µs
      }
    }
    List<double[]> collectives = new ArrayList<>(byKey.size());
    for (double[] d : byKey.values()) {
      int have = 0;
      for (double v : d) if (!Double.isNaN(v)) have++;
      if (have >= 2) collectives.add(d);
    }
    if (collectives.isEmpty()) return windows;

    Map<RankWindow, RankWindow> joined = new HashMap<>();
    for (int i = 0; i < m; i++) {
      RankWindow row = timed.get(i);
      boolean crossPeers = false;
      for (int j = 0; j < m; j++) crossPeers |= j != i && !sameHost(row, timed.get(j));
      if (crossPeers) joined.put(row, fillRow(CompactPeers.expand(row), i, timed, collectives));
    }
    List<RankWindow> out = new ArrayList<>(windows.size());
    for (RankWindow w : windows) out.add(joined.getOrDefault(w, w));
    return out;
  }

  /** Row i's cells towards ranks on other hosts, and its wait, from the joined collectives. */
  private static RankWindow fillRow(
      RankWindow dense, int i, List<RankWindow> timed, List<double[]> collectives) {
    RankWindow w = RankWindow.newBuilder(dense).build();
    int n = w.getWorldSize();
    List<Double> mean = new ArrayList<>(w.getPeerLateMeanUs());
    List<Double> p99 = new ArrayList<>(w.getPeerLateP99Us());
    List<Double> se = sized(w.getPeerLateSeUs(), n);
    List<Double> tail = sized(w.getPeerLateTailShare(), n);
    List<Long> last = new ArrayList<>(w.getPeerArrivedLast());
    double accounted = Math.max(1, SampledCalls.accounted(w));
    int m = timed.size();
    double[][] lateOf = new double[m][];
    int[] count = new int[m];
    int[] lastCount = new int[m];
    for (int j = 0; j < m; j++) {
      if (j != i && !sameHost(w, timed.get(j))) lateOf[j] = new double[collectives.size()];
    }
    double waitSum = 0;
    int waitN = 0;
    for (double[] d : collectives) {
      if (Double.isNaN(d[i])) continue;
      int shortest = -1;
      boolean complete = true;
      for (int j = 0; j < m; j++) {
        if (Double.isNaN(d[j])) {
          complete = false;
          continue;
        }
        if (shortest < 0 || d[j] < d[shortest]) shortest = j;
        if (lateOf[j] != null) lateOf[j][count[j]++] = Math.max(0, d[i] - d[j]);
      }
      if (shortest >= 0 && lateOf[shortest] != null) lastCount[shortest]++;
      if (complete) {
        waitSum += d[i] - d[shortest];
        waitN++;
      }
    }
    // The tail edge: the row's own (from its node-local peers) or, with none, one log2 bucket above
    // the median cross-host peer's 99th percentile, as the window function sets it.
    double[] p99Of = new double[m];
    List<Double> p99s = new ArrayList<>();
    for (int j = 0; j < m; j++) {
      if (lateOf[j] == null || count[j] == 0) continue;
      p99Of[j] = quantile(lateOf[j], count[j], 0.99);
      p99s.add(p99Of[j]);
    }
    double edge = w.getLateTailEdgeUs();
    if (edge <= 0) {
      if (!p99s.isEmpty()) {
        edge = bucketLowerUs(bucketOf(RobustStatistics.median(p99s)) + 1);
        w.setLateTailEdgeUs(edge);
      }
    }
    for (int j = 0; j < m; j++) {
      if (lateOf[j] == null || count[j] == 0) continue;
      int p = timed.get(j).getRank();
      double[] v = lateOf[j];
      int c = count[j];
      double sum = 0;
      double sq = 0;
      int beyond = 0;
      for (int k = 0; k < c; k++) {
        sum += v[k];
        sq += v[k] * v[k];
        if (edge > 0 && v[k] >= edge) beyond++;
      }
      double mu = sum / c;
      double var = c > 1 ? Math.max(0, (sq - c * mu * mu) / (c - 1)) : mu * mu;
      mean.set(p, mu);
      se.set(p, Math.sqrt(var / c));
      p99.set(p, p99Of[j]);
      tail.set(p, (double) beyond / c);
      last.set(p, Math.round(accounted * lastCount[j] / c));
    }
    w.setPeerLateMeanUs(mean);
    w.setPeerLateSeUs(se);
    w.setPeerLateP99Us(p99);
    w.setPeerLateTailShare(tail);
    w.setPeerArrivedLast(last);
    if (waitN > 0) {
      // The kernel is wait + the collective's own work: what the join says was waiting moves out
      // of the work the plugin booked it to.
      double kernel = w.getWaitMeanUs() + w.getReduceMeanUs();
      double wait = Math.min(kernel, waitSum / waitN);
      w.setWaitMeanUs(wait);
      w.setReduceMeanUs(kernel - wait);
    }
    return w;
  }

  static boolean sameHost(RankWindow a, RankWindow b) {
    return Objects.toString(a.getHost(), "").equals(Objects.toString(b.getHost(), ""));
  }

  private static double[] nans(int m) {
    double[] d = new double[m];
    Arrays.fill(d, Double.NaN);
    return d;
  }

  private static List<Double> sized(List<Double> v, int n) {
    if (v != null && v.size() == n) return new ArrayList<>(v);
    List<Double> out = new ArrayList<>(n);
    for (int p = 0; p < n; p++) out.add(0.0);
    return out;
  }

  private static double quantile(double[] v, int c, double q) {
    double[] s = Arrays.copyOf(v, c);
    Arrays.sort(s);
    return s[Math.max(0, (int) Math.ceil(q * c) - 1)];
  }

  /** The lateness histogram's bucket of a value in µs at NCCL's clock (ns cycles). */
  static int bucketOf(double us) {
    double cycles = us * 1e3;
    if (cycles < Math.scalb(1.0, 1 + RankTotals.LATE_SHIFT)) return 0;
    int b = Math.getExponent(cycles) - RankTotals.LATE_SHIFT;
    return Math.min(b, RankTotals.LATE_BUCKETS - 1);
  }

  static double bucketLowerUs(int b) {
    int c = Math.min(b, RankTotals.LATE_BUCKETS - 1);
    return c == 0 ? 0 : Math.scalb(1.0, c + RankTotals.LATE_SHIFT) / 1e3;
  }
}
