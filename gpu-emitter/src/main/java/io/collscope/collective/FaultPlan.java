package io.collscope.collective;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
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
 *   <li>{@code slow-copy=R:D} — rank R's copy phase takes D longer (a memory-bound copy: cause
 *       SLOW_COPY_REDUCE);
 *   <li>{@code slow-all=D} — every link is D slower: every flag becomes visible to every peer D
 *       after it was published (a uniform slowdown with no single culprit);
 *   <li>{@code dead-rank=R} — rank R never runs and never reports; {@code dead-rank=R@T}: it stops
 *       running and reporting at T;
 *   <li>{@code reboot-rank=R@T} — rank R's emitter restarts at T: its counters start again from
 *       zero under a new incarnation (a new boot_id). CPU backend only.
 * </ul>
 *
 * <p>Timing: every spec takes an optional active interval and an optional fraction, {@code
 * SPEC[@START[-END]][~PERCENT]}, e.g. {@code slow-rank=3:300us@20s-60s}, {@code
 * slow-rank=3:2ms~10%}, {@code slow-rank=2:1ms@5s-15s~25%}. START and END are durations from the
 * start of the run (the backend's {@code start()}); END > START, no END means until the end. A
 * fault is active for the collective of sequence {@code seq} when the run time at the collective's
 * start is in [START, END) and, with {@code ~P%} (0 < P <= 100, decimals allowed), when {@link
 * #selects} picks {@code seq}: a fixed integer hash of the sequence and the fault's index in the
 * plan, so every backend (the kernel has the same hash) slows the same collectives. {@code
 * dead-rank} takes START only; {@code reboot-rank} requires START and takes nothing else.
 *
 * <p>Several faults are separated by commas or given as repeated flags; faults of one kind on one
 * rank add up. Durations take ns, us, ms or s. {@link #toString()} writes the plan back in this
 * grammar: parsing it gives the same plan.
 */
public final class FaultPlan {

  public enum Kind {
    SLOW_RANK("slow-rank"),
    SLOW_LINK("slow-link"),
    SLOW_PUBLISH("slow-publish"),
    SLOW_ACK("slow-ack"),
    SLOW_COPY("slow-copy"),
    SLOW_ALL("slow-all"),
    DEAD_RANK("dead-rank"),
    REBOOT_RANK("reboot-rank");

    /** The name in a spec, e.g. {@code slow-rank}. */
    public final String spec;

    Kind(String spec) {
      this.spec = spec;
    }
  }

  /** No END: active until the run ends. */
  public static final long FOREVER = Long.MAX_VALUE;

  /**
   * One injected fault. {@code rank} is the affected rank (-1 for SLOW_ALL), {@code from} the
   * sending rank of a SLOW_LINK (-1 otherwise); it is active in [{@code startNanos}, {@code
   * endNanos}) of run time, for {@code percent} of the collectives.
   */
  public record Fault(
      Kind kind, int rank, int from, long nanos, long startNanos, long endNanos, double percent) {

    /** An always-on fault: from the run's start to its end, every collective. */
    public Fault(Kind kind, int rank, int from, long nanos) {
      this(kind, rank, from, nanos, 0, FOREVER, 100);
    }

    /** Whether the run time {@code elapsedNanos} is in the fault's interval. */
    public boolean activeAt(long elapsedNanos) {
      return elapsedNanos >= startNanos && elapsedNanos < endNanos;
    }

    @Override
    public String toString() {
      StringBuilder b = new StringBuilder(kind.spec).append('=');
      switch (kind) {
        case SLOW_LINK -> b.append(from).append("->").append(rank).append(':').append(fmt(nanos));
        case SLOW_ALL -> b.append(fmt(nanos));
        case DEAD_RANK, REBOOT_RANK -> b.append(rank);
        default -> b.append(rank).append(':').append(fmt(nanos));
      }
      if (startNanos > 0 || kind == Kind.REBOOT_RANK) {
        b.append('@').append(fmt(startNanos));
      }
      if (endNanos != FOREVER) {
        b.append(startNanos > 0 ? "" : "@0s").append('-').append(fmt(endNanos));
      }
      if (percent < 100) {
        b.append('~')
            .append(BigDecimal.valueOf(percent).stripTrailingZeros().toPlainString())
            .append('%');
      }
      return b.toString();
    }
  }

  public static final FaultPlan NONE = new FaultPlan(List.of(), 0);

  private static final int[] NO_FAULTS = {};
  private static final String UNIT = "(ns|us|ms|s)";
  private static final Pattern RANK_DURATION = Pattern.compile("(\\d+):(\\d+)" + UNIT);
  private static final Pattern LINK_DURATION = Pattern.compile("(\\d+)->(\\d+):(\\d+)" + UNIT);
  private static final Pattern DURATION = Pattern.compile("(\\d+)" + UNIT);
  private static final Pattern RANK_ONLY = Pattern.compile("(\\d+)");
  private static final Pattern TIMING =
      Pattern.compile("(?:@(\\d+)" + UNIT + "(?:-(\\d+)" + UNIT + ")?)?(?:~(\\d+(?:\\.\\d+)?)%?)?");

  /** Longest fault delay. */
  private static final long MAX_DELAY_NANOS = 60_000_000_000L;

  /** Latest START or END: a week. */
  private static final long MAX_TIME_NANOS = 7L * 24 * 3600 * 1_000_000_000L;

  private final List<Fault> faults;
  private final Fault[] byIndex;
  private final long[] threshold; // by fault index: selects() threshold per 2^32
  // by rank: the indices of the faults that delay it, per kind
  private final int[][] arrival;
  private final int[][] publish;
  private final int[][] ack;
  private final int[][] copy;
  private final int[][] link; // faults on links into the rank: SLOW_LINK to it, and SLOW_ALL
  private final long[] deadAt;
  private final long[][] reboots;

  private FaultPlan(List<Fault> faults, int worldSize) {
    this.faults = List.copyOf(faults);
    this.byIndex = faults.toArray(new Fault[0]);
    this.threshold = new long[byIndex.length];
    List<List<Integer>> arr = lists(worldSize);
    List<List<Integer>> pub = lists(worldSize);
    List<List<Integer>> ak = lists(worldSize);
    List<List<Integer>> cp = lists(worldSize);
    List<List<Integer>> ln = lists(worldSize);
    List<List<Integer>> rb = lists(worldSize);
    deadAt = new long[worldSize];
    Arrays.fill(deadAt, FOREVER);
    for (int i = 0; i < byIndex.length; i++) {
      final int index = i;
      Fault f = byIndex[i];
      threshold[i] = threshold(f.percent);
      switch (f.kind) {
        case SLOW_RANK -> arr.get(f.rank).add(i);
        case SLOW_PUBLISH -> pub.get(f.rank).add(i);
        case SLOW_ACK -> ak.get(f.rank).add(i);
        case SLOW_COPY -> cp.get(f.rank).add(i);
        case SLOW_LINK -> ln.get(f.rank).add(i);
        case SLOW_ALL -> ln.forEach(l -> l.add(index));
        case DEAD_RANK -> deadAt[f.rank] = Math.min(deadAt[f.rank], f.startNanos);
        case REBOOT_RANK -> rb.get(f.rank).add(i);
      }
    }
    arrival = arrays(arr);
    publish = arrays(pub);
    ack = arrays(ak);
    copy = arrays(cp);
    link = arrays(ln);
    reboots = new long[worldSize][];
    for (int r = 0; r < worldSize; r++) {
      reboots[r] = rb.get(r).stream().mapToLong(i -> byIndex[i].startNanos).sorted().toArray();
    }
  }

  private static List<List<Integer>> lists(int n) {
    List<List<Integer>> l = new ArrayList<>(n);
    for (int r = 0; r < n; r++) l.add(new ArrayList<>());
    return l;
  }

  private static int[][] arrays(List<List<Integer>> lists) {
    int[][] a = new int[lists.size()][];
    for (int r = 0; r < a.length; r++) {
      List<Integer> l = lists.get(r);
      a[r] = l.isEmpty() ? NO_FAULTS : l.stream().mapToInt(Integer::intValue).toArray();
    }
    return a;
  }

  /**
   * Parses specs such as {@code "slow-rank=2:300us@5s-15s~25%,slow-link=3->6:1ms"}.
   *
   * @throws ConfigException with a one-line message naming the bad spec
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
    String rest = s.substring(eq + 1);
    int cut = rest.length();
    for (char c : new char[] {'@', '~'}) {
      int at = rest.indexOf(c);
      if (at >= 0) cut = Math.min(cut, at);
    }
    String value = rest.substring(0, cut);
    Fault f =
        switch (kind) {
          case "slow-rank", "slow-publish", "slow-ack", "slow-copy" -> {
            Matcher m = RANK_DURATION.matcher(value);
            if (!m.matches()) {
              throw bad(s, "expected " + kind + "=RANK:DURATION, e.g. " + kind + "=2:300us");
            }
            Kind k =
                switch (kind) {
                  case "slow-rank" -> Kind.SLOW_RANK;
                  case "slow-publish" -> Kind.SLOW_PUBLISH;
                  case "slow-ack" -> Kind.SLOW_ACK;
                  default -> Kind.SLOW_COPY;
                };
            yield new Fault(k, rank(s, m.group(1), n), -1, delay(s, m.group(2), m.group(3)));
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
            yield new Fault(Kind.SLOW_LINK, to, from, delay(s, m.group(3), m.group(4)));
          }
          case "slow-all" -> {
            Matcher m = DURATION.matcher(value);
            if (!m.matches()) {
              throw bad(s, "expected slow-all=DURATION, e.g. slow-all=100us");
            }
            yield new Fault(Kind.SLOW_ALL, -1, -1, delay(s, m.group(1), m.group(2)));
          }
          case "dead-rank", "reboot-rank" -> {
            Matcher m = RANK_ONLY.matcher(value);
            if (!m.matches()) {
              throw bad(
                  s,
                  kind.equals("dead-rank")
                      ? "expected dead-rank=RANK[@START]"
                      : "expected reboot-rank=RANK@TIME, e.g. reboot-rank=1@10s");
            }
            Kind k = kind.equals("dead-rank") ? Kind.DEAD_RANK : Kind.REBOOT_RANK;
            yield new Fault(k, rank(s, m.group(1), n), -1, 0);
          }
          default ->
              throw bad(
                  s,
                  "unknown fault '"
                      + kind
                      + "' (slow-rank, slow-link, slow-publish, slow-ack, slow-copy, slow-all,"
                      + " dead-rank, reboot-rank)");
        };
    return timed(s, f, rest.substring(cut));
  }

  /** Applies the {@code [@START[-END]][~PERCENT]} tail to {@code f}. */
  private static Fault timed(String s, Fault f, String tail) {
    Matcher m = TIMING.matcher(tail);
    if (!m.matches()) {
      throw bad(
          s,
          "expected [@START[-END]][~PERCENT] after the fault, e.g. @5s-15s~25%, got '"
              + tail
              + "'");
    }
    boolean hasStart = m.group(1) != null;
    long start = hasStart ? time(s, m.group(1), m.group(2)) : 0;
    long end = m.group(3) != null ? time(s, m.group(3), m.group(4)) : FOREVER;
    double percent = 100;
    if (m.group(5) != null) {
      BigDecimal p = new BigDecimal(m.group(5));
      if (p.signum() <= 0 || p.compareTo(BigDecimal.valueOf(100)) > 0) {
        throw bad(s, "percent must be in (0,100], got " + m.group(5));
      }
      percent = p.doubleValue();
    }
    if (end != FOREVER && end <= start) {
      throw bad(s, "END must be after START");
    }
    if (f.kind() == Kind.DEAD_RANK && (end != FOREVER || m.group(5) != null)) {
      throw bad(s, "dead-rank takes only @START (a dead rank stays dead, every collective)");
    }
    if (f.kind() == Kind.REBOOT_RANK && (!hasStart || end != FOREVER || m.group(5) != null)) {
      throw bad(s, "reboot-rank takes exactly @TIME, e.g. reboot-rank=1@10s");
    }
    return new Fault(f.kind(), f.rank(), f.from(), f.nanos(), start, end, percent);
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

  private static long delay(String spec, String amount, String unit) {
    long d = nanos(spec, amount, unit, MAX_DELAY_NANOS);
    if (d < 0) {
      throw bad(spec, "duration longer than 60s");
    }
    return d;
  }

  private static long time(String spec, String amount, String unit) {
    long t = nanos(spec, amount, unit, MAX_TIME_NANOS);
    if (t < 0) {
      throw bad(spec, "time " + amount + unit + " is later than a week");
    }
    return t;
  }

  /** The duration in nanoseconds, or -1 when it is above {@code max}. */
  private static long nanos(String spec, String amount, String unit, long max) {
    long a;
    try {
      a = Long.parseLong(amount);
    } catch (NumberFormatException e) {
      return -1; // more digits than a long holds
    }
    long scale =
        switch (unit) {
          case "ns" -> 1L;
          case "us" -> 1_000L;
          case "ms" -> 1_000_000L;
          default -> 1_000_000_000L;
        };
    if (a > max / scale) {
      return -1;
    }
    return a * scale;
  }

  /** A duration in the largest unit that writes it exactly, e.g. {@code 300us}. */
  static String fmt(long nanos) {
    if (nanos == 0) return "0s";
    if (nanos % 1_000_000_000L == 0) return nanos / 1_000_000_000L + "s";
    if (nanos % 1_000_000L == 0) return nanos / 1_000_000L + "ms";
    if (nanos % 1_000L == 0) return nanos / 1_000L + "us";
    return nanos + "ns";
  }

  private static ConfigException bad(String spec, String why) {
    return new ConfigException("fault", "'" + spec + "': " + why);
  }

  // ---- the per-sequence pattern, shared with the kernel (osar.cu: fault_mix) ----------------

  /**
   * splitmix64 of the sequence offset by the fault's index: the kernel's {@code fault_mix} is the
   * same function, and FaultPlanTest pins values of it.
   */
  public static long mix(long seq, int faultIndex) {
    long z = seq + (faultIndex + 1L) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** {@code percent} of 2^32, rounded: the kernel compares the hash's upper half with it. */
  public static long threshold(double percent) {
    return percent >= 100 ? 1L << 32 : Math.round(percent / 100 * 4294967296.0);
  }

  /**
   * Whether the fault of index {@code faultIndex} with fraction {@code percent} hits the collective
   * of sequence {@code seq}: the upper 32 bits of {@link #mix} below {@link #threshold}. Every
   * backend decides with this one function (the kernel with its C twin).
   */
  public static boolean selects(long seq, int faultIndex, double percent) {
    return (mix(seq, faultIndex) >>> 32) < threshold(percent);
  }

  // ---- queries ----------------------------------------------------------------------------

  public List<Fault> faults() {
    return faults;
  }

  public boolean isEmpty() {
    return faults.isEmpty();
  }

  /** Whether fault {@code i} hits the collective {@code seq} started at run time {@code t}. */
  private boolean hits(int i, long seq, long t) {
    Fault f = byIndex[i];
    return f.activeAt(t) && (mix(seq, i) >>> 32) < threshold[i];
  }

  private long sum(int[][] byRank, int r, long seq, long t) {
    if (r >= byRank.length) return 0;
    long d = 0;
    for (int i : byRank[r]) {
      if (hits(i, seq, t)) d += byIndex[i].nanos;
    }
    return d;
  }

  /**
   * Delay before rank r enters collective {@code seq}, started {@code elapsedNanos} into the run.
   */
  public long arrivalDelayNanos(int r, long seq, long elapsedNanos) {
    return sum(arrival, r, seq, elapsedNanos);
  }

  /** Delay between rank r's copy and its flag. */
  public long publishDelayNanos(int r, long seq, long elapsedNanos) {
    return sum(publish, r, seq, elapsedNanos);
  }

  /** Delay with which peers' acks reach rank r. */
  public long ackDelayNanos(int r, long seq, long elapsedNanos) {
    return sum(ack, r, seq, elapsedNanos);
  }

  /** Extra time of rank r's copy phase. */
  public long copyDelayNanos(int r, long seq, long elapsedNanos) {
    return sum(copy, r, seq, elapsedNanos);
  }

  /** Delay with which rank {@code from}'s flag reaches rank {@code to} (slow-link and slow-all). */
  public long linkDelayNanos(int from, int to, long seq, long elapsedNanos) {
    if (to >= link.length || from == to) return 0;
    long d = 0;
    for (int i : link[to]) {
      Fault f = byIndex[i];
      if ((f.kind == Kind.SLOW_ALL || f.from == from) && hits(i, seq, elapsedNanos)) {
        d += f.nanos;
      }
    }
    return d;
  }

  /** Whether any link into rank {@code to} is ever slowed: else its link delays are all 0. */
  public boolean slowsLinksTo(int to) {
    return to < link.length && link[to].length > 0;
  }

  /** Dead from the start: never runs, never reports. */
  public boolean isDead(int r) {
    return deadAtNanos(r) == 0;
  }

  /** Whether rank r is dead at run time {@code elapsedNanos}. */
  public boolean isDeadAt(int r, long elapsedNanos) {
    return elapsedNanos >= deadAtNanos(r);
  }

  /** The run time at which rank r dies; {@link #FOREVER} if it does not. */
  public long deadAtNanos(int r) {
    return r < deadAt.length ? deadAt[r] : FOREVER;
  }

  /** The run times at which rank r's emitter restarts, ascending. */
  public long[] rebootsNanos(int r) {
    return r < reboots.length ? reboots[r].clone() : new long[0];
  }

  /** Whether any fault is a reboot-rank. */
  public boolean hasReboots() {
    return faults.stream().anyMatch(f -> f.kind == Kind.REBOOT_RANK);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FaultPlan p && p.faults.equals(faults);
  }

  @Override
  public int hashCode() {
    return faults.hashCode();
  }

  /** The plan in the {@code --inject} grammar, comma-separated ({@code none} when empty). */
  @Override
  public String toString() {
    if (faults.isEmpty()) return "none";
    StringBuilder b = new StringBuilder();
    for (Fault f : faults) {
      if (b.length() > 0) b.append(',');
      b.append(f);
    }
    return b.toString();
  }
}
