package io.collscope.flink.attribution;

import io.collscope.avro.RankWindow;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds one window's {@link RankWindow}s from a lateness matrix, as the job would produce them
 * from counters of snapshot version 4: {@code late[r][p]} is the mean lateness per collective of
 * peer p as rank r saw it (microseconds), {@code tail[r][p]} its p99, {@code share[r][p]} the share
 * of collectives in which p was beyond r's tail edge (RankWindow version 8; 1 % for a typical
 * peer), its standard error the noise over the square root of the calls, and each rank's wait is
 * billed whole to the peer it saw latest. {@link #legacy()} drops the lateness and tails, as the
 * windows of older emitters lack them.
 */
final class Windows {

  static final CommunicatorKey KEY = new CommunicatorKey("cl", "job", "c");
  static final long START = 1_000_000L;
  static final long END = START + 10_000L;

  private final int n;
  private final double[][] late;
  private final double[][] tail;
  private final double[][] share;
  private final double noiseUs;
  private final double[] guard;
  private final double[] publish;
  private final double[] copy;
  private final double[] reduce;
  private final double[] arrival;
  private final double[] gatedShare;
  private final long[] timeouts;
  private final List<Integer> absent = new ArrayList<>();
  private long calls = 1000;
  private long startMs = START;
  private boolean legacy;

  /** Every cell's mean is noise × [0.5, 1.5); its p99 lies 2 × noise above it. */
  Windows(int n, double noiseUs) {
    this.n = n;
    late = new double[n][n];
    tail = new double[n][n];
    share = new double[n][n];
    this.noiseUs = noiseUs;
    guard = new double[n];
    publish = new double[n];
    copy = new double[n];
    reduce = new double[n];
    arrival = new double[n];
    gatedShare = new double[n];
    timeouts = new long[n];
    java.util.Random rnd = new java.util.Random(n);
    for (int r = 0; r < n; r++) {
      guard[r] = 0.5;
      publish[r] = 0.3;
      copy[r] = 1.0;
      reduce[r] = 2.0;
      for (int p = 0; p < n; p++) {
        if (p == r) continue;
        late[r][p] = noiseUs * (0.5 + rnd.nextDouble());
        tail[r][p] = late[r][p] + 2 * noiseUs;
        share[r][p] = 0.01;
      }
    }
  }

  /** Rank s arrives {@code us} late at every collective; several slow ranks compose. */
  Windows slowRank(int s, double us) {
    arrival[s] += us;
    return this;
  }

  /**
   * Rank s arrives {@code us} late in a share {@code fraction} of the collectives: its mean
   * lateness grows by the share, its p99 by the whole delay once the share passes 1%, and it gates
   * that share of its peers' collectives.
   */
  Windows intermittent(int s, double us, double fraction) {
    gatedShare[s] += fraction;
    for (int r = 0; r < n; r++) {
      if (r == s) continue;
      late[r][s] += us * fraction;
      if (fraction >= 0.01) tail[r][s] += us;
      if (us > tailEdge()) share[r][s] += fraction;
    }
    return this;
  }

  private void applyArrivals() {
    for (int r = 0; r < n; r++) {
      for (int p = 0; p < n; p++) {
        if (p == r) continue;
        double d = Math.max(0, arrival[p] - arrival[r]);
        late[r][p] += d;
        tail[r][p] += d;
        if (d > tailEdge()) share[r][p] = 1;
      }
    }
  }

  /**
   * Link p→r slow by d: in alternate collectives r sees p d late, and everyone else sees r d late
   * (r arrives late) — the lockstep propagation a real run shows.
   */
  Windows slowLink(int from, int to, double d) {
    late[to][from] += d / 2;
    tail[to][from] += d;
    if (d > tailEdge()) share[to][from] += 0.5;
    for (int q = 0; q < n; q++) {
      if (q == to) continue;
      late[q][to] += d / 2;
      tail[q][to] += d;
      if (d > tailEdge()) share[q][to] += 0.5;
    }
    return this;
  }

  /** Every rank sees every other {@code us} later (a warm-up window, a slow transport). */
  Windows everyoneLate(double us) {
    for (int r = 0; r < n; r++) {
      for (int p = 0; p < n; p++) {
        if (p == r) continue;
        late[r][p] += us;
        tail[r][p] += us;
      }
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

  /** Every rank's copy and reduce slower by {@code us} in total: the collective itself. */
  Windows everyCopyReduce(double us) {
    for (int r = 0; r < n; r++) copyReduce(r, us);
    return this;
  }

  Windows absent(int r) {
    absent.add(r);
    return this;
  }

  Windows calls(long c) {
    calls = c;
    return this;
  }

  /** The window {@code k} windows after the first. */
  Windows window(int k) {
    startMs = START + k * (END - START);
    return this;
  }

  /** Counters of an emitter before snapshot version 4: no lateness, no tails. */
  Windows legacy() {
    legacy = true;
    return this;
  }

  /**
   * Rank s sends no data while every other rank sees it {@code us} late per collective and counts
   * {@code peerTimeouts} timeouts: a dead rank, or with no timeouts one whose reporter is gone.
   */
  Windows silent(int s, double us, long peerTimeouts) {
    absent(s);
    for (int r = 0; r < n; r++) {
      if (r == s) continue;
      late[r][s] += us;
      tail[r][s] += us;
      timeouts[r] += peerTimeouts;
    }
    return this;
  }

  /** The rows' tail edge: a typical cell's p99 (its mean and twice the noise) and a little. */
  private double tailEdge() {
    return 3 * noiseUs;
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
    int gater = r;
    double wait = 0;
    for (int p = 0; p < n; p++) {
      if (p != r && late[r][p] > wait) {
        wait = late[r][p];
        gater = p;
      }
    }
    List<Double> pw = new ArrayList<>();
    List<Long> pl = new ArrayList<>();
    List<Double> lm = new ArrayList<>();
    List<Double> lt = new ArrayList<>();
    List<Double> se = new ArrayList<>();
    List<Double> sh = new ArrayList<>();
    for (int p = 0; p < n; p++) {
      // Legacy counters billed waits per peer: their lateness stands in for it.
      pw.add(legacy ? late[r][p] : p == gater ? wait : 0.0);
      // A rank that arrives late gates 90% of the collectives; without one, noise spreads the
      // last arrival evenly over the peers.
      long gated =
          arrival[gater] > 0
              ? (p == gater ? calls * 9 / 10 : 0L)
              : (p == r ? 0L : calls / Math.max(1, n - 1));
      pl.add(gated + Math.round(gatedShare[p] * calls));
      lm.add(late[r][p]);
      lt.add(tail[r][p]);
      // One collective's lateness spreads about the noise: its mean's error over the calls.
      se.add(p == r ? 0.0 : noiseUs / Math.sqrt(calls));
      sh.add(p == r ? 0.0 : Math.min(1, share[r][p]));
    }
    RankWindow w = new RankWindow();
    w.setTimedKeys(List.of());
    w.setTimedKernelNs(List.of());
    w.setNetPeers(List.of());
    w.setNetSendWaitMeanUs(List.of());
    w.setNetSendSteps(List.of());
    w.setNetRecvWaitMeanUs(List.of());
    w.setNetRecvSteps(List.of());
    w.setCluster(KEY.cluster());
    w.setJob(KEY.job());
    w.setCommunicator(KEY.communicator());
    w.setRank(r);
    w.setWorldSize(n);
    w.setHost("h" + r);
    w.setWindowStart(Instant.ofEpochMilli(startMs));
    w.setWindowEnd(Instant.ofEpochMilli(startMs + END - START));
    w.setCalls(calls);
    w.setBytes(4096 * calls);
    w.setTimeouts(timeouts[r]);
    w.put(Phase.GUARD.meanUsField(), guard[r]);
    w.put(Phase.COPY.meanUsField(), copy[r]);
    w.put(Phase.PUBLISH.meanUsField(), publish[r]);
    w.put(Phase.WAIT.meanUsField(), wait);
    w.put(Phase.REDUCE.meanUsField(), reduce[r]);
    w.setP50Us(wait + 4);
    w.setP99Us(2 * wait + 8);
    w.setClockHz(1e9);
    w.setPeerWaitMeanUs(pw);
    w.setPeerArrivedLast(pl);
    w.setPeerLateMeanUs(legacy ? List.of() : lm);
    w.setPeerLateP99Us(legacy ? List.of() : lt);
    w.setPeerLateSeUs(legacy ? List.of() : se);
    w.setPeerLateTailShare(legacy ? List.of() : sh);
    w.setLateTailEdgeUs(legacy ? 0 : tailEdge());
    return w;
  }
}
