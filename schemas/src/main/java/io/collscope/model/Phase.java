package io.collscope.model;

import io.collscope.avro.Cause;

/**
 * The phases of one collective, in the order they happen. This enum is the one description of the
 * phases: the counter block layout, the snapshot reader, the reporter, the job's deltas and window
 * means, the attribution's cause and the printed tables all iterate over it.
 *
 * <p>Adding a phase is one constant here, its {@code CB_PH_*} index in {@code counter_block.h} (the
 * kernel accumulates it), and the fields {@code <name>_cycles} in {@code CounterSnapshot} and
 * {@code <name>_mean_us} in {@code RankWindow} and {@code RankPhases}; {@code PhaseContractTest}
 * fails until all of them exist.
 */
public enum Phase {
  /** Waiting for a free ring slot: peers have not acked the slot this collective reuses. */
  GUARD("guard", Cause.RING_FULL),
  /** Copying the local input into this rank's published slot. */
  COPY("copy", Cause.SLOW_COPY_REDUCE),
  /** From local copy done until this rank's flag is visible to peers (local completion). */
  PUBLISH("publish", Cause.SLOW_PUBLISH),
  /** From this rank's publication until every peer's flag is seen: time spent on others. */
  WAIT("wait", null),
  /** Summing every rank's slot into the output. */
  REDUCE("reduce", Cause.SLOW_COPY_REDUCE);

  public static final int COUNT = values().length;

  private final String fieldName;
  private final Cause blame;

  Phase(String fieldName, Cause blame) {
    this.fieldName = fieldName;
    this.blame = blame;
  }

  /** The phase's name in schemas and tables, e.g. {@code guard}. */
  public String fieldName() {
    return fieldName;
  }

  /** Its cumulative counter in {@code CounterSnapshot}, e.g. {@code guard_cycles}. */
  public String cyclesField() {
    return fieldName + "_cycles";
  }

  /** Its mean per collective in {@code RankWindow} and {@code RankPhases}, e.g. guard_mean_us. */
  public String meanUsField() {
    return fieldName + "_mean_us";
  }

  /**
   * The cause named when a slow rank's excess lies in this phase; null for {@link #WAIT}, which is
   * time spent on other ranks and so never the waiting rank's own fault.
   */
  public Cause blame() {
    return blame;
  }
}
