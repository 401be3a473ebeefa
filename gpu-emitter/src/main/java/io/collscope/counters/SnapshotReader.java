package io.collscope.counters;

import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * Takes snapshot-consistent reads of a {@link CounterBlock} while its writer keeps publishing.
 *
 * <p>Sequence-lock protocol: read the lock (acquire); if odd, a write is in progress; copy every
 * field; fence; re-read the lock. Only if both reads are equal and even is the copy returned.
 * Otherwise retry, up to {@code maxRetries} times, then give up with {@link TornSnapshotException}:
 * a torn snapshot is never returned. Retries are counted so the cost of consistency is visible in
 * every record.
 *
 * <p>Not thread-safe: one reader per instance (the reporter thread).
 */
public final class SnapshotReader {

  public static final int DEFAULT_MAX_RETRIES = 10_000;

  private final CounterBlock block;
  private final int maxRetries;
  private long retries;

  public SnapshotReader(CounterBlock block, int maxRetries) {
    this.block = block;
    this.maxRetries = maxRetries;
  }

  public SnapshotReader(CounterBlock block) {
    this(block, DEFAULT_MAX_RETRIES);
  }

  /** Cumulative retries (torn or in-progress reads discarded) since this reader was made. */
  public long retries() {
    return retries;
  }

  public Counters read() throws TornSnapshotException {
    ByteBuffer b = block.buffer();
    int w = block.worldSize();
    int h = block.buckets();
    for (int attempt = 0; attempt <= maxRetries; attempt++) {
      if (attempt > 0) {
        retries++;
        backOff(attempt);
      }
      long s1 = (long) CounterBlock.LONGS.getAcquire(b, CounterBlock.OFF_SEQLOCK);
      if ((s1 & 1L) != 0) {
        continue;
      }
      long cps = b.getLong(CounterBlock.OFF_CYCLES_PER_SECOND);
      RankTotals t = new RankTotals(w, h);
      for (Counter c : Counter.values()) t.set(c, b.getLong(CounterBlock.offCounter(c)));
      for (Phase p : Phase.values()) t.setCycles(p, b.getLong(CounterBlock.offPhase(p)));
      long[] peerWait = t.peerWaitCycles();
      long[] peerLast = t.peerArrivedLast();
      long[] peerLate = t.peerLateCycles();
      long[] lateHist = t.peerLateHistogram();
      long[] hist = t.histogram();
      for (int p = 0; p < w; p++) {
        peerWait[p] = b.getLong(block.offPeerWait(p));
        peerLast[p] = b.getLong(block.offPeerLast(p));
        peerLate[p] = b.getLong(block.offPeerLate(p));
      }
      for (int i = 0; i < lateHist.length; i++) {
        lateHist[i] = b.getLong(block.offPeerLateHistogram(i));
      }
      for (int i = 0; i < h; i++) {
        hist[i] = b.getLong(block.offHistogram(i));
      }
      long[] ext = new long[CounterBlock.EXT_WORDS];
      for (int i = 0; i < ext.length; i++) {
        ext[i] = b.getLong(block.offExt(i));
      }
      // The copies above must complete before the lock is read again.
      VarHandle.acquireFence();
      long s2 = (long) CounterBlock.LONGS.getOpaque(b, CounterBlock.OFF_SEQLOCK);
      if (s1 == s2) {
        return new Counters(s1, cps, t, ext);
      }
    }
    throw new TornSnapshotException(
        "no consistent snapshot in " + (maxRetries + 1) + " attempts: the writer never paused");
  }

  /**
   * Spin first (a GPU kernel or a running writer thread finishes a publication in microseconds),
   * then yield, then park: a CPU writer preempted in the middle of a publication holds the lock odd
   * for a whole scheduler slice (milliseconds on a loaded host), longer than a million spins take;
   * without backing off the reader gave up while the writer was not even running.
   */
  private static void backOff(int attempt) {
    if (attempt < 256) Thread.onSpinWait();
    else if (attempt < 4096) Thread.yield();
    else java.util.concurrent.locks.LockSupport.parkNanos(1_000);
  }
}
