package io.collscope.flink.offline;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.flink.attribution.Attributor;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.flink.window.RankWindowAccumulator;
import io.collscope.flink.window.RankWindowAggregate;
import io.collscope.flink.window.RankWindowFunction;
import io.collscope.model.CommunicatorKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The job's per-record functions — delta ({@link DeltaFunction#delta}), rank window ({@link
 * RankWindowAggregate}, {@link RankWindowFunction}) and attribution ({@link Attributor}) — chained
 * without Flink, over the snapshots of one communicator in event-time order: for tests that compare
 * record forms and for benchmarks that time one stage without the engine around it. No watermarks,
 * dead letters or baselines: every record is in order and every window is attributed at the end.
 */
public final class OfflineAttribution {

  private final long windowMs;
  private final Thresholds thresholds;
  private final Map<Integer, CounterSnapshot> last = new HashMap<>();
  private final TreeMap<Long, Map<Integer, RankWindowAccumulator>> windows = new TreeMap<>();
  private final RankWindowAggregate aggregate = new RankWindowAggregate();
  private CommunicatorKey key;

  public OfflineAttribution(long windowMs, Thresholds thresholds) {
    this.windowMs = windowMs;
    this.thresholds = thresholds;
  }

  /** Takes one snapshot: its delta from the rank's previous one joins its rank window. */
  public void add(CounterSnapshot s) {
    if (key == null) {
      key = new CommunicatorKey(s.getCluster(), s.getJob(), s.getCommunicator());
    }
    CounterSnapshot prev = last.put(s.getRank(), s);
    if (prev != null && DeltaFunction.backwardsField(prev, s) != null) {
      throw new IllegalStateException(
          "rank " + s.getRank() + ": " + DeltaFunction.backwardsField(prev, s));
    }
    if (prev == null && s.getSeq() != 1) return; // mid-boot: only a baseline
    SnapshotDelta d = DeltaFunction.delta(s, prev);
    long start = Math.floorDiv(d.eventTimeMs, windowMs) * windowMs;
    windows
        .computeIfAbsent(start, k -> new HashMap<>())
        .compute(
            s.getRank(),
            (r, acc) -> aggregate.add(d, acc == null ? aggregate.createAccumulator() : acc));
  }

  /** The rank windows of each window, by window start. */
  public TreeMap<Long, List<RankWindow>> rankWindows() {
    TreeMap<Long, List<RankWindow>> out = new TreeMap<>();
    for (var e : windows.entrySet()) {
      List<RankWindow> list = new ArrayList<>();
      for (RankWindowAccumulator a : e.getValue().values()) {
        list.add(RankWindowFunction.toRankWindow(a, e.getKey(), e.getKey() + windowMs));
      }
      out.put(e.getKey(), list);
    }
    return out;
  }

  /** The rank windows' accumulators of the window that starts at {@code start}, by rank. */
  public Map<Integer, RankWindowAccumulator> accumulators(long start) {
    return windows.getOrDefault(start, Map.of());
  }

  /** Every window's attribution, in window order. */
  public List<Attribution> attributions() {
    List<Attribution> out = new ArrayList<>();
    for (var e : rankWindows().entrySet()) {
      out.add(
          Attributor.attribute(key, e.getKey(), e.getKey() + windowMs, e.getValue(), thresholds));
    }
    return out;
  }
}
