package io.collscope.sim;

/**
 * Faults injected into a simulated one-shot all-reduce ({@link OneShotSimulator}). Every method
 * gets the rank(s), the collective's sequence number and {@code tNanos}, the simulated time since
 * the start of the run at which the affected step begins (arrival: the previous collective's end;
 * copy: guard end; publish: copy end; ack: guard start; link: the sender's publication), so a fault
 * can be active for an interval or a fraction of collectives.
 *
 * <p>Implementations must be pure functions of their arguments (the simulator may ask twice for the
 * same collective) and return delays ≥ 0 (negative ones count as 0). Delays add to the modelled
 * time of the step, as the {@code --inject} faults of the real backends do.
 */
public interface FaultModel {

  /** Extra time before rank {@code r} arrives at collective {@code seq} (slow compute/launch). */
  default long arrivalDelayNanos(int r, long seq, long tNanos) {
    return 0;
  }

  /** Extra time of rank {@code r}'s copy into its slot (slow memory). */
  default long copyDelayNanos(int r, long seq, long tNanos) {
    return 0;
  }

  /** Extra time from copy done until rank {@code r}'s flag is published (local completion). */
  default long publishDelayNanos(int r, long seq, long tNanos) {
    return 0;
  }

  /** Extra time before peers' acks reach rank {@code r} (its ring fills, it waits in guard). */
  default long ackDelayNanos(int r, long seq, long tNanos) {
    return 0;
  }

  /** Extra time before {@code from}'s flag of {@code seq} becomes visible to {@code to}. */
  default long linkDelayNanos(int from, int to, long seq, long tNanos) {
    return 0;
  }

  /**
   * Whether {@link #linkDelayNanos} can ever be non-zero for this link. Asked once per link at the
   * start of a run; only links answering true are asked per collective, which keeps a world of 1024
   * ranks from asking a million links every collective. The default is the safe answer.
   */
  default boolean mayDelayLink(int from, int to) {
    return true;
  }

  /**
   * Whether rank {@code r} is dead at {@code tNanos}. Death is permanent (the process crashed):
   * once the simulator sees a rank dead it never runs, publishes, acks or reports again.
   */
  default boolean isDead(int r, long tNanos) {
    return false;
  }

  /** No faults. */
  FaultModel NONE =
      new FaultModel() {
        @Override
        public boolean mayDelayLink(int from, int to) {
          return false;
        }

        @Override
        public String toString() {
          return "no faults";
        }
      };
}
