package io.collscope.collective;

import io.collscope.counters.CounterBlock;

/**
 * Shape of one communicator's collective, common to every backend.
 *
 * @param worldSize ranks in the communicator
 * @param elements elements per rank per all-reduce
 * @param ringSlots slots in each rank's publication ring (tx/ack sequence numbers)
 * @param waitBudgetNanos bound on any single guard or peer wait; past it the collective aborts and
 *     a timeout is counted
 * @param histogramBuckets log2 latency histogram buckets in the counter block
 */
public record CollectiveConfig(
    int worldSize, int elements, int ringSlots, long waitBudgetNanos, int histogramBuckets) {

  public static final int DEFAULT_ELEMENTS = 1024;
  public static final int DEFAULT_RING_SLOTS = 4;
  public static final long DEFAULT_WAIT_BUDGET_NANOS = 1_000_000_000L;

  public CollectiveConfig {
    if (worldSize < 1) throw new ConfigException("worldSize", "must be >= 1, got " + worldSize);
    if (elements < 1) throw new ConfigException("elements", "must be >= 1, got " + elements);
    if (ringSlots < 2) throw new ConfigException("ringSlots", "must be >= 2, got " + ringSlots);
    if (waitBudgetNanos < 1_000) {
      throw new ConfigException(
          "waitBudgetNanos", "must be at least 1us, got " + waitBudgetNanos + "ns");
    }
  }

  public static CollectiveConfig of(int worldSize) {
    return new CollectiveConfig(
        worldSize,
        DEFAULT_ELEMENTS,
        DEFAULT_RING_SLOTS,
        DEFAULT_WAIT_BUDGET_NANOS,
        CounterBlock.DEFAULT_HISTOGRAM_BUCKETS);
  }

  public CollectiveConfig withElements(int e) {
    return new CollectiveConfig(worldSize, e, ringSlots, waitBudgetNanos, histogramBuckets);
  }

  public CollectiveConfig withWaitBudgetNanos(long b) {
    return new CollectiveConfig(worldSize, elements, ringSlots, b, histogramBuckets);
  }

  /** Period of {@link #sequenceTerm}: the GPU kernel takes it as a parameter. */
  public static final int SEQUENCE_PERIOD = 7;

  /**
   * What every rank adds to element i of its input in collective {@code seq}: {@code seq mod 7}.
   * The GPU kernel adds it as it copies the input into the ring slot (the input itself is {@link
   * #inputValue} of sequence 0, whose term is 0).
   */
  public static int sequenceTerm(long seq) {
    return (int) (seq % SEQUENCE_PERIOD);
  }

  /**
   * The test pattern every backend reduces, rank r's element i in collective seq: {@code (r+1)·(i
   * mod 7) + seq mod 7}. Each part makes the host's sum check catch one kind of bug:
   *
   * <ul>
   *   <li>the element part, different per element and weighted by rank: an element taken from the
   *       wrong index, or a rank's contribution missing or counted twice;
   *   <li>the sequence part, different for consecutive sequences and for {@code seq} and {@code seq
   *       - ringSlots} (any ring that is not a multiple of 7; the ring is 4): a slot reduced before
   *       its owner rewrote it (the ring slot's previous user, from a flag seen before its data or
   *       a stale cache line), or an output left over from an earlier collective.
   * </ul>
   *
   * Small integers, so fp32 and bf16 hold every value and every sum exactly up to 8 ranks: bf16
   * holds every integer below 256, which bounds the sums of up to 7 ranks ({@code 3w(w+1) + 6w}),
   * and every even integer below 512, which the sums of 8 ranks ({@code 36·(i mod 7) + 8·(seq mod
   * 7)}, at most 264) all are.
   */
  public static float inputValue(int rank, long seq, int i) {
    return (rank + 1) * (float) (i % 7) + sequenceTerm(seq);
  }

  /** The expected all-reduce sum of {@link #inputValue} over all ranks, for collective seq. */
  public static float expectedSum(int worldSize, long seq, int i) {
    return (float) (i % 7) * (worldSize * (worldSize + 1) / 2)
        + (float) worldSize * sequenceTerm(seq);
  }

  /**
   * The first element of {@code got} that differs from collective {@code seq}'s {@link
   * #expectedSum}, or -1 when every element matches.
   */
  public static int firstMismatch(float[] got, int worldSize, long seq) {
    for (int i = 0; i < got.length; i++) {
      if (got[i] != expectedSum(worldSize, seq, i)) return i;
    }
    return -1;
  }
}
