package io.collscope.collective;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Faults to inject into a collective backend, parsed from {@code --inject} specs. Every backend
 * (CPU threads, CUDA kernels) honours the same plan:
 *
 * <ul>
 *   <li>{@code slow-rank=R:D} — rank R arrives D late at every collective (compute or launch before
 *       the collective is slow);
 *   <li>{@code slow-link=P->R:D} — rank P's flag becomes visible to rank R only D after P
 *       published;
 *   <li>{@code slow-publish=R:D} — rank R's flag is published D after its copy finished (slow local
 *       completion);
 *   <li>{@code slow-ack=R:D} — peers' acks reach rank R D late, so R's ring fills and R waits in
 *       guard;
 *   <li>{@code dead-rank=R} — rank R never runs and never reports.
 * </ul>
 *
 * Several faults are separated by commas or given as repeated flags. Durations take ns, us, ms or
 * s.
 */
public final class FaultPlan {

  public enum Kind {
    SLOW_RANK,
    SLOW_LINK,
    SLOW_PUBLISH,
    SLOW_ACK,
    DEAD_RANK
  }

  /** One injected fault; {@code from} is only meaningful for SLOW_LINK. */
  public record Fault(Kind kind, int rank, int from, long nanos) {
    @Override
    public String toString() {
      return switch (kind) {
        case SLOW_RANK -> "slow-rank=" + rank + ":" + nanos + "ns";
        case SLOW_LINK -> "slow-link=" + from + "->" + rank + ":" + nanos + "ns";
        case SLOW_PUBLISH -> "slow-publish=" + rank + ":" + nanos + "ns";
        case SLOW_ACK -> "slow-ack=" + rank + ":" + nanos + "ns";
        case DEAD_RANK -> "dead-rank=" + rank;
      };
    }
  }

  public static final FaultPlan NONE = new FaultPlan(List.of(), 0);

  private static final Pattern RANK_DURATION = Pattern.compile("(\\d+):(\\d+)(ns|us|ms|s)");
  private static final Pattern LINK_DURATION = Pattern.compile("(\\d+)->(\\d+):(\\d+)(ns|us|ms|s)");
  private static final Pattern RANK_ONLY = Pattern.compile("(\\d+)");

  private final List<Fault> faults;
  private final long[] arrival;
  private final long[] publish;
  private final long[] ack;
  private final long[][] link;
  private final boolean[] dead;

  private FaultPlan(List<Fault> faults, int worldSize) {
    this.faults = List.copyOf(faults);
    arrival = new long[worldSize];
    publish = new long[worldSize];
    ack = new long[worldSize];
    link = new long[worldSize][worldSize];
    dead = new boolean[worldSize];
    for (Fault f : faults) {
      switch (f.kind) {
        case SLOW_RANK -> arrival[f.rank] += f.nanos;
        case SLOW_PUBLISH -> publish[f.rank] += f.nanos;
        case SLOW_ACK -> ack[f.rank] += f.nanos;
        case SLOW_LINK -> link[f.from][f.rank] += f.nanos;
        case DEAD_RANK -> dead[f.rank] = true;
      }
    }
  }

  /**
   * Parses specs such as {@code "slow-rank=2:300us,slow-link=3->6:1ms"}.
   *
   * @throws IllegalArgumentException with a one-line message naming the bad spec
   */
  public static FaultPlan parse(List<String> specs, int worldSize) {
    List<Fault> faults = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (String group : specs) {
      for (String spec : group.split(",")) {
        String s = spec.trim();
        if (s.isEmpty()) {
          continue;
        }
        Fault f = parseOne(s, worldSize);
        if (!seen.add(f.toString())) {
          throw new ConfigException("fault", "'" + s + "' is given twice");
        }
        faults.add(f);
      }
    }
    return new FaultPlan(faults, worldSize);
  }

