package io.collscope.counters;

/**
 * The writer's private running totals: what the GPU keeps in registers and device memory. Only the
 * owning rank touches it; {@link CounterBlock#publish} makes it visible once per collective.
 */
public final class RankAccumulator {

  public long cyclesPerSecond;
  public long calls;
  public long bytes;
  public long guardCycles;
  public long copyCycles;
  public long publishCycles;
  public long waitCycles;
  public long reduceCycles;
  public long timeouts;
  public final long[] peerWaitCycles;
  public final long[] peerArrivedLast;
  public final long[] histogram;

  public RankAccumulator(int worldSize, int buckets, long cyclesPerSecond) {
    this.peerWaitCycles = new long[worldSize];
    this.peerArrivedLast = new long[worldSize];
    this.histogram = new long[buckets];
    this.cyclesPerSecond = cyclesPerSecond;
  }

  /** Counts one collective of {@code cycles} latency in the log2 histogram. */
  public void recordLatency(long cycles) {
    histogram[bucketOf(cycles, histogram.length)]++;
  }

  /** Bucket i holds [2^i, 2^(i+1)); 0 and 1 land in bucket 0; the last bucket is open-ended. */
  public static int bucketOf(long cycles, int buckets) {
    int b = cycles <= 1 ? 0 : 63 - Long.numberOfLeadingZeros(cycles);
    return Math.min(b, buckets - 1);
  }
}
