package io.collscope.nccl;

import io.collscope.bench.Classification;
import io.collscope.bench.Classification.Verdict;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The NCCL profiler plugin's overhead from the rounds {@code dev/nccl_profiler_run.py} prints
 * ({@code nccl-overhead,BYTES,on|off,US,...}: per round, µs per all-reduce of the slower rank, the
 * plugin's events on and off in the same process, rounds interleaved), classified with the
 * benchmarks' paired rule ({@link Classification#classify}) against the goals: at most 0.5
 * % at 1 MiB and above, at most 200 ns per collective below.
 */
public final class NcclOverhead {

  /** Relative goal at and above {@link #LARGE_BYTES}. */
  public static final double LARGE_GOAL = 0.005;

  /** Absolute goal below {@link #LARGE_BYTES}, µs per collective. */
  public static final double SMALL_GOAL_US = 0.2;

  public static final long LARGE_BYTES = 1 << 20;

  /** One size's comparison. */
  public record Row(long bytes, double[] on, double[] off) {
    public double goalUs() {
      return bytes >= LARGE_BYTES ? LARGE_GOAL * Classification.median(off) : SMALL_GOAL_US;
    }

    public double deltaUs() {
      return Classification.median(on) - Classification.median(off);
    }

    public Verdict verdict() {
      return Classification.classify(on, off, goalUs());
    }

    /**
     * Whether the goal is met: "yes" when the medians differ by no more than the goal, "NO" when
     * the plugin is classified SLOWER by more than it, "not shown" when the difference is above the
     * goal but within the rounds' noise.
     */
    public String goalMet() {
      if (deltaUs() <= goalUs()) return "yes";
      return verdict() == Verdict.SLOWER ? "NO" : "not shown";
    }
  }

  private NcclOverhead() {}

  /** The rows of a log, by size; other lines are skipped. */
  public static List<Row> parse(List<String> lines) {
    Map<Long, double[][]> bySize = new TreeMap<>();
    for (String line : lines) {
      String l = line.strip();
      if (!l.startsWith("nccl-overhead,")) continue;
      String[] f = l.split(",");
      if (f.length < 4 || !(f[2].equals("on") || f[2].equals("off"))) {
        throw new IllegalArgumentException("malformed nccl-overhead line: " + l);
      }
      long bytes = Long.parseLong(f[1]);
      double[] v = new double[f.length - 3];
      for (int i = 3; i < f.length; i++) v[i - 3] = Double.parseDouble(f[i]);
      bySize.computeIfAbsent(bytes, b -> new double[2][])[f[2].equals("on") ? 0 : 1] = v;
    }
    List<Row> rows = new ArrayList<>();
    for (Map.Entry<Long, double[][]> e : bySize.entrySet()) {
      double[][] v = e.getValue();
      if (v[0] == null || v[1] == null) {
        throw new IllegalArgumentException(
            "size " + e.getKey() + " has only its " + (v[0] == null ? "off" : "on") + " rounds");
      }
      rows.add(new Row(e.getKey(), v[0], v[1]));
    }
    return rows;
  }

  /** The markdown table and the rule under it. */
  public static String table(List<Row> rows) {
    StringBuilder b =
        new StringBuilder(
            "| bytes | plugin off µs | plugin on µs | Δ µs | Δ % | goal µs | verdict | goal met |\n"
                + "|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (Row r : rows) {
      double off = Classification.median(r.off());
      b.append(
          String.format(
              Locale.ROOT,
              "| %d | %.3f (%.3f..%.3f) | %.3f (%.3f..%.3f) | %+.3f | %+.2f | %.3f | %s | %s |%n",
              r.bytes(),
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
              r.goalMet()));
    }
    b.append("\nminEffect = the goal; ").append(Classification.PAIRED_RULE).append('\n');
    return b.toString();
  }
}
