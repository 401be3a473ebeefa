package io.collscope.flink.attribution;

import io.collscope.avro.RankWindow;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds one window's {@link RankWindow}s from a delay matrix, as the job would produce them:
 * {@code wait[r][p]} is rank r's mean wait per collective on peer p (microseconds), and each rank's
 * total wait is its row sum.
 */
final class Windows {

  static final CommunicatorKey KEY = new CommunicatorKey("cl", "job", "c");
  static final long START = 1_000_000L;
  static final long END = START + 10_000L;

  private final int n;
  private final double[][] wait;
  private final double[] guard;
  private final double[] publish;
  private final double[] copy;
  private final double[] reduce;
  private final long[][] last;
  private final double[] arrival;
  private final long[] timeouts;
  private final List<Integer> absent = new ArrayList<>();

  Windows(int n, double noiseUs) {
    this.n = n;
    wait = new double[n][n];
    guard = new double[n];
    publish = new double[n];
    copy = new double[n];
    reduce = new double[n];
    last = new long[n][n];
    arrival = new double[n];
    timeouts = new long[n];
    java.util.Random rnd = new java.util.Random(n);
    for (int r = 0; r < n; r++) {
      guard[r] = 0.5;
      publish[r] = 0.3;
      copy[r] = 1.0;
      reduce[r] = 2.0;
      for (int p = 0; p < n; p++) {
        if (p != r) wait[r][p] = noiseUs * (0.5 + rnd.nextDouble());
      }
    }
  }

  /**
   * Rank s arrives {@code us} late at every collective. Waits follow the critical-path rule of the
   * counter block: a rank that arrived at a[r] is billed, for each later peer in arrival order, the
   * interval that peer's arrival ended. Several slow ranks compose correctly.
   */
  Windows slowRank(int s, double us) {
    arrival[s] += us;
    return this;
  }

  private void applyArrivals() {
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) order[i] = i;
    java.util.Arrays.sort(order, java.util.Comparator.comparingDouble(i -> arrival[i]));
    for (int r = 0; r < n; r++) {
      double prev = arrival[r];
      int lastPeer = r;
      for (int p : order) {
        if (p == r || arrival[p] <= arrival[r]) continue;
        wait[r][p] += arrival[p] - prev;
        prev = arrival[p];
        lastPeer = p;
      }
      if (arrival[order[n - 1]] > 0) last[r][lastPeer] += 900;
    }
  }

  /**
   * Link p→r slow by d: in alternate collectives r waits d on p, and everyone else waits d on r (r
   * arrives late) — the lockstep propagation a real run shows.
   */
  Windows slowLink(int from, int to, double d) {
    wait[to][from] += d / 2;
    for (int q = 0; q < n; q++) {
      if (q != to) wait[q][to] += d / 2;
    }
    return this;
  }

  Windows guard(int r, double us) {
    guard[r] += us;
    return this;
  }

  Windows publish(int r, double us) {
    publish[r] += us;
    return this;
  }

  Windows copyReduce(int r, double us) {
    copy[r] += us / 2;
    reduce[r] += us / 2;
    return this;
  }

  Windows absent(int r) {
    absent.add(r);
    return this;
  }

  /**
   * Rank s sends no data while every other rank waits {@code us} per collective on it and counts
   * {@code peerTimeouts} timeouts: a dead rank, or with no timeouts one whose reporter is gone.
   */
  Windows silent(int s, double us, long peerTimeouts) {
    absent(s);
    for (int r = 0; r < n; r++) {
      if (r == s) continue;
      wait[r][s] += us;
      timeouts[r] += peerTimeouts;
    }
    return this;
  }

  List<RankWindow> build() {
    applyArrivals();
    List<RankWindow> out = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      if (absent.contains(r)) continue;
      out.add(rank(r));
    }
    return out;
  }

  RankWindow rank(int r) {
    List<Double> pw = new ArrayList<>();
    List<Long> pl = new ArrayList<>();
    double total = 0;
    for (int p = 0; p < n; p++) {
      pw.add(wait[r][p]);
      pl.add(last[r][p]);
      total += wait[r][p];
    }
    RankWindow w = new RankWindow();
    w.setCluster(KEY.cluster());
    w.setJob(KEY.job());
    w.setCommunicator(KEY.communicator());
    w.setRank(r);
    w.setWorldSize(n);
    w.setHost("h" + r);
    w.setWindowStart(Instant.ofEpochMilli(START));
    w.setWindowEnd(Instant.ofEpochMilli(END));
    w.setCalls(1000);
    w.setBytes(4096 * 1000);
    w.setTimeouts(timeouts[r]);
    w.put(Phase.GUARD.meanUsField(), guard[r]);
    w.put(Phase.COPY.meanUsField(), copy[r]);
    w.put(Phase.PUBLISH.meanUsField(), publish[r]);
    w.put(Phase.WAIT.meanUsField(), total);
    w.put(Phase.REDUCE.meanUsField(), reduce[r]);
    w.setP50Us(total + 4);
    w.setP99Us(2 * total + 8);
    w.setClockHz(1e9);
    w.setPeerWaitMeanUs(pw);
    w.setPeerArrivedLast(pl);
    return w;
  }
}
