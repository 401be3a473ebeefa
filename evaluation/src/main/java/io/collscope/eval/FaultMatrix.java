package io.collscope.eval;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The fault matrix of the accuracy evaluation: fault families × world sizes × severities, each cell
 * one run with its {@code --inject} spec. Severities are multiples of a backend's stated detection
 * floor: near the floor (1×), 2× and 10×. Faults start at the onset, so every run also has clean
 * windows before it, and the uniform slowdown has windows to learn its baseline from.
 */
public final class FaultMatrix {

  /** One run of the matrix. */
  public record Cell(
      String id, Family family, int world, String severity, long delayNanos, String inject) {
    Cell(Family family, int world, String severity, long delayNanos, String inject) {
      this(
          family.label + "-w" + world + (severity.isEmpty() ? "" : "-" + severity),
          family,
          world,
          severity,
          delayNanos,
          inject);
    }

    /** A run recorded elsewhere (e.g. on a GPU), named as its recording. */
    public static Cell recorded(String name, int world, String inject) {
      return new Cell(name, Family.RECORDED, world, "", 0, inject);
    }
  }

  /** What is wrong in a cell, as {@code --inject} specs from a delay and an onset. */
  public enum Family {
    CLEAN("clean", false),
    SLOW_RANK("slow-rank", true),
    SLOW_PUBLISH("slow-publish", true),
    SLOW_ACK("slow-ack", true),
    SLOW_COPY("slow-copy", true),
    SLOW_LINK("slow-link", true),
    DEAD_RANK("dead-rank", false),
    INTERMITTENT("intermittent", true),
    TWO_EQUAL("2-equal", true),
    TWO_UNEQUAL("2-unequal", true),
    THREE_EQUAL("3-equal", true),
    THREE_UNEQUAL("3-unequal", true),
    UNIFORM("uniform", true),
    REBOOT("reboot", false),
    /** A recording made elsewhere, with its own specs. */
    RECORDED("recorded", false);

    public final String label;
    final boolean graded;

    Family(String label, boolean graded) {
      this.label = label;
      this.graded = graded;
    }

    public static Family parse(String s) {
      for (Family f : values()) if (f.label.equalsIgnoreCase(s.trim())) return f;
      throw new IllegalArgumentException("unknown fault family '" + s + "'");
    }

    /**
     * The specs for a world of n ranks, or null when the family needs more ranks. Culprits are
     * spread over the ranks (never only rank 0), so an index-order bias cannot pass for accuracy.
     */
    String inject(int n, long d, long onsetNanos) {
      String at = "@" + us(onsetNanos);
      int last = n - 1;
      int mid = n / 2;
      return switch (this) {
        case CLEAN -> "";
        case SLOW_RANK -> "slow-rank=" + mid + ":" + us(d) + at;
        case SLOW_PUBLISH -> "slow-publish=" + mid + ":" + us(d) + at;
        case SLOW_ACK -> "slow-ack=" + mid + ":" + us(d) + at;
        case SLOW_COPY -> "slow-copy=" + mid + ":" + us(d) + at;
        case SLOW_LINK -> "slow-link=0->" + last + ":" + us(d) + at;
        case DEAD_RANK -> "dead-rank=" + last + at;
        // ten times the delay in a tenth of the collectives: the same mean as SLOW_RANK
        case INTERMITTENT -> "slow-rank=" + mid + ":" + us(10 * d) + at + "~10%";
        case TWO_EQUAL ->
            n < 3 ? null : "slow-rank=1:" + us(d) + at + ",slow-rank=" + last + ":" + us(d) + at;
        case TWO_UNEQUAL ->
            n < 3
                ? null
                : "slow-rank=1:" + us(2 * d) + at + ",slow-rank=" + last + ":" + us(d) + at;
        case THREE_EQUAL ->
            n < 4
                ? null
                : String.join(
                    ",",
                    "slow-rank=1:" + us(d) + at,
                    "slow-rank=" + mid + ":" + us(d) + at,
                    "slow-rank=" + last + ":" + us(d) + at);
        case THREE_UNEQUAL ->
            n < 4
                ? null
                : String.join(
                    ",",
                    "slow-rank=1:" + us(3 * d) + at,
                    "slow-rank=" + mid + ":" + us(2 * d) + at,
                    "slow-rank=" + last + ":" + us(d) + at);
        case UNIFORM -> "slow-all=" + us(d) + at;
        case REBOOT -> "reboot-rank=" + mid + at;
        case RECORDED -> null;
      };
    }
  }

  /** Severity labels and their multiples of the floor. */
  public static final List<String> SEVERITIES = List.of("floor", "2x", "10x");

  private FaultMatrix() {}

  public static List<Cell> cells(
      List<Family> families,
      List<Integer> worlds,
      List<String> severities,
      long floorNanos,
      long onsetNanos) {
    List<Cell> out = new ArrayList<>();
    for (Family f : families) {
      for (int n : worlds) {
        if (!f.graded) {
          String spec = f.inject(n, 0, onsetNanos);
          if (spec != null) out.add(new Cell(f, n, "", 0, spec));
          continue;
        }
        for (String s : severities) {
          long d = floorNanos * multiple(s);
          String spec = f.inject(n, d, onsetNanos);
          if (spec != null) out.add(new Cell(f, n, s, d, spec));
        }
      }
    }
    return out;
  }

  static long multiple(String severity) {
    return switch (severity) {
      case "floor" -> 1;
      case "2x" -> 2;
      case "10x" -> 10;
      default ->
          throw new IllegalArgumentException(
              "unknown severity '" + severity + "' (floor, 2x, 10x)");
    };
  }

  /** A duration in the largest unit that keeps it exact: 7s, 250ms, 400us. */
  static String us(long nanos) {
    if (nanos > 0 && nanos % 1_000_000_000L == 0) return nanos / 1_000_000_000L + "s";
    if (nanos > 0 && nanos % 1_000_000L == 0) return nanos / 1_000_000L + "ms";
    return String.format(Locale.ROOT, "%dus", nanos / 1000);
  }
}
