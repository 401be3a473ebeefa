package io.collscope.flink.window;

import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A rank window's network waits per peer (NCCL: the plugin's proxy steps, CounterSnapshot version
 * 9): for each network peer, the send steps' and receive steps' summed waits and counts of the
 * window's deltas, kept sparse (a rank has a handful of network peers, whatever the communicator's
 * size), and written into the window as means per step (RankWindow version 10).
 *
 * <p>The arrays are by position in the ascending {@code netPeers}; an accumulator restored from a
 * job before them has them null, read as empty.
 */
public final class NetworkWaits {

  private NetworkWaits() {}

  /** Adds one delta's (or another accumulator's) waits into a's, peer by peer. */
  static void add(
      RankWindowAccumulator a,
      int[] peers,
      long[] sendNs,
      long[] sendSteps,
      long[] recvNs,
      long[] recvSteps) {
    if (peers == null || peers.length == 0) return;
    int[] have = a.netPeers == null ? new int[0] : a.netPeers;
    int[] union = union(have, peers);
    if (union.length != have.length || a.netSendNs == null) {
      a.netSendNs = spread(have, a.netSendNs, union);
      a.netSendSteps = spread(have, a.netSendSteps, union);
      a.netRecvNs = spread(have, a.netRecvNs, union);
      a.netRecvSteps = spread(have, a.netRecvSteps, union);
      a.netPeers = union;
    }
    for (int i = 0; i < peers.length; i++) {
      int at = Arrays.binarySearch(a.netPeers, peers[i]);
      a.netSendNs[at] += sendNs[i];
      a.netSendSteps[at] += sendSteps[i];
      a.netRecvNs[at] += recvNs[i];
      a.netRecvSteps[at] += recvSteps[i];
    }
  }

  /** Adds b's waits into a's (merging two accumulators of one rank). */
  static void merge(RankWindowAccumulator a, RankWindowAccumulator b) {
    add(a, b.netPeers, b.netSendNs, b.netSendSteps, b.netRecvNs, b.netRecvSteps);
  }

  /** Empties a's waits (a rank that changed shape within the window). */
  static void clear(RankWindowAccumulator a) {
    a.netPeers = new int[0];
    a.netSendNs = a.netSendSteps = a.netRecvNs = a.netRecvSteps = new long[0];
  }

  /** The window's per-peer means (µs per step) and step counts. */
  static void writeTo(RankWindow w, RankWindowAccumulator a) {
    int n = a.netPeers == null ? 0 : a.netPeers.length;
    List<Integer> peers = new ArrayList<>(n);
    List<Double> sendUs = new ArrayList<>(n);
    List<Long> sendSteps = new ArrayList<>(n);
    List<Double> recvUs = new ArrayList<>(n);
    List<Long> recvSteps = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      peers.add(a.netPeers[i]);
      sendUs.add(meanUs(a.netSendNs[i], a.netSendSteps[i]));
      sendSteps.add(a.netSendSteps[i]);
      recvUs.add(meanUs(a.netRecvNs[i], a.netRecvSteps[i]));
      recvSteps.add(a.netRecvSteps[i]);
    }
    w.setNetPeers(peers);
    w.setNetSendWaitMeanUs(sendUs);
    w.setNetSendSteps(sendSteps);
    w.setNetRecvWaitMeanUs(recvUs);
    w.setNetRecvSteps(recvSteps);
  }

  private static double meanUs(long ns, long steps) {
    return steps > 0 ? ns / 1e3 / steps : 0.0;
  }

  private static int[] union(int[] a, int[] b) {
    int[] all = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return Arrays.stream(all).sorted().distinct().toArray();
  }

  private static long[] spread(int[] from, long[] values, int[] to) {
    long[] out = new long[to.length];
    for (int i = 0; i < from.length && values != null && i < values.length; i++) {
      out[Arrays.binarySearch(to, from[i])] = values[i];
    }
    return out;
  }
}
