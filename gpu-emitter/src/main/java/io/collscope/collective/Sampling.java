package io.collscope.collective;

/**
 * Which collectives a backend accounts in full: 1 in {@code every}, chosen by a hash of the
 * collective's sequence number (1, 2, ... on every rank of the communicator alike, so all ranks
 * account the same collectives and their per-peer waits describe the same ones).
 *
 * <p>The CUDA kernel decides it on the device ({@code osar.cu}: splitmix64 of the sequence with its
 * own key, masked); the reporter counts the same choice here, so each snapshot can say how many
 * collectives its accounted fields come from ({@code sampled_calls}) without the kernel counting
 * anything more.
 *
 * @param every a power of two; 1: every collective
 * @param key the hash's key ({@link FaultPlan#mix}'s index argument)
 */
public record Sampling(int every, int key) {

  /** Every collective accounted: the CPU backend, and the CUDA kernel from 64 MiB per rank. */
  public static final Sampling EVERY = new Sampling(1, 0);

  public Sampling {
    if (every < 1 || Integer.bitCount(every) != 1) {
      throw new IllegalArgumentException("every must be a power of two >= 1, got " + every);
    }
    if (every == 1) key = 0; // every collective, whatever the hash: one value, equal to EVERY
  }

  /** Whether collective {@code seq} (from 1) is accounted in full. */
  public boolean accounts(long seq) {
    return every == 1 || (FaultPlan.mix(seq, key) & (every - 1)) == 0;
  }

  /** How many of the collectives {@code from + 1 .. to} are accounted in full. */
  public long accountedIn(long from, long to) {
    if (every == 1) return Math.max(0, to - from);
    long n = 0;
    for (long seq = from + 1; seq <= to; seq++) if (accounts(seq)) n++;
    return n;
  }

  /**
   * A running count of the accounted collectives among a rank's completed ones, for a reader that
   * sees the completed count grow (one per rank; not thread-safe). Each call hashes only the
   * collectives completed since the last: about as many as the rank ran meanwhile.
   */
  public static final class Counter {
    private final Sampling sampling;
    private long completed;
    private long accounted;

    public Counter(Sampling sampling) {
      this.sampling = sampling;
    }

    /**
     * The accounted collectives among {@code 1 .. completed}. A count lower than the last one
     * (counters that started again) starts over.
     */
    public long accountedUpTo(long completed) {
      if (completed < this.completed) {
        this.completed = 0;
        this.accounted = 0;
      }
      accounted += sampling.accountedIn(this.completed, completed);
      this.completed = completed;
      return accounted;
    }
  }
}
