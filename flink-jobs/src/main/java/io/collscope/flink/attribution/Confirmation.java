package io.collscope.flink.attribution;

import java.util.HashMap;
import java.util.Map;

/**
 * The two-window test every matrix finding passes before it is named: a finding that clears its bar
 * by {@link Attributor#STRONG} is named at once, a closer one only when the communicator's last
 * window leaned the same way ({@link Attributor#LEANING}). Why: a rank late by a margin for one
 * window on a busy host — a thread descheduled for a second — is a lean, not a culprit; a fault
 * lasts. It also remembers how far each rank leaned in this window, for the next one to ask.
 */
final class Confirmation {
  private final Map<Integer, Double> previous; // the last window's leaning ranks; null: none
  final Map<Integer, Double> leaning = new HashMap<>(); // this window's

  /** {@code previous}: the last window's leaning ranks, null when there is none to ask. */
  Confirmation(Map<Integer, Double> previous) {
    this.previous = previous;
  }

  /**
   * Whether a finding against {@code rank} that clears its bar by {@code ratio} is named now: at
   * once when it clears it twice ({@link Attributor#STRONG}), else only when the last window leaned
   * the same way ({@link Attributor#LEANING}: it cleared its bar too). Without a previous window to
   * ask (one window judged alone) every finding is named.
   */
  boolean confirmed(int rank, double ratio) {
    lean(rank, ratio);
    return previous == null
        || ratio >= Attributor.STRONG
        || previous.getOrDefault(rank, 0.0) >= Attributor.LEANING;
  }

  /** Remembers how far {@code rank} leaned towards a finding in this window. */
  void lean(int rank, double ratio) {
    if (ratio >= Attributor.LEANING) leaning.merge(rank, ratio, Math::max);
  }
}
