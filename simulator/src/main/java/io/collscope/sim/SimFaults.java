package io.collscope.sim;

import java.util.ArrayList;
import java.util.List;

/**
 * A simple {@link FaultModel} built in code, for tests and the evaluation:
 *
 * <pre>{@code
 * FaultModel f = SimFaults.builder()
 *     .slowRank(3, 300_000)                      // rank 3 arrives 300 µs late, always
 *     .slowLink(2, 5, 200_000).from(1_000_000_000L).until(3_000_000_000L)
 *     .slowPublish(7, 50_000).fraction(0.1)      // in 10% of the collectives
 *     .deadRank(9).from(5_000_000_000L)
 *     .build();
 * }</pre>
 *
 * {@link Builder#from}, {@link Builder#until} and {@link Builder#fraction} apply to the fault added
 * last. A fault is active at simulated times in [from, until); with a fraction, in that share of
 * the collectives, chosen by a hash of (fault, rank(s), seq, seed), so the choice is reproducible
 * and independent of the order of questions. Delays of several active faults of one kind on one
 * rank or link add up.
 */
public final class SimFaults implements FaultModel {

  enum Kind {
    ARRIVAL,
    COPY,
    PUBLISH,
    ACK,
    LINK,
    DEAD
  }

  private record Fault(
      Kind kind, int rank, int from, long nanos, long start, long end, double fraction, int id) {}

  private final Fault[][] byKind;
  private final long seed;
  private final String description;

  private SimFaults(List<Fault> faults, long seed) {
    this.seed = seed;
    this.byKind = new Fault[Kind.values().length][];
    for (Kind k : Kind.values()) {
      byKind[k.ordinal()] = faults.stream().filter(f -> f.kind == k).toArray(Fault[]::new);
    }
    this.description = faults.toString();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Accumulates faults; the modifiers apply to the fault added last. */
  public static final class Builder {
    private final List<Fault> faults = new ArrayList<>();
    private long seed = 0x5EED;

    private Builder add(Kind kind, int rank, int from, long nanos) {
      if (rank < 0 || from < 0 || nanos < 0) {
        throw new IllegalArgumentException(kind + " fault needs ranks >= 0 and a delay >= 0");
      }
      faults.add(new Fault(kind, rank, from, nanos, 0, Long.MAX_VALUE, 1.0, faults.size()));
      return this;
    }

    /** Rank r arrives {@code nanos} late (slow compute or launch before the collective). */
    public Builder slowRank(int r, long nanos) {
      return add(Kind.ARRIVAL, r, 0, nanos);
    }

    /** Rank r's copy into its slot takes {@code nanos} longer. */
    public Builder slowCopy(int r, long nanos) {
      return add(Kind.COPY, r, 0, nanos);
    }

    /** Rank r publishes {@code nanos} after its copy finished (slow local completion). */
    public Builder slowPublish(int r, long nanos) {
      return add(Kind.PUBLISH, r, 0, nanos);
    }

    /** Peers' acks reach rank r {@code nanos} late. */
    public Builder slowAck(int r, long nanos) {
      return add(Kind.ACK, r, 0, nanos);
    }

    /** Rank {@code from}'s flag becomes visible to rank {@code to} {@code nanos} late. */
    public Builder slowLink(int from, int to, long nanos) {
      return add(Kind.LINK, to, from, nanos);
    }

    /** Rank r is dead (from {@link #from}, default the start): it never runs or reports again. */
    public Builder deadRank(int r) {
      return add(Kind.DEAD, r, 0, 0);
    }

    /** The last fault is active from simulated time {@code tNanos}. */
    public Builder from(long tNanos) {
      return modify(
          f -> new Fault(f.kind, f.rank, f.from, f.nanos, tNanos, f.end, f.fraction, f.id));
    }

    /** The last fault is active until (excluding) simulated time {@code tNanos}. */
    public Builder until(long tNanos) {
      return modify(
          f -> new Fault(f.kind, f.rank, f.from, f.nanos, f.start, tNanos, f.fraction, f.id));
    }

    /** The last fault hits only this share (0..1] of the collectives while active. */
    public Builder fraction(double p) {
      if (!(p > 0 && p <= 1)) throw new IllegalArgumentException("fraction " + p + " not in (0,1]");
      if (last().kind == Kind.DEAD) throw new IllegalArgumentException("a death has no fraction");
      return modify(f -> new Fault(f.kind, f.rank, f.from, f.nanos, f.start, f.end, p, f.id));
    }

    /** Seed of the fraction choices. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    public SimFaults build() {
      return new SimFaults(List.copyOf(faults), seed);
    }

    private Fault last() {
      if (faults.isEmpty()) throw new IllegalStateException("no fault to modify yet");
      return faults.get(faults.size() - 1);
    }

    private Builder modify(java.util.function.UnaryOperator<Fault> m) {
      faults.set(faults.size() - 1, m.apply(last()));
      return this;
    }
  }

  private boolean hits(Fault f, int a, int b, long seq, long t) {
    if (t < f.start || t >= f.end) return false;
    if (f.fraction >= 1) return true;
    long h = mix(seed ^ mix(f.id * 0x9E3779B97F4A7C15L + a * 0xC2B2AE3D27D4EB4FL + b) ^ seq);
    return (h >>> 11) * 0x1.0p-53 < f.fraction;
  }

  private long delay(Kind k, int r, int from, long seq, long t) {
    long d = 0;
    for (Fault f : byKind[k.ordinal()]) {
      if (f.rank == r && (k != Kind.LINK || f.from == from) && hits(f, r, from, seq, t)) {
        d += f.nanos;
      }
    }
    return d;
  }

  @Override
  public long arrivalDelayNanos(int r, long seq, long tNanos) {
    return delay(Kind.ARRIVAL, r, 0, seq, tNanos);
  }

  @Override
  public long copyDelayNanos(int r, long seq, long tNanos) {
    return delay(Kind.COPY, r, 0, seq, tNanos);
  }

  @Override
  public long publishDelayNanos(int r, long seq, long tNanos) {
    return delay(Kind.PUBLISH, r, 0, seq, tNanos);
  }

  @Override
  public long ackDelayNanos(int r, long seq, long tNanos) {
    return delay(Kind.ACK, r, 0, seq, tNanos);
  }

  @Override
  public long linkDelayNanos(int from, int to, long seq, long tNanos) {
    return delay(Kind.LINK, to, from, seq, tNanos);
  }

  @Override
  public boolean mayDelayLink(int from, int to) {
    for (Fault f : byKind[Kind.LINK.ordinal()]) {
      if (f.rank == to && f.from == from) return true;
    }
    return false;
  }

  @Override
  public boolean isDead(int r, long tNanos) {
    for (Fault f : byKind[Kind.DEAD.ordinal()]) {
      if (f.rank == r && tNanos >= f.start && tNanos < f.end) return true;
    }
    return false;
  }

  /** SplitMix64's finalizer. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  @Override
  public String toString() {
    return description;
  }
}
