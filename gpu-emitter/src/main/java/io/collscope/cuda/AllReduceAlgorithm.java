package io.collscope.cuda;

/**
 * How a communicator's all-reduce moves its data ({@code osar.cu}). Chosen once per communicator,
 * whose size per rank is fixed, by {@link CudaCollective.Options#algorithmFor}; every rank of a
 * communicator runs the same one. All three share the protocol (guard, flag, wait, ack), the phases
 * and the per-peer billing, and sum in rank order, so they give the same bits.
 */
public enum AllReduceAlgorithm {
  /**
   * One-shot, pull: each rank copies its input into its own ring slot and reads every peer's slot
   * across NVLink in the reduce. Small collectives: one exchange, the fewest steps.
   */
  ONE_SHOT_PULL("oneshot", false, ""),
  /**
   * One-shot, push: each rank writes its input into its segment of every peer's slot (posted
   * writes) and reduces its own slot locally, pipelined in pieces. Large collectives on few ranks.
   */
  ONE_SHOT_PUSH("oneshot", true, "_push"),
  /**
   * Two-shot: reduce-scatter (rank r receives chunk r of every peer's input and reduces it), then
   * all-gather (r pushes its reduced chunk into every peer's slot). Per rank the link carries 2 (P
   * - 1) / P of the payload against the one-shot push's P - 1: large collectives on many ranks.
   * Whole 16-byte vectors only.
   */
  TWO_SHOT("twoshot", true, "_two");

  /**
   * In the collective's name ({@code allreduce_<this>_<dtype>}), as records and alerts carry it.
   */
  final String label;

  /** Whether the slots have a segment per rank and piece flags follow the ring (RankBuffers). */
  final boolean pushSlots;

  /** Its kernels' names between the dtype and {@code _plain} ({@link OsarModule#kernelName}). */
  final String kernelInfix;

  AllReduceAlgorithm(String label, boolean pushSlots, String kernelInfix) {
    this.label = label;
    this.pushSlots = pushSlots;
    this.kernelInfix = kernelInfix;
  }

  /**
   * The name a command line gives it: {@code oneshot-pull}, {@code oneshot-push}, {@code twoshot}.
   */
  public String flagName() {
    return this == TWO_SHOT ? label : label + "-" + (pushSlots ? "push" : "pull");
  }

  /** The values {@link #parse} takes, for a usage message. */
  public static final String CHOICES = "auto, oneshot-pull, oneshot-push, twoshot";

  /**
   * A command line's algorithm: one of {@link #CHOICES}; {@code auto} is null (chosen by size).
   *
   * @throws IllegalArgumentException naming the choices
   */
  public static AllReduceAlgorithm parse(String s) {
    if (s.equals("auto")) return null;
    for (AllReduceAlgorithm a : values()) if (a.flagName().equals(s)) return a;
    throw new IllegalArgumentException(
        "--algorithm must be one of " + CHOICES + ", got '" + s + "'");
  }
}
