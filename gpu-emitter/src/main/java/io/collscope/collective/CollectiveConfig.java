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

  /** The test pattern every backend reduces: small integers, so fp32 and bf16 sums are exact. */
  public static float inputValue(int rank, long seq, int i) {
    return (rank + 1) * (float) ((seq + i) % 7);
  }

  /** The expected all-reduce sum of {@link #inputValue} over all ranks. */
  public static float expectedSum(int worldSize, long seq, int i) {
    return (float) ((seq + i) % 7) * (worldSize * (worldSize + 1) / 2);
  }
}
