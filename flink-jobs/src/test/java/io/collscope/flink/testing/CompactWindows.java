package io.collscope.flink.testing;

import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.List;

/** Compact rank windows (RankWindow version 6, {@code peer_index}) made dense for comparison. */
public final class CompactWindows {

  private CompactWindows() {}

  /**
   * The dense window that a compact one stands for: every peer not in {@code peer_index} at the
   * {@code others_*} values; a dense window as it is.
   */
  public static RankWindow expand(RankWindow w) {
    List<Integer> index = w.getPeerIndex();
    if (index == null || index.isEmpty()) return w;
    int n = w.getWorldSize();
    boolean lateness = !w.getPeerLateMeanUs().isEmpty();
    List<Double> wait = new ArrayList<>(n);
    List<Double> late = new ArrayList<>(lateness ? n : 0);
    List<Double> p99 = new ArrayList<>(lateness ? n : 0);
    List<Long> last = new ArrayList<>(n);
    for (int p = 0, i = 0; p < n; p++) {
      boolean listed = i < index.size() && index.get(i) == p;
      wait.add(listed ? w.getPeerWaitMeanUs().get(i) : w.getOthersWaitMeanUs());
      last.add(listed ? w.getPeerArrivedLast().get(i) : w.getOthersArrivedLast());
      if (lateness) {
        late.add(listed ? w.getPeerLateMeanUs().get(i) : w.getOthersLateMeanUs());
        p99.add(listed ? w.getPeerLateP99Us().get(i) : w.getOthersLateP99Us());
      }
      if (listed) i++;
    }
    RankWindow d = RankWindow.newBuilder(w).build();
    d.setPeerIndex(new ArrayList<>());
    d.setPeerWaitMeanUs(wait);
    d.setPeerLateMeanUs(late);
    d.setPeerLateP99Us(p99);
    d.setPeerArrivedLast(last);
    d.setOthersWaitMeanUs(0.0);
    d.setOthersLateMeanUs(0.0);
    d.setOthersLateP99Us(0.0);
    d.setOthersArrivedLast(0L);
    return d;
  }
}
