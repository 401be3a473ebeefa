package io.collscope.counters;

import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;

/**
 * A consistent snapshot of one counter block: every field comes from the same publication.
 *
 * @param version the (even) sequence-lock value the snapshot was taken at; it advances by 2 per
 *     publication, so version/2 publications had happened
 * @param cyclesPerSecond the start-up clock rate the writer published
 * @param totals every counter of the block
 * @param ext the block's extension words ({@link CounterBlock#EXT_WORDS}: persistent-CTA drift;
 *     zero for kernels without persistent CTAs)
 */
public record Counters(long version, long cyclesPerSecond, RankTotals totals, long[] ext) {

  public Counters(long version, long cyclesPerSecond, RankTotals totals) {
    this(version, cyclesPerSecond, totals, new long[CounterBlock.EXT_WORDS]);
  }

  /** Extension word {@code i} ({@link CounterBlock#EXT_LEAD_MAX} ...). */
  public long ext(int i) {
    return ext[i];
  }

  /** The lead histogram ({@link CounterBlock#EXT_LEAD_BUCKETS} quarter-round buckets). */
  public long[] leadHistogram() {
    return java.util.Arrays.copyOfRange(
        ext,
        CounterBlock.EXT_LEAD_HIST,
        CounterBlock.EXT_LEAD_HIST + CounterBlock.EXT_LEAD_BUCKETS);
  }

  public long get(Counter c) {
    return totals.get(c);
  }

  public long cycles(Phase p) {
    return totals.cycles(p);
  }

  public long calls() {
    return totals.get(Counter.CALLS);
  }

  public long timeouts() {
    return totals.get(Counter.TIMEOUTS);
  }

  public long[] peerWaitCycles() {
    return totals.peerWaitCycles();
  }

  public long[] peerArrivedLast() {
    return totals.peerArrivedLast();
  }

  public long[] histogram() {
    return totals.histogram();
  }
}
