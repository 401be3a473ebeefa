package io.collscope.flink.attribution;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Names the node when it, not one GPU, is slow: every present rank of the communicator on one host
 * named a slow rank, at least two of them, while another host has present ranks none of which is
 * named. Those findings become one SLOW_NODE finding (the node's lowest rank, its host, the
 * smallest of their excesses: the node is late by at least that); every finding gets its culprit's
 * host.
 *
 * <p>Its cause says which part of the node: ARRIVED_LATE when its ranks were late to start (its
 * GPUs, its host's CPU, its input), LINK when its own ranks also saw the ranks of the other nodes
 * late by at least half the node's lateness while their node-mates were on time — every flag
 * crossing the node's boundary, in both directions, took longer: its network (NIC, cable, switch
 * port), not its GPUs. A slow node's ranks see the others' flags early, as a late starter does.
 *
 * <p>A host with one rank of the communicator (data-parallel replicas, pipeline stages) keeps its
 * SLOW_RANK: from this communicator alone a slow node and its one slow GPU look the same, and the
 * finding says which host it is on.
 */
final class SlowNodes {

  private SlowNodes() {}

  static List<Finding> group(
      List<Finding> findings, Map<Integer, RankWindow> byRank, Lateness lateness) {
    for (Finding f : findings) {
      int culprit = f.getKind() == FindingKind.SLOW_LINK ? f.getFromRank() : f.getRank();
      RankWindow w = culprit >= 0 ? byRank.get(culprit) : null;
      if (w != null) f.setNode(Objects.toString(w.getHost(), ""));
    }
    Map<String, List<Integer>> ranksOf = new TreeMap<>();
    for (RankWindow w : byRank.values()) {
      ranksOf
          .computeIfAbsent(Objects.toString(w.getHost(), ""), h -> new ArrayList<>())
          .add(w.getRank());
    }
    if (ranksOf.size() < 2) return findings;
    Map<String, List<Finding>> slowOf = new TreeMap<>();
    for (Finding f : findings) {
      if (f.getKind() == FindingKind.SLOW_RANK) {
        slowOf.computeIfAbsent(f.getNode(), h -> new ArrayList<>()).add(f);
      }
    }
    boolean someHostClean = false;
    for (String h : ranksOf.keySet()) someHostClean |= !slowOf.containsKey(h);
    if (!someHostClean) return findings;
    List<Finding> out = new ArrayList<>(findings);
    for (var e : slowOf.entrySet()) {
      List<Integer> ranks = ranksOf.get(e.getKey());
      List<Finding> slow = e.getValue();
      if (ranks == null || ranks.size() < 2 || slow.size() != ranks.size()) continue;
      out.removeAll(slow);
      out.add(node(e.getKey(), slow, crossingShiftUs(ranks, byRank, lateness)));
    }
    return out;
  }

  /**
   * The median over the node's ranks of how much later they saw the ranks of other nodes than their
   * node-mates (µs; NaN without per-peer lateness).
   */
  static double crossingShiftUs(
      List<Integer> ranks, Map<Integer, RankWindow> byRank, Lateness lateness) {
    List<Double> shifts = new ArrayList<>();
    for (int r : ranks) {
      RankWindow w = byRank.get(r);
      double off = 0;
      double on = 0;
      int nOff = 0;
      int nOn = 0;
      for (RankWindow p : byRank.values()) {
        if (p.getRank() == r) continue;
        double l = lateness.of(r, p.getRank());
        if (Double.isNaN(l)) continue;
        if (Objects.equals(Objects.toString(p.getHost(), ""), Objects.toString(w.getHost(), ""))) {
          on += l;
          nOn++;
        } else {
          off += l;
          nOff++;
        }
      }
      if (nOn > 0 && nOff > 0) shifts.add(off / nOff - on / nOn);
    }
    if (shifts.isEmpty()) return Double.NaN;
    shifts.sort(null);
    int m = shifts.size();
    return m % 2 == 1 ? shifts.get(m / 2) : (shifts.get(m / 2 - 1) + shifts.get(m / 2)) / 2;
  }

  /** How late rank {@code r} saw peer {@code p} (µs), NaN where the window cannot say. */
  interface Lateness {
    double of(int r, int p);
  }

  private static Finding node(String host, List<Finding> slow, double crossingShiftUs) {
    int lowest = Integer.MAX_VALUE;
    double excess = Double.MAX_VALUE;
    double confidence = 1;
    Cause cause = slow.get(0).getCause();
    StringBuilder ranks = new StringBuilder();
    for (Finding f : slow.stream().sorted((a, b) -> a.getRank() - b.getRank()).toList()) {
      lowest = Math.min(lowest, f.getRank());
      excess = Math.min(excess, f.getExcessWaitUs());
      confidence = Math.min(confidence, f.getConfidence());
      if (f.getCause() != cause) cause = Cause.ARRIVED_LATE;
      if (ranks.length() > 0) ranks.append(", ");
      ranks.append(String.format("rank %d %.0f us", f.getRank(), f.getExcessWaitUs()));
    }
    boolean network = crossingShiftUs >= 0.5 * excess;
    if (network) cause = Cause.LINK;
    return Finding.newBuilder()
        .setKind(FindingKind.SLOW_NODE)
        .setRank(lowest)
        .setFromRank(-1)
        .setCause(cause)
        .setConfidence(confidence)
        .setExcessWaitUs(excess)
        .setNode(host)
        .setEvidence(
            "every rank of the communicator on "
                + host
                + " arrived late, and no rank elsewhere ("
                + ranks
                + " beyond a typical peer)"
                + (network
                    ? String.format(
                        "; its ranks saw the other nodes' ranks %.0f us later than their"
                            + " node-mates: every flag across the node's boundary was late, its"
                            + " network, not its GPUs",
                        crossingShiftUs)
                    : ""))
        .build();
  }
}
