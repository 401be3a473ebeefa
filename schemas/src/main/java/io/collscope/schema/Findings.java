package io.collscope.schema;

import io.collscope.avro.Finding;

/** The one-token form of a finding that the demo prints, tail shows and the tools compare. */
public final class Findings {

  private Findings() {}

  /**
   * {@code SLOW_RANK(5,RING_FULL)}, {@code SLOW_LINK(3->6)}, {@code SILENT_RANK(3,TIMED_OUT)},
   * {@code UNIFORM_SLOWDOWN(LINK)}, {@code SLOW_NODE(node-b,ARRIVED_LATE)} or {@code
   * UNKNOWN(rank)}.
   */
  public static String token(Finding f) {
    return switch (f.getKind()) {
      case SLOW_LINK -> "SLOW_LINK(" + f.getFromRank() + "->" + f.getRank() + ")";
      case SLOW_RANK, SILENT_RANK -> f.getKind() + "(" + f.getRank() + "," + f.getCause() + ")";
      case UNIFORM_SLOWDOWN -> "UNIFORM_SLOWDOWN(" + f.getCause() + ")";
      case SLOW_NODE -> "SLOW_NODE(" + f.getNode() + "," + f.getCause() + ")";
      case UNKNOWN -> "UNKNOWN(" + f.getRank() + ")";
    };
  }
}
