package io.collscope.nccl;

import io.collscope.bench.Classification;
import io.collscope.bench.Classification.Verdict;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The NCCL profiler plugin's overhead from the rounds the benchmark scripts print: {@code
 * nccl-overhead,BYTES,LABEL,US,...} per size and variant, µs per all-reduce of the slower rank, one
 * value per round, the variants' rounds interleaved in one process ({@code
 * dev/nccl_profiler_run.py}: labels {@code on} and {@code off}; {@code
 * dev/nccl_overhead_variants.py}: {@code none}, {@code coll}, {@code kch}, {@code ours:N}, ...).
 * Lines {@code nccl-overhead-separate,...} come from a process of their own (NCCL without any
 * plugin): never paired with the others' rounds. Each variant is classified against a baseline
 * label, with the benchmarks' paired rule ({@link Classification#classify}) when both ran in one
 * process and the unpaired rule otherwise, against the goals: at most 0.5 % at 1 MiB and
 * above, at most 200 ns per collective below.
 *
 * <p>{@code dev/nccl_overhead_direct.c} also prints, per variant, the median of its paired
 * per-round differences against its first variant with a 95 % sign-test interval ({@code
 * nccl-direct-paired,BYTES,LABEL,device,MEDIAN,LO,HI,SLOWER_ROUNDS,ROUNDS}). Where the rows'
 * baseline is that first variant, the interval decides whether the goal is met: the rule above asks
 * the baseline's own round-to-round spread to be within the goal, which a host-bound step at 4 KB
 * (12-18 µs, bimodal) never is, while the paired differences are tight (run 64: ±0.1 µs).
 *
 * <p>The harness's step is one collective on each of its ranks (its header's {@code devices N}),
 * all enqueued by one thread, so the absolute goal per step is {@link #SMALL_GOAL_US} times the
 * ranks: in a job with one rank per process each process enqueues, and pays for, its own rank's
 * collective only. The relative goal is the same either way (the step's time is that of N enqueues
 * too). With {@code --threads 1} (header {@code threads N}) each rank has its own enqueuing thread,
 * as in such a job, and the goal per step is one rank's.
 */
public final class NcclOverhead {

  /** Relative goal at and above {@link #LARGE_BYTES}. */
  public static final double LARGE_GOAL = 0.005;

  /** Absolute goal below {@link #LARGE_BYTES}, µs per collective. */
  public static final double SMALL_GOAL_US = 0.2;

  public static final long LARGE_BYTES = 1 << 20;

  /** The baseline label of dev/nccl_profiler_run.py's logs: the plugin's events off. */
  public static final String DEFAULT_BASELINE = "off";

  static final String PAIRED_PREFIX = "nccl-overhead,";
  static final String SEPARATE_PREFIX = "nccl-overhead-separate,";
  static final String DIRECT_PAIRED_PREFIX = "nccl-direct-paired,";
  static final String DIRECT_HEADER_PREFIX = "nccl-direct:";

  /**
   * The median of a variant's paired per-round differences from the harness's first variant, µs
   * (device time per step), and its 95 % sign-test interval; NaN bounds with too few rounds.
   */
  public record PairedDiff(
      double medianUs, double loUs, double hiUs, int slowerRounds, int rounds) {
    String describe() {
      return Double.isNaN(loUs)
          ? String.format(Locale.ROOT, "%+.3f", medianUs)
          : String.format(Locale.ROOT, "%+.3f [%+.3f, %+.3f]", medianUs, loUs, hiUs);
    }
  }

  /** One variant's comparison with the baseline at one size. */
  public record Row(
      long bytes,
      String variant,
      double[] on,
      double[] off,
      boolean paired,
      PairedDiff diff,
      int ranksPerStep) {
    public Row(long bytes, double[] on, double[] off) {
      this(bytes, "on", on, off, true, null, 1);
    }

    /** The goal for one value of the rounds: one step, {@link #ranksPerStep} collectives. */
    public double goalUs() {
      return bytes >= LARGE_BYTES
          ? LARGE_GOAL * Classification.median(off)
          : SMALL_GOAL_US * ranksPerStep;
    }

    public double deltaUs() {
      return Classification.median(on) - Classification.median(off);
    }

    public Verdict verdict() {
      return paired
          ? Classification.classify(on, off, goalUs())
          : Classification.classifyUnpaired(on, off, goalUs());
    }

    /**
     * Whether the goal is met: "yes" when the medians differ by no more than the goal and the
     * baseline's rounds are quiet enough to tell (their noise, {@link Classification#noise}, is
     * within the goal), "NO" when the variant is classified SLOWER by more than the goal, "not
     * shown" otherwise: a difference above the goal within the noise, or a median below the goal
     * that rounds this noisy cannot vouch for. With the harness's paired interval ({@link #diff}):
     * "yes" when its upper bound is within the goal, "NO" when its lower bound is above it, "not
     * shown" when it straddles the goal.
     */
    public String goalMet() {
      if (diff != null && !Double.isNaN(diff.loUs())) {
        if (diff.hiUs() <= goalUs()) return "yes";
        return diff.loUs() > goalUs() ? "NO" : "not shown";
      }
      if (deltaUs() <= goalUs()) return Classification.noise(off) <= goalUs() ? "yes" : "not shown";
      return verdict() == Verdict.SLOWER ? "NO" : "not shown";
    }
  }

  private record Series(String label, boolean separate, double[] values) {}

  private NcclOverhead() {}

  /** The rows of a log against {@link #DEFAULT_BASELINE}. */
  public static List<Row> parse(List<String> lines) {
    return parse(lines, DEFAULT_BASELINE);
  }

  /**
   * The rows of a log, by size, then by each variant other than the baseline in the order the log
   * first names them; other lines are skipped.
   */
  public static List<Row> parse(List<String> lines, String baseline) {
    Map<Long, Map<String, Series>> bySize = new TreeMap<>();
    Map<Long, Map<String, PairedDiff>> diffs = new TreeMap<>();
    int ranksPerStep = 1;
    for (String line : lines) {
      String l = line.strip();
      if (l.startsWith(DIRECT_HEADER_PREFIX)) {
        // its header, and other lines of the harness's ("nccl-direct: done") that name no devices
        ranksPerStep = directRanks(l, ranksPerStep);
        continue;
      }
      if (l.startsWith(DIRECT_PAIRED_PREFIX)) {
        String[] f = l.split(",");
        if (f.length != 9) throw new IllegalArgumentException("malformed paired line: " + l);
        if (!f[3].equals("device")) continue; // host time: classified from a renamed copy
        try {
          diffs
              .computeIfAbsent(Long.parseLong(f[1]), b -> new LinkedHashMap<>())
              .put(
                  f[2],
                  new PairedDiff(
                      Double.parseDouble(f[4]),
                      cDouble(f[5]),
                      cDouble(f[6]),
                      Integer.parseInt(f[7]),
                      Integer.parseInt(f[8])));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("malformed paired line: " + l, e);
        }
        continue;
      }
      boolean separate = l.startsWith(SEPARATE_PREFIX);
      if (!separate && !l.startsWith(PAIRED_PREFIX)) continue;
      String[] f = l.split(",");
      if (f.length < 4 || f[2].isEmpty()) {
        throw new IllegalArgumentException("malformed nccl-overhead line: " + l);
      }
      double[] v = new double[f.length - 3];
      long bytes;
      try {
        bytes = Long.parseLong(f[1]);
        for (int i = 3; i < f.length; i++) v[i - 3] = Double.parseDouble(f[i]);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("malformed nccl-overhead line: " + l, e);
      }
      Map<String, Series> byLabel = bySize.computeIfAbsent(bytes, b -> new LinkedHashMap<>());
      if (byLabel.put(f[2], new Series(f[2], separate, v)) != null) {
        throw new IllegalArgumentException("size " + bytes + " has two series " + f[2]);
      }
    }
    List<Row> rows = new ArrayList<>();
    for (Map.Entry<Long, Map<String, Series>> e : bySize.entrySet()) {
      Series base = e.getValue().get(baseline);
      if (base == null) {
        throw new IllegalArgumentException(
            "size " + e.getKey() + " has no " + baseline + " rounds (the baseline)");
      }
      // The harness pairs every variant with its first one: the one series of the size that has
      // no paired line of its own. Its intervals are used only when that is the rows' baseline.
      Map<String, PairedDiff> sizeDiffs = diffs.getOrDefault(e.getKey(), Map.of());
      List<String> unpairedLabels =
          e.getValue().values().stream()
              .filter(s -> !s.separate() && !sizeDiffs.containsKey(s.label()))
              .map(Series::label)
              .toList();
      boolean intervalsAgainstBase =
          !sizeDiffs.isEmpty() && unpairedLabels.equals(List.of(baseline));
      for (Series s : e.getValue().values()) {
        if (s == base) continue;
        boolean paired = !s.separate() && !base.separate();
        PairedDiff d = paired && intervalsAgainstBase ? sizeDiffs.get(s.label()) : null;
        rows.add(
            new Row(e.getKey(), s.label(), s.values(), base.values(), paired, d, ranksPerStep));
      }
    }
    return rows;
  }

  /**
   * The collectives each enqueuing thread of the harness issues per step, from its header ({@code
   * ... devices 2 threads 1 ...}: both ranks' from one thread; {@code threads 2} or {@code
   * processes 2}: a thread or a process per rank, so a step costs one rank's hooks); {@code
   * otherwise} for a line that names no devices.
   */
  private static int directRanks(String header, int otherwise) {
    String[] w = header.split("\\s+");
    int devices = -1;
    int enqueuers = 1; // threads per process x processes
    try {
      for (int i = 0; i + 1 < w.length; i++) {
        if (w[i].equals("devices")) devices = Integer.parseInt(w[i + 1]);
        if (w[i].equals("threads")) enqueuers *= Integer.parseInt(w[i + 1]);
        if (w[i].equals("processes")) enqueuers *= Integer.parseInt(w[i + 1]);
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("malformed harness header: " + header, e);
    }
    if (devices < 0) return otherwise;
    if (devices < 1 || enqueuers < 1 || devices % enqueuers != 0) {
      throw new IllegalArgumentException("malformed harness header: " + header);
    }
    return devices / enqueuers;
  }

  /** A number as C's printf writes it: "nan" (or "-nan") where the harness had too few rounds. */
  private static double cDouble(String s) {
    return s.equals("nan") || s.equals("-nan") ? Double.NaN : Double.parseDouble(s);
  }

  /** The markdown table (baseline: the label the rows were parsed against) and the rules. */
  public static String table(List<Row> rows, String baseline) {
    boolean withDiffs = rows.stream().anyMatch(r -> r.diff() != null);
    StringBuilder b =
        new StringBuilder(
            "| bytes | variant | "
                + baseline
                + " µs | variant µs | Δ µs | Δ % | goal µs | verdict |"
                + (withDiffs ? " paired Δ µs [95 %] |" : "")
                + " goal met |\n"
                + "|---:|---|---:|---:|---:|---:|---:|---|"
                + (withDiffs ? "---:|" : "")
                + "---|\n");
    boolean unpaired = false;
    for (Row r : rows) {
      double off = Classification.median(r.off());
      unpaired |= !r.paired();
      b.append(
          String.format(
              Locale.ROOT,
              "| %d | %s | %.3f (%.3f..%.3f) | %.3f (%.3f..%.3f) | %+.3f | %+.2f | %.3f | %s%s |%s %s"
                  + " |%n",
              r.bytes(),
              r.variant(),
              off,
              Classification.min(r.off()),
              Classification.max(r.off()),
              Classification.median(r.on()),
              Classification.min(r.on()),
              Classification.max(r.on()),
              r.deltaUs(),
              100 * r.deltaUs() / off,
              r.goalUs(),
              r.verdict(),
              r.paired() ? "" : " (unpaired)",
              !withDiffs ? "" : " " + (r.diff() == null ? "—" : r.diff().describe()) + " |",
              r.goalMet()));
    }
    b.append("\nminEffect = the goal; ").append(Classification.PAIRED_RULE).append('\n');
    if (unpaired) b.append("(unpaired) ").append(Classification.UNPAIRED_RULE).append('\n');
    if (withDiffs) {
      b.append(
          "paired Δ: the harness's median of per-round differences, device µs per step, with its"
              + " 95 % sign-test interval; goal met: yes when the interval's upper bound is within"
              + " the goal, NO when its lower bound is above it, not shown otherwise. One step is"
              + " one collective on each rank: below 1 MiB the goal µs is 200 ns times the"
              + " collectives each enqueuing thread issues per step (the harness header's devices"
              + " / (threads x processes)), since a job with one rank per process pays its own"
              + " rank's share.\n");
    }
    return b.toString();
  }

  /** The table against {@link #DEFAULT_BASELINE}. */
  public static String table(List<Row> rows) {
    return table(rows, DEFAULT_BASELINE);
  }
}
