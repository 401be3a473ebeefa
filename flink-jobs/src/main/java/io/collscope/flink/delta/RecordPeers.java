package io.collscope.flink.delta;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.CompactPeers;
import io.collscope.model.RankTotals;
import java.util.Arrays;
import java.util.List;

/**
 * One snapshot record's per-peer counters read peer by peer, whether the record is dense or
 * compact, without expanding a compact one: a listed peer has its entries, every other peer the
 * others' mean (rounded down, as {@link CompactPeers} defines an unlisted peer's value). Reading a
 * 1,024-rank compact record this way touches its 16 listed peers, not 19,000 counters.
 */
final class RecordPeers {

  private static final int B = RankTotals.LATE_BUCKETS;

  /** Ascending listed peers; null for a dense record (every peer has its entries). */
  final int[] index;

  final long[] wait;
  final long[] last;
  final long[] late;
  final long[] lateHistogram;
  final boolean lateness;

  /** The value of each unlisted peer (compact records). */
  final long eachWait;

  final long eachLast;
  final long eachLate;
  final long[] eachLateHistogram;

  RecordPeers(CounterSnapshot s) {
    // Read only, never written: the decoded record's own arrays where they are primitive.
    wait = RankTotals.forReading(s.getPeerWaitCycles());
    last = RankTotals.forReading(s.getPeerArrivedLast());
    late = RankTotals.forReading(s.getPeerLateCycles());
    lateHistogram = RankTotals.forReading(s.getPeerLateHistogram());
    lateness = !s.getPeerLateCycles().isEmpty();
    eachLateHistogram = new long[lateness ? B : 0];
    if (!CompactPeers.isCompact(s)) {
      index = null;
      eachWait = eachLast = eachLate = 0;
      return;
    }
    index = RankTotals.unboxedInts(s.getPeerIndex());
    int others = s.getWorldSize() - index.length;
    eachWait = others > 0 ? s.getOthersWaitCycles() / others : 0;
    eachLast = others > 0 ? s.getOthersArrivedLast() / others : 0;
    eachLate = others > 0 ? s.getOthersLateCycles() / others : 0;
    List<Long> oh = s.getOthersLateHistogram();
    if (others > 0 && lateness) {
      for (int b = 0; b < B && b < oh.size(); b++) eachLateHistogram[b] = oh.get(b) / others;
    }
  }

  /** Entry of peer p, or -1 when p is not listed. */
  int position(int p) {
    if (index == null) return p;
    int i = Arrays.binarySearch(index, p);
    return i >= 0 ? i : -1;
  }

  long wait(int at) {
    return at >= 0 ? wait[at] : eachWait;
  }

  long last(int at) {
    return at >= 0 ? last[at] : eachLast;
  }

  long late(int at) {
    return at >= 0 ? late[at] : eachLate;
  }

  long lateBucket(int at, int b) {
    return at >= 0 ? lateHistogram[at * B + b] : eachLateHistogram[b];
  }
}
