package io.collscope.flink.attribution;

import io.collscope.avro.RankWindow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * One communicator of NCCL ranks on several nodes, window by window, as the profiler plugin and the
 * job would report it: per timed collective each rank arrives (host jitter plus any planted delay),
 * the collective ends together on every rank once the last one is there, and each rank's kernel
 * lasts from its own arrival to that end. The plugin joins a rank's kernel lengths with those of
 * the ranks on its own node only ({@code /dev/shm}): those cells, the rank's wait (until the last
 * local arrival) and arrived-last counts are filled as it fills them, every cell towards another
 * node is 0, and the window carries its timed collectives' keys and kernel lengths (RankWindow
 * version 9) for the job's cross-node join. 1 collective in 64 timed, as the plugin's default.
 *
 * <p>Network waits (RankWindow version 10): each timed collective's channel 0 sends to the ring
 * successor, channel 1 to the predecessor, 4 steps each; a step that crosses nodes waits {@link
 * #NET_BASE_US} (plus noise) on the network, a planted slow link more, on the sender's send steps
 * and the receiver's receive steps.
 */
final class NcclNodeWindows {

  static final int SAMPLING = 64;

  private final int nodes;
  private final int perNode;
  private final int n;
  private final double[] delayUs;
  private final Random rnd;
  private int timedPerWindow = 150;
  private double jitterUs = 20;
  private int window;

  /** A clean inter-node step's network wait (µs): a 128 KiB chunk at about 16 GB/s. */
  static final double NET_BASE_US = 8;

  static final int STEPS = 4;
  private final double[][] linkUs;
  private final double[][] sendOnlyUs;

  NcclNodeWindows(int nodes, int perNode, long seed) {
    this.nodes = nodes;
    this.perNode = perNode;
    this.n = nodes * perNode;
    this.delayUs = new double[n];
    this.linkUs = new double[n][n];
    this.sendOnlyUs = new double[n][n];
    this.rnd = new Random(seed);
  }

  /** Rank r arrives {@code us} late at every collective. */
  NcclNodeWindows slowRank(int r, double us) {
    delayUs[r] += us;
    return this;
  }

  /** Every rank of node {@code node} arrives {@code us} late at every collective. */
  NcclNodeWindows slowNode(int node, double us) {
    for (int r = node * perNode; r < (node + 1) * perNode; r++) delayUs[r] += us;
    return this;
  }

  /** Every network step from rank {@code from} to rank {@code to} takes {@code us} longer. */
  NcclNodeWindows slowLink(int from, int to, double us) {
    linkUs[from][to] += us;
    return this;
  }

  /**
   * Rank {@code from}'s send steps to {@code to} take {@code us} longer on its own clock only (its
   * proxy thread descheduled while they were in flight): the receiver's steps are not delayed.
   */
  NcclNodeWindows sendSideOnly(int from, int to, double us) {
    sendOnlyUs[from][to] += us;
    return this;
  }

  NcclNodeWindows jitterUs(double us) {
    this.jitterUs = us;
    return this;
  }

  static String host(int node) {
    return "node-" + node;
  }

  int nodeOf(int r) {
    return r / perNode;
  }

  /** The next window's rank windows. */
  List<RankWindow> next() {
    int k = timedPerWindow;
    double[][] kernel = new double[k][n];
    long[] keys = new long[k];
    for (int c = 0; c < k; c++) {
      long seq = ((long) window * k + c) * SAMPLING;
      keys[c] = (seq << 3 | 0) + 1; // AllReduce
      double[] arrival = new double[n];
      double last = 0;
      for (int r = 0; r < n; r++) {
        arrival[r] = delayUs[r] + Math.abs(rnd.nextGaussian()) * jitterUs;
        last = Math.max(last, arrival[r]);
      }
      double end = last + 100 + rnd.nextGaussian();
      for (int r = 0; r < n; r++) kernel[c][r] = end - arrival[r] + 0.2 * rnd.nextGaussian();
    }
    List<RankWindow> out = new ArrayList<>(n);
    for (int r = 0; r < n; r++) out.add(rankWindow(r, kernel, keys));
    window++;
    return out;
  }

  /** The windows as jobs before the cross-node join saw them: no timed collectives. */
  static List<RankWindow> withoutTimed(List<RankWindow> windows) {
    List<RankWindow> out = new ArrayList<>(windows.size());
    for (RankWindow w : windows) {
      RankWindow c = RankWindow.newBuilder(w).build();
      c.setTimedKeys(List.of());
      c.setTimedKernelNs(List.of());
      out.add(c);
    }
    return out;
  }

  /** The windows as records before network waits (CounterSnapshot 9) carried them. */
  static List<RankWindow> withoutNetwork(List<RankWindow> windows) {
    List<RankWindow> out = new ArrayList<>(windows.size());
    for (RankWindow w : windows) {
      RankWindow c = RankWindow.newBuilder(w).build();
      c.setNetPeers(List.of());
      c.setNetSendWaitMeanUs(List.of());
      c.setNetSendSteps(List.of());
      c.setNetRecvWaitMeanUs(List.of());
      c.setNetRecvSteps(List.of());
      out.add(c);
    }
    return out;
  }

  /** The same windows with every rank on a host of its own: each cell from the job's join. */
  static List<RankWindow> oneHostEach(List<RankWindow> windows) {
    List<RankWindow> out = new ArrayList<>(windows.size());
    for (RankWindow w : windows) {
      RankWindow c = RankWindow.newBuilder(w).build();
      c.setHost("solo-" + w.getRank());
      out.add(c);
    }
    return out;
  }

  private RankWindow rankWindow(int r, double[][] kernel, long[] keys) {
    int k = kernel.length;
    int node = nodeOf(r);
    List<Double> mean = zeros(n);
    List<Double> se = zeros(n);
    List<Double> p99 = zeros(n);
    List<Double> tail = zeros(n);
    List<Double> peerWait = zeros(n);
    Long[] last = new Long[n];
    Arrays.fill(last, 0L);
    double waitSum = 0;
    double kernelSum = 0;
    double[][] late = new double[n][k];
    for (int c = 0; c < k; c++) {
      int latest = r;
      for (int p = node * perNode; p < (node + 1) * perNode; p++) {
        if (kernel[c][p] < kernel[c][latest]) latest = p;
        late[p][c] = Math.max(0, kernel[c][r] - kernel[c][p]);
      }
      last[latest] += SAMPLING;
      waitSum += kernel[c][r] - kernel[c][latest];
      peerWait.set(latest, peerWait.get(latest) + (kernel[c][r] - kernel[c][latest]) / k);
      kernelSum += kernel[c][r];
    }
    List<Double> p99s = new ArrayList<>();
    for (int p = node * perNode; p < (node + 1) * perNode; p++) {
      if (p == r) continue;
      double[] v = late[p];
      double mu = Arrays.stream(v).average().orElse(0);
      double var = Arrays.stream(v).map(x -> (x - mu) * (x - mu)).sum() / (k - 1);
      mean.set(p, mu);
      se.set(p, Math.sqrt(var / k));
      double[] s = v.clone();
      Arrays.sort(s);
      p99.set(p, s[(int) Math.ceil(0.99 * k) - 1]);
      p99s.add(p99.get(p));
    }
    double edge = 0;
    if (!p99s.isEmpty()) {
      edge =
          CrossNodeLateness.bucketLowerUs(
              CrossNodeLateness.bucketOf(RobustStatistics.median(p99s)) + 1);
      for (int p = node * perNode; p < (node + 1) * perNode; p++) {
        if (p == r) continue;
        int beyond = 0;
        for (double x : late[p]) if (x >= edge) beyond++;
        tail.set(p, (double) beyond / k);
      }
    }
    List<Long> timedKeys = new ArrayList<>(k);
    List<Long> timedNs = new ArrayList<>(k);
    for (int c = 0; c < k; c++) {
      timedKeys.add(keys[c]);
      timedNs.add(Math.round(kernel[c][r] * 1e3));
    }
    double wait = waitSum / k;
    RankWindow w = new RankWindow();
    w.setCluster(Windows.KEY.cluster());
    w.setJob(Windows.KEY.job());
    w.setCommunicator(Windows.KEY.communicator());
    w.setCollective("nccl");
    w.setRank(r);
    w.setWorldSize(n);
    w.setHost(host(node));
    long start = Windows.START + window * 10_000L;
    w.setWindowStart(Instant.ofEpochMilli(start));
    w.setWindowEnd(Instant.ofEpochMilli(start + 10_000L));
    w.setCalls((long) k * SAMPLING);
    w.setSampledCalls((long) k);
    w.setSampleEvery(SAMPLING);
    w.setBytes(4096L * k * SAMPLING);
    w.setWaitMeanUs(wait);
    w.setReduceMeanUs(kernelSum / k - wait);
    w.setP50Us(kernelSum / k);
    w.setP99Us(2 * kernelSum / k);
    w.setClockHz(1e9);
    w.setPeerWaitMeanUs(peerWait);
    w.setPeerArrivedLast(Arrays.asList(last));
    w.setPeerLateMeanUs(mean);
    w.setPeerLateP99Us(p99);
    w.setPeerLateSeUs(se);
    w.setPeerLateTailShare(tail);
    w.setLateTailEdgeUs(edge);
    w.setTimedKeys(timedKeys);
    w.setTimedKernelNs(timedNs);
    network(w, r, k);
    return w;
  }

  /**
   * Rank r's network peers (ring neighbours on other nodes) and its mean waits to and from them.
   */
  private void network(RankWindow w, int r, int k) {
    java.util.TreeMap<Integer, double[]> peers = new java.util.TreeMap<>(); // sendUs, recvUs
    for (int peer : new int[] {(r + 1) % n, (r + n - 1) % n}) {
      if (nodeOf(peer) == nodeOf(r)) continue;
      double[] m = peers.computeIfAbsent(peer, p -> new double[3]);
      m[0] += mean(r, peer, k) + sendOnlyUs[r][peer];
      m[1] += mean(peer, r, k);
      m[2]++;
    }
    List<Integer> ids = new ArrayList<>();
    List<Double> send = new ArrayList<>();
    List<Double> recv = new ArrayList<>();
    List<Long> steps = new ArrayList<>();
    for (var e : peers.entrySet()) {
      ids.add(e.getKey());
      send.add(e.getValue()[0] / e.getValue()[2]);
      recv.add(e.getValue()[1] / e.getValue()[2]);
      steps.add((long) (k * STEPS * e.getValue()[2]));
    }
    w.setNetPeers(ids);
    w.setNetSendWaitMeanUs(send);
    w.setNetSendSteps(steps);
    w.setNetRecvWaitMeanUs(recv);
    w.setNetRecvSteps(steps);
  }

  /** The window's mean wait of k × STEPS steps from `from` to `to`: per-step noise of 2 µs. */
  private double mean(int from, int to, int k) {
    double sum = 0;
    for (int i = 0; i < k * STEPS; i++) {
      sum += NET_BASE_US + linkUs[from][to] + Math.abs(rnd.nextGaussian()) * 2;
    }
    return sum / (k * STEPS);
  }

  private static List<Double> zeros(int n) {
    List<Double> v = new ArrayList<>(n);
    for (int i = 0; i < n; i++) v.add(0.0);
    return v;
  }
}
