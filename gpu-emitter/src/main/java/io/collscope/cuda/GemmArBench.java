package io.collscope.cuda;

import static io.collscope.bench.Classification.max;
import static io.collscope.bench.Classification.median;
import static io.collscope.bench.Classification.min;

import io.collscope.bench.Classification;
import io.collscope.bench.Classification.Verdict;
import io.collscope.counters.CounterBlock;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.model.Phase;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code collscope bench gemm-ar}: the fused FP8 GEMM + all-reduce, throttled against unthrottled
 * (interleaved rounds, the first of a round alternating), and the program the dispatcher routes the
 * shape to against {@code torch._scaled_mm} + NCCL all-reduce ({@code dev/gemm_ar_torch_bench.py},
 * a separate program: unpaired). Every round also reads each GPU's SM clock right after its sample;
 * a case with a round below the floor is INCONCLUSIVE whatever its times say. After the rounds, two
 * instrumented calls of each program give its drift (lead of the CTAs over the grid's begun tiles)
 * and its phases.
 */
public final class GemmArBench {
  private GemmArBench() {}

  public static final int DEFAULT_ROUNDS = 9;
  public static final double DEFAULT_MIN_EFFECT_PCT = 2.0;
  public static final int DEFAULT_CLOCK_FLOOR_MHZ = 1500;
  public static final long BUDGET_NS = 5_000_000_000L;

  /** A sample runs this long at least, so launch gaps and event resolution are noise-free. */
  private static final double SAMPLE_US = 60_000;

  /** torch's rounds by "M,N,K", from the torch-rounds lines of a log. */
  public static Map<String, double[]> readTorch(Path log, int world) throws IOException {
    Map<String, double[]> m = new HashMap<>();
    for (String line : Files.readAllLines(log)) {
      if (!line.startsWith("torch-rounds,")) continue;
      String[] f = line.split(",");
      if (Integer.parseInt(f[1]) != world) continue;
      double[] v = new double[f.length - 5];
      for (int i = 0; i < v.length; i++) v[i] = Double.parseDouble(f[5 + i]);
      m.put(f[2] + "," + f[3] + "," + f[4], v);
    }
    return m;
  }

  public static int run(
      PrintStream out,
      int world,
      List<GemmAllReduce.Shape> shapes,
      int rounds,
      double minEffectPct,
      int clockFloorMhz,
      Map<String, double[]> torch) {
    out.printf(
        Locale.ROOT,
        "gemm-ar bench: %d ranks, %d interleaved rounds, min effect %.1f%%, SM clock floor %d MHz,"
            + " main loop %s%n",
        world,
        rounds,
        minEffectPct,
        clockFloorMhz,
        // which programs ran: logs of different main loops are otherwise told apart by name only
        GemmArModule.MAIN_LOOP);
    out.println(
        "| M | N | K/rank | tiles | grid | dispatched | unthrottled us | throttled us | unthr/thr | throttled vs unthrottled | instrumented unthr us | instr overhead | instrumented vs unthrottled | torch+NCCL us | torch/dispatched | dispatched vs torch | lead max unthr / thr (rounds) | lead p99 unthr / thr | stalls/call thr | min SM MHz | check |");
    out.println(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    int failures = 0;
    List<String> notes = new java.util.ArrayList<>();
    for (GemmAllReduce.Shape s : shapes) {
      try {
        failures +=
            runShape(out, notes, world, s, rounds, minEffectPct, clockFloorMhz, torch) ? 0 : 1;
      } catch (RuntimeException e) {
        out.printf("| %d | %d | %d | failed: %s |%n", s.m(), s.n(), s.k(), e);
        failures++;
      }
      out.flush();
    }
    out.println();
    notes.forEach(out::println);
    out.println(
        "throttled vs unthrottled, instrumented vs unthrottled (the instrumented program is the one"
            + " `emit` runs): "
            + Classification.PAIRED_RULE);
    out.println("dispatched vs torch: " + Classification.UNPAIRED_RULE);
    out.println(
        "lead: (t - begun) / grid at each tile's start, t the tile's index in the static order and begun the grid's tiles begun so far this call; max and p99 from the quarter-round histogram of two instrumented calls (upper edge of the bucket).");
    return failures == 0 ? 0 : 1;
  }

  private static boolean runShape(
      PrintStream out,
      List<String> notes,
      int world,
      GemmAllReduce.Shape s,
      int rounds,
      double minEffectPct,
      int clockFloorMhz,
      Map<String, double[]> torch) {
    GemmArDispatch.Lever lever =
        GemmArDispatch.route(
            new GemmArDispatch.Key(world, s.m(), s.n(), s.k(), GemmArDispatch.Capacity.FULL));
    try (GemmAllReduce g =
        GemmAllReduce.open(
            world, s, lever.groupM(), GemmAllReduce.defaultDevices(world), 40, BUDGET_NS)) {
      GemmArReference.Inputs[] in = new GemmArReference.Inputs[world];
      for (int r = 0; r < world; r++) {
        in[r] = GemmArReference.random(s, r, 7);
        g.upload(r, in[r].a(), in[r].w(), in[r].sa(), in[r].sw());
      }
      // warm up both, and check both on every rank (sampled rows)
      String check = "ok";
      for (boolean thr : new boolean[] {false, true}) {
        g.launch(thr, false);
        g.synchronize();
        for (int r = 0; r < world && check.equals("ok"); r++) {
          if (g.abortedAt(r) != 0) check = "rank " + r + " aborted";
          for (int row : new int[] {0, s.m() / 3, s.m() - 1}) {
            String bad = GemmArReference.check(s, in, row, g.outputRows(r, row, 1));
            if (bad != null && check.equals("ok")) check = (thr ? "thr " : "unthr ") + bad;
          }
        }
      }
      double first = g.timeCalls(false, false, 2);
      int calls = (int) Math.max(3, Math.ceil(SAMPLE_US / first));
      // three variants per round, the order rotated: unthrottled, throttled, and the
      // unthrottled program instrumented (what `emit --gemm-ar` runs), its counters included
      double[] u = new double[rounds];
      double[] t = new double[rounds];
      double[] ui = new double[rounds];
      long minClock = Long.MAX_VALUE;
      for (int i = 0; i < rounds; i++) {
        for (int j = 0; j < 3; j++) {
          int v = (i + j) % 3;
          double us = g.timeCalls(v == 1, v == 2, calls);
          for (long mhz : g.clocksMhz()) minClock = Math.min(minClock, mhz);
          if (v == 0) u[i] = us;
          else if (v == 1) t[i] = us;
          else ui[i] = us;
        }
      }
      double[][] drift = new double[2][];
      long stalls = 0;
      for (int v = 0; v < 2; v++) {
        boolean thr = v == 1;
        g.publish();
        g.synchronize();
        Counters[] before = read(g);
        g.launch(thr, true);
        g.launch(thr, true);
        g.publish();
        g.synchronize();
        Counters[] after = read(g);
        long[] hist = new long[CounterBlock.EXT_LEAD_BUCKETS];
        for (int r = 0; r < world; r++) {
          long[] a = after[r].leadHistogram(), b = before[r].leadHistogram();
          for (int k = 0; k < hist.length; k++) hist[k] += a[k] - b[k];
        }
        drift[v] = new double[] {leadQuantile(hist, 1.0), leadQuantile(hist, 0.99)};
        if (thr) {
          for (int r = 0; r < world; r++)
            stalls +=
                after[r].ext(CounterBlock.EXT_THROTTLE_STALLS)
                    - before[r].ext(CounterBlock.EXT_THROTTLE_STALLS);
          stalls /= 2L * world;
          notes.add(phases(s, "throttled", before, after, g));
        } else {
          notes.add(phases(s, "unthrottled", before, after, g));
        }
      }
      boolean clockOk = minClock >= clockFloorMhz;
      Verdict tv =
          clockOk
              ? Classification.classify(t, u, median(u) * minEffectPct / 100)
              : Verdict.INCONCLUSIVE;
      Verdict iv =
          clockOk
              ? Classification.classify(ui, u, median(u) * minEffectPct / 100)
              : Verdict.INCONCLUSIVE;
      double[] dispatched = lever.throttled() ? t : u;
      double[] base = torch.get(s.m() + "," + s.n() + "," + s.k());
      String torchCols;
      if (base == null) {
        torchCols = "- | - | -";
      } else {
        Verdict dv =
            clockOk
                ? Classification.classifyUnpaired(
                    dispatched, base, median(base) * minEffectPct / 100)
                : Verdict.INCONCLUSIVE;
        torchCols =
            String.format(
                Locale.ROOT, "%s | %.3fx | %s", range(base), median(base) / median(dispatched), dv);
      }
      out.printf(
          Locale.ROOT,
          "| %d | %d | %d | %d | %d | %s | %s | %s | %.3fx | %s%s | %s | %+.1f%% | %s | %s | %.2f / %.2f | %.2f / %.2f | %d | %d | %s |%n",
          s.m(),
          s.n(),
          s.k(),
          s.tiles(),
          g.grid(),
          lever.program(),
          range(u),
          range(t),
          median(u) / median(t),
          tv,
          clockOk ? "" : " (clock " + minClock + " MHz < floor)",
          range(ui),
          100 * (median(ui) / median(u) - 1),
          iv,
          torchCols,
          drift[0][0],
          drift[1][0],
          drift[0][1],
          drift[1][1],
          stalls,
          minClock,
          check);
      return check.equals("ok");
    }
  }

  private static Counters[] read(GemmAllReduce g) {
    Counters[] c = new Counters[g.worldSize()];
    try {
      for (int r = 0; r < c.length; r++) c[r] = new SnapshotReader(g.block(r)).read();
    } catch (io.collscope.counters.TornSnapshotException e) {
      throw new IllegalStateException(e);
    }
    return c;
  }

  /** The upper edge, in rounds, of the bucket holding quantile q of the lead histogram. */
  static double leadQuantile(long[] hist, double q) {
    long total = 0;
    for (long h : hist) total += h;
    if (total == 0) return 0;
    long need = (long) Math.ceil(q * total);
    long seen = 0;
    for (int b = 0; b < hist.length; b++) {
      seen += hist[b];
      if (seen >= need) return (b + 1) / (double) CounterBlock.EXT_LEAD_PER_ROUND;
    }
    return hist.length / (double) CounterBlock.EXT_LEAD_PER_ROUND;
  }

  private static String phases(
      GemmAllReduce.Shape s, String what, Counters[] before, Counters[] after, GemmAllReduce g) {
    StringBuilder b = new StringBuilder();
    for (int r = 0; r < before.length; r++) {
      double cps = g.cyclesPerSecond(r) / 1e6; // cycles per us
      double calls = after[r].calls() - before[r].calls();
      b.append(String.format(Locale.ROOT, " rank %d:", r));
      for (Phase p : Phase.values()) {
        b.append(
            String.format(
                Locale.ROOT,
                " %s %.0f",
                p.name().toLowerCase(Locale.ROOT),
                (after[r].cycles(p) - before[r].cycles(p)) / calls / cps));
      }
    }
    return String.format(
        Locale.ROOT,
        "phases %s %s (us per call, mean over CTAs; guard=throttle, copy=GEMM, publish=push partials, wait=cross-rank, reduce=sum+store):%s%n",
        s,
        what,
        b);
  }

  private static String range(double[] v) {
    return String.format(Locale.ROOT, "%.1f (%.1f..%.1f)", median(v), min(v), max(v));
  }

  /** Parses "MxNxK" (K per rank). */
  public static GemmAllReduce.Shape shape(String s) {
    String[] f = s.toLowerCase(Locale.ROOT).split("x");
    if (f.length != 3) throw new IllegalArgumentException("shape must be MxNxK, got " + s);
    return new GemmAllReduce.Shape(
        Integer.parseInt(f[0].trim()),
        Integer.parseInt(f[1].trim()),
        Integer.parseInt(f[2].trim()));
  }
}
