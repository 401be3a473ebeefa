package io.collscope.model;

/**
 * The scalar counters of a counter block besides the phases, in layout order. Each is cumulative
 * and never reset, and each is a {@code long} field of {@code CounterSnapshot} of the same name.
 */
public enum Counter {
  /** Collectives that ended: completed ones plus those that timed out. */
  CALLS("calls"),
  /** Payload bytes reduced by completed collectives. */
  BYTES("bytes"),
  /**
   * Collectives aborted because a wait passed its budget, or was cut short because a peer had
   * aborted (the communicator is broken either way); also counted in calls.
   */
  TIMEOUTS("timeouts"),
  /** Wall-clock ns of the intervals measured in {@link #CLOCK_CYCLES}: the clock's own rate. */
  CLOCK_NS("clock_ns"),
  /** Clock cycles of the intervals measured in {@link #CLOCK_NS}. */
  CLOCK_CYCLES("clock_cycles");

  public static final int COUNT = values().length;

  private final String fieldName;

  Counter(String fieldName) {
    this.fieldName = fieldName;
  }

  public String fieldName() {
    return fieldName;
  }
}
