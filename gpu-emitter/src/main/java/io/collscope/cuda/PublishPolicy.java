package io.collscope.cuda;

import java.util.Arrays;

/**
 * When a rank's totals are due for {@code osar_publish}: after {@code every} instrumented
 * collectives, or, where a time bound is set, once {@code intervalNanos} have passed on the host
 * since the rank's last publication, whichever comes first.
 *
 * <p>Why both: a publication costs ~8 µs of the rank's stream, so small collectives spread it over
 * many (1,024 at 4 KB: ~8 ns each, run 88); but a count alone lags the counters by 1,024
 * collectives of whatever length they have, and an injected 300 µs delay per collective would make
 * that 0.3 s, a third of a window. The time bound keeps the lag near {@code intervalNanos} however
 * slow the collectives are. It is measured where the collectives are enqueued, which runs ahead of
 * the GPU by at most the dispatcher's batch (16 collectives), so the lag is the interval plus at
 * most one batch. A CUDA graph capture needs a count only (a graph replays the publications it
 * captured, so it holds a whole number of intervals): {@link #countOnly} drops the time bound.
 *
 * <p>The count is at most {@link OsarLayout#RECORDS} (1,024), whatever was asked: the kernels keep
 * a sampled collective's raw clocks in a ring of that many records that a publication folds into
 * the totals, so a longer interval would overwrite samples before they were counted.
 *
 * <p>Each rank's state is touched only by the thread that enqueues that rank's work.
 */
final class PublishPolicy {

  private final int[] since; // by rank: instrumented collectives since its last publication
  private final long[] lastNanos; // by rank: host time of its last publication, or of the start
  private volatile int every;
  private volatile long intervalNanos;

  PublishPolicy(int worldSize, int every, long intervalNanos, long nowNanos) {
    this.since = new int[worldSize];
    this.lastNanos = new long[worldSize];
    Arrays.fill(lastNanos, nowNanos);
    this.every = bounded(every);
    this.intervalNanos = Math.max(0, intervalNanos);
  }

  /**
   * Counts one instrumented collective of {@code rank}; true when a publication is due after it.
   */
  boolean countAndCheck(int rank, long nowNanos) {
    if (++since[rank] >= every) return true;
    long interval = intervalNanos;
    return interval > 0 && nowNanos - lastNanos[rank] >= interval;
  }

  /** Whether this policy reads the clock: callers skip {@code System.nanoTime()} when not. */
  boolean timed() {
    return intervalNanos > 0;
  }

  /** Whether {@code rank} ran instrumented collectives since its last publication. */
  boolean unpublished(int rank) {
    return since[rank] > 0;
  }

  void published(int rank, long nowNanos) {
    since[rank] = 0;
    lastNanos[rank] = nowNanos;
  }

  /** Every {@code k} collectives and no time bound, from now on (graph captures, benches). */
  void countOnly(int k) {
    intervalNanos = 0;
    every = bounded(k);
    Arrays.fill(since, 0);
  }

  /** A count of collectives between publications as the policy takes it: 1 to the ring's size. */
  static int bounded(int every) {
    return Math.max(1, Math.min(OsarLayout.RECORDS, every));
  }

  int every() {
    return every;
  }

  long intervalNanos() {
    return intervalNanos;
  }
}