  private static Fault parseOne(String s, int n) {
    int eq = s.indexOf('=');
    if (eq < 0) {
      throw bad(s, "expected KIND=VALUE");
    }
    String kind = s.substring(0, eq).toLowerCase(Locale.ROOT);
    String value = s.substring(eq + 1);
    switch (kind) {
      case "slow-rank", "slow-publish", "slow-ack" -> {
        Matcher m = RANK_DURATION.matcher(value);
        if (!m.matches()) {
          throw bad(s, "expected " + kind + "=RANK:DURATION, e.g. " + kind + "=2:300us");
        }
        int r = rank(s, m.group(1), n);
        long d = nanos(s, m.group(2), m.group(3));
        Kind k =
            kind.equals("slow-rank")
                ? Kind.SLOW_RANK
                : kind.equals("slow-publish") ? Kind.SLOW_PUBLISH : Kind.SLOW_ACK;
        return new Fault(k, r, -1, d);
      }
      case "slow-link" -> {
        Matcher m = LINK_DURATION.matcher(value);
        if (!m.matches()) {
          throw bad(s, "expected slow-link=FROM->TO:DURATION, e.g. slow-link=3->6:300us");
        }
        int from = rank(s, m.group(1), n);
        int to = rank(s, m.group(2), n);
        if (from == to) {
          throw bad(s, "a link joins two different ranks");
        }
        return new Fault(Kind.SLOW_LINK, to, from, nanos(s, m.group(3), m.group(4)));
      }
      case "dead-rank" -> {
        Matcher m = RANK_ONLY.matcher(value);
        if (!m.matches()) {
          throw bad(s, "expected dead-rank=RANK");
        }
        return new Fault(Kind.DEAD_RANK, rank(s, m.group(1), n), -1, 0);
      }
      default ->
          throw bad(
              s,
              "unknown fault '"
                  + kind
                  + "' (slow-rank, slow-link, slow-publish, slow-ack, dead-rank)");
    }
  }

  private static int rank(String spec, String digits, int n) {
    int r;
    try {
      r = Integer.parseInt(digits);
    } catch (NumberFormatException e) {
      throw bad(spec, "rank " + digits + " is not a number");
    }
    if (r >= n) {
      throw bad(spec, "rank " + r + " is outside the world of " + n + " ranks");
    }
    return r;
  }

  private static long nanos(String spec, String amount, String unit) {
    long a;
    try {
      a = Long.parseLong(amount);
    } catch (NumberFormatException e) {
      throw bad(spec, "duration " + amount + " is not a number");
    }
    long scale =
        switch (unit) {
          case "ns" -> 1L;
          case "us" -> 1_000L;
          case "ms" -> 1_000_000L;
          default -> 1_000_000_000L;
        };
    if (a > Long.MAX_VALUE / scale / 4 || a * scale > 60_000_000_000L) {
      throw bad(spec, "duration longer than 60s");
    }
    return a * scale;
  }

  private static ConfigException bad(String spec, String why) {
    return new ConfigException("fault", "'" + spec + "': " + why);
  }

  public List<Fault> faults() {
    return faults;
  }

  public boolean isEmpty() {
    return faults.isEmpty();
  }

  /** Delay before rank r enters each collective. */
  public long arrivalDelayNanos(int r) {
    return r < arrival.length ? arrival[r] : 0;
  }

  /** Delay between rank r's copy and its flag. */
  public long publishDelayNanos(int r) {
    return r < publish.length ? publish[r] : 0;
  }

  /** Delay with which peers' acks reach rank r. */
  public long ackDelayNanos(int r) {
    return r < ack.length ? ack[r] : 0;
  }

  /** Delay with which rank {@code from}'s flag reaches rank {@code to}. */
  public long linkDelayNanos(int from, int to) {
    return from < link.length ? link[from][to] : 0;
  }

  public boolean isDead(int r) {
    return r < dead.length && dead[r];
  }

  @Override
  public String toString() {
    return faults.isEmpty() ? "none" : faults.toString();
  }
}
