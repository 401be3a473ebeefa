package io.collscope.flink.attribution;

import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.model.SampledCalls;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Slow inter-node links named from NCCL's network proxy steps (RankWindow version 10): a send
 * step's network wait (ProxyStep SendWait, from posting to the network to completion) is what the
 * link itself costs, measured on the sender's own clock, so no clock is shared. A slow GPU does not
 * raise it (its peers' sends wait for its credit or its data before they are posted), a slow link
 * raises it on every step that crosses it.
 *
 * <p>In a communicator whose ranks span at least two hosts, the link from rank A to rank B (B on
 * another host, at least {@link #MIN_STEPS} send steps in the window) is named {@code SLOW_LINK(B
 * from A)}, cause LINK, when its mean wait per step stands out twice:
 *
 * <ul>
 *   <li>against the other ranks' links: beyond the median of the links sent by every other rank by
 *       the bar — the largest of {@link Thresholds#absFloorUs()}, {@link Thresholds#relExcess()} ×
 *       that median, and z × their spread (1.4826 × median absolute deviation), z {@link
 *       Thresholds#z} over the window's links (the family-wise false-finding rate);
 *   <li>against A's own other network peers, when it has any: beyond their median by the same bar.
 *       A slow NIC of A slows all its sends and is not one link. A rank with one network peer (a
 *       ring's one crossing) is compared with the other ranks only.
 * </ul>
 *
 * <p>And the receiver, where its window has network waits, corroborates: its receive steps from A
 * (RecvWait) wait at least half the send side's excess longer than the median of the other links'
 * receive steps. A sender's proxy thread descheduled while a send was in flight inflates only the
 * send side; a slow link delays the data on both ends. (A receive wait alone names nothing: it also
 * grows with a late sender, a slow GPU.)
 *
 * <p>Its excess is the extra wait per step times the link's steps per timed collective (the
 * sender's sampled calls: proxy events come for the timed collectives only), µs per collective like
 * the other findings'. The receive side (RecvWait) is kept in the windows but names nothing: it
 * includes a late sender. Windows without network waits (other emitters, plugins and records before
 * them) give no link and change no verdict.
 */
final class NetworkLinks {

  /** Send steps a link needs in the window to be judged (its mean is noise below that). */
  static final long MIN_STEPS = 8;

  /** Other links a candidate is compared with, at least: a median of fewer says nothing. */
  static final int MIN_OTHERS = 2;

  private NetworkLinks() {}

  private record Link(int from, int to, double meanUs, long steps, RankWindow sender) {}

  static List<Finding> find(List<RankWindow> windows, Thresholds t) {
    Map<Integer, String> hostOf = new HashMap<>();
    for (RankWindow w : windows) hostOf.put(w.getRank(), Objects.toString(w.getHost(), ""));
    if (new HashSet<>(hostOf.values()).size() < 2) return List.of();
    List<Link> links = new ArrayList<>();
    Map<List<Integer>, Double> recvUs = new HashMap<>(); // (receiver, sender) -> mean per step
    for (RankWindow w : windows) {
      List<Integer> rPeers = orEmpty(w.getNetPeers());
      List<Double> rMean = orEmpty(w.getNetRecvWaitMeanUs());
      List<Long> rSteps = orEmpty(w.getNetRecvSteps());
      if (rMean.size() != rPeers.size() || rSteps.size() != rPeers.size()) continue;
      for (int i = 0; i < rPeers.size(); i++) {
        int from = rPeers.get(i);
        if (rSteps.get(i) < MIN_STEPS || Objects.equals(hostOf.get(from), hostOf.get(w.getRank())))
          continue;
        recvUs.put(List.of(w.getRank(), from), rMean.get(i));
      }
    }
    for (RankWindow w : windows) {
      List<Integer> peers = orEmpty(w.getNetPeers());
      List<Double> mean = orEmpty(w.getNetSendWaitMeanUs());
      List<Long> steps = orEmpty(w.getNetSendSteps());
      if (mean.size() != peers.size() || steps.size() != peers.size()) continue;
      for (int i = 0; i < peers.size(); i++) {
        int to = peers.get(i);
        String toHost = hostOf.get(to);
        if (steps.get(i) < MIN_STEPS || Objects.equals(toHost, hostOf.get(w.getRank()))) continue;
        links.add(new Link(w.getRank(), to, mean.get(i), steps.get(i), w));
      }
    }
    List<Finding> out = new ArrayList<>();
    if (links.size() < MIN_OTHERS + 1) return out;
    double z = t.z(links.size());
    for (Link l : links) {
      List<Double> others = new ArrayList<>();
      List<Double> own = new ArrayList<>();
      for (Link o : links) {
        if (o.from != l.from) others.add(o.meanUs);
        else if (o.to != l.to) own.add(o.meanUs);
      }
      if (others.size() < MIN_OTHERS) continue;
      double center = RobustStatistics.median(others);
      double spread = RobustStatistics.MAD_TO_SD * mad(others, center);
      double bar = Math.max(t.absFloorUs(), Math.max(t.relExcess() * center, z * spread));
      if (l.meanUs - center < bar) continue;
      double ref = center;
      if (!own.isEmpty()) {
        ref = RobustStatistics.median(own);
        double ownBar = Math.max(t.absFloorUs(), Math.max(t.relExcess() * ref, z * spread));
        if (l.meanUs - ref < ownBar) continue; // all its sends are slow: its NIC, not this link
      }
      Double recv = recvUs.get(List.of(l.to, l.from));
      double recvCenter = Double.NaN;
      if (recv != null) {
        List<Double> otherRecv = new ArrayList<>();
        for (var e : recvUs.entrySet()) {
          if (!e.getKey().equals(List.of(l.to, l.from))) otherRecv.add(e.getValue());
        }
        recvCenter = RobustStatistics.median(otherRecv);
        if (recv - recvCenter < 0.5 * (l.meanUs - center)) continue; // the sender's own hiccup
      }
      long sampled = SampledCalls.of(l.sender);
      double stepsPerCall = sampled > 0 ? (double) l.steps / sampled : 1.0;
      double excessUs = (l.meanUs - ref) * stepsPerCall;
      out.add(
          Finding.newBuilder()
              .setKind(FindingKind.SLOW_LINK)
              .setRank(l.to)
              .setFromRank(l.from)
              .setCause(Cause.LINK)
              .setConfidence(Math.max(0, Math.min(1, 1 - Math.exp(-(l.meanUs - center) / bar))))
              .setExcessWaitUs(excessUs)
              .setNode(hostOf.get(l.from))
              .setEvidence(
                  String.format(
                      Locale.ROOT,
                      "rank %d's sends to rank %d (%s → %s) took %.1f us per step on the network"
                          + " against %.1f us %s (median of %d links of other ranks: %.1f us, bar"
                          + " %.1f us; %d steps, %.1f a timed collective)%s",
                      l.from,
                      l.to,
                      hostOf.get(l.from),
                      hostOf.getOrDefault(l.to, "?"),
                      l.meanUs,
                      ref,
                      own.isEmpty() ? "on the other ranks' links" : "to its other peers",
                      others.size(),
                      center,
                      bar,
                      l.steps,
                      stepsPerCall,
                      recv == null
                          ? "; the receiver reports no network waits"
                          : String.format(
                              Locale.ROOT,
                              "; rank %d waited %.1f us per step for its data against %.1f us on"
                                  + " the other links",
                              l.to,
                              recv,
                              recvCenter)))
              .build());
    }
    return out;
  }

  /** Adds the links not already named (the node-local rule may name the same pair). */
  static void addTo(List<Finding> findings, List<Finding> links) {
    Set<List<Integer>> named = new HashSet<>();
    for (Finding f : findings) {
      if (f.getKind() == FindingKind.SLOW_LINK) named.add(List.of(f.getFromRank(), f.getRank()));
    }
    for (Finding l : links) {
      if (named.add(List.of(l.getFromRank(), l.getRank()))) findings.add(l);
    }
  }

  private static double mad(List<Double> v, double center) {
    List<Double> dev = new ArrayList<>(v.size());
    for (double x : v) dev.add(Math.abs(x - center));
    return RobustStatistics.median(dev);
  }

  private static <T> List<T> orEmpty(List<T> list) {
    return list == null ? List.of() : list;
  }
}
