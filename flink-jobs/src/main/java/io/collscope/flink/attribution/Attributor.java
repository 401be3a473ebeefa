package io.collscope.flink.attribution;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;

/**
 * The attribution rule, as a pure function of one communicator's rank windows (and, for uniform
 * slowdowns, of its {@link WindowBaseline}).
 *
 * <p><b>The delay matrix.</b> {@code L[r][p]}: mean lateness per collective of peer p as rank r saw
 * it — from r's publication until p's flag was visible. Each late peer shows its whole lateness
 * whatever the others did, so two or three stragglers each get a column of their own (a bill split
 * between them, as the wait itself is, would hide all but the last). {@code T[r][p]} is the same
 * cell's p99 from its lateness histogram: the tail a peer that is slow in one collective out of ten
 * leaves while its mean hides it. Counters of emitters before snapshot version 4 have no lateness:
 * their per-peer waits stand in for {@code L}, and there are no tails.
 *
 * <p><b>Noise and threshold.</b> The floor is the lower quartile of the off-diagonal cells (with
 * two ranks, the smaller cell: one direction is always clean unless both are slow). The noise is
 * how far a typical cell's p99 lies above its mean, the lower quartile over cells (the smaller,
 * with two ranks): measured in this window, so jitter of a loaded CPU host raises it and a quiet
 * GPU keeps it near zero. A cell is high when it exceeds the floor by the window's threshold — the
 * largest of {@link Thresholds#absFloorUs()}, {@link Thresholds#relExcess()} of the collective's
 * own cost and {@link Thresholds#noiseFactor()} × the noise ({@link Thresholds#minExcessUs()}
 * without tails) — and is at least {@link Thresholds#cellFactor()} times the floor. The
 * collective's own cost is the smallest mean time per collective over the present ranks: the last
 * to arrive waits least, so its time is what the collective costs without waiting on anyone.
 *
 * <ul>
 *   <li><b>Slow rank p</b>: most of column p is high (every peer waits on p) and p itself waits
 *       little — the straggler arrives last and waits least. Several columns can pass at once: each
 *       is its own finding. Its own phases say why: the cause ({@link Phase#blame()}) whose phases
 *       exceed its peers' most, e.g. {@code guard} → RING_FULL, {@code publish} → SLOW_PUBLISH,
 *       {@code copy+reduce} → SLOW_COPY_REDUCE; none → ARRIVED_LATE.
 *   <li><b>Intermittently slow rank p</b>: the same column test on the tails {@code T} instead of
 *       the means, for a column whose means did not pass: p is late in a few collectives only
 *       (three ranks or more: with two, one cell's p99 is one peer's hiccup, not a column). It must
 *       also have gated ({@link Thresholds#minGatedShare()}) some of its peers' collectives: the
 *       ones it was slow in.
 *   <li><b>Slow link p→r</b>: one cell (r, p) high that stands out of its column (the other ranks
 *       do not wait on p). Its receiver r then arrives late at the next collective, so column r is
 *       high too, but r waits as much as it is waited on: a victim, not a culprit.
 *   <li><b>Uniform slowdown</b>, when no other finding explains the window: the collective's own
 *       cost exceeds its baseline by {@link Thresholds#uniformRel()}, by the absolute floor and by
 *       four of the baseline's own window-to-window standard deviations. No rank is later than
 *       another, so the matrix is quiet; the cause is that of the phase that grew most (LINK when
 *       it is the wait: every path is slower).
 * </ul>
 *
 * A rank missing from the window has no row and no column in that matrix, but the present ranks'
 * rows still show what they waited on it:
 *
 * <ul>
 *   <li><b>Silent rank s</b>: s is missing, yet the present ranks' column on s passes the slow-rank
 *       column test against the same floor. There is no row test: s has no row. If the ranks that
 *       waited on it counted timeouts, their waits on it passed their budget (TIMED_OUT: it died or
 *       hangs); otherwise it keeps up, late, but its reporter is gone (NOT_REPORTING). A missing
 *       rank whose column is noise (its window simply has no data) is only listed as missing.
 *   <li>A collective that times out in {@code guard} waited for a peer's ack of a ring slot that
 *       never came, and {@code guard} is not billed per peer; once timed-out collectives go
 *       unacked, every later one times out there, with no per-peer wait at all. So a present rank
 *       that counted timeouts has its guard time billed in equal shares to the missing ranks — as
 *       the emitter bills a timed-out wait in equal shares to the peers it never saw.
 *   <li><b>Aborts are not culprits</b>: a timeout abandons the collective at a different moment on
 *       each rank, so the present ranks fall out of step and wait on each other for a while. Those
 *       waits are a small share of the timeouts that caused them, so in a window with a TIMED_OUT
 *       silent rank a finding against present ranks must also reach {@link Thresholds#abortShare()}
 *       of the silent rank's excess.
 * </ul>
 *
 * Each culprit is one {@link Finding}, strongest first; several make the verdict MULTIPLE. A
 * finding's confidence grows with how far its excess stands above the threshold and with the share
 * of peers that see it, and shrinks when the ranks counted fewer than {@link Thresholds#minCalls()}
 * collectives in the window.
 */
public final class Attributor {

  /**
   * A rank that gates nearly every collective while its mean lateness stays under the threshold is
   * last by a small margin every time (e.g. the last one launched on a shared device), not slow now
   * and then: an intermittent culprit gates the collectives it is slow in and shares the rest
   * (about half of them with two ranks).
   */
  static final double INTERMITTENT_MAX_GATED = 0.9;

  /** How many of its baseline's standard deviations a uniform slowdown's excess must reach. */
  static final double UNIFORM_SPREADS = 4.0;

  /** How many thresholds a tail cell's excess must reach (a mean cell's: one). */
  static final double TAIL_MARGIN = 2.0;

  private Attributor() {}

  /** Attributes without a baseline: no uniform slowdown can be told. */
  public static Attribution attribute(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t) {
    return attribute(
        communicator,
        startMs,
        endMs,
        windows,
        t,
        WindowBaseline.of(AttributionFunction.BASELINE_WINDOWS));
  }

  public static Attribution attribute(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t,
      WindowBaseline baseline) {
    Matrix x = Matrix.of(windows);
    List<RankPhases> table = new ArrayList<>();
    int maxWaitRank = -1;
    double maxWait = 0;
    for (int r : x.present) {
      RankWindow w = x.byRank.get(r);
      RankPhases row = new RankPhases();
      row.setRank(r);
      row.setCalls(w.getCalls());
      for (Phase p : Phase.values()) row.put(p.meanUsField(), meanUs(w, p));
      row.setP99Us(w.getP99Us());
      row.setCtaLeadMaxRounds(w.getCtaLeadMaxRounds());
      row.setCtaLeadP99Rounds(w.getCtaLeadP99Rounds());
      row.setThrottleStallsPerCall(w.getThrottleStallsPerCall());
      table.add(row);
      if (maxWaitRank < 0 || w.getWaitMeanUs() > maxWait) {
        maxWait = w.getWaitMeanUs();
        maxWaitRank = r;
      }
    }
    double threshold =
        x.tails
            ? Math.max(t.absFloorUs(), Math.max(t.relExcess() * x.cost, t.noiseFactor() * x.noise))
            : Math.max(t.minExcessUs(), t.relExcess() * x.cost);
    Judge judge = new Judge(x, t, threshold);

    List<Finding> findings = judge.silentRanks();
    double timedOutExcess =
        findings.stream()
            .filter(f -> f.getCause() == Cause.TIMED_OUT)
            .mapToDouble(Finding::getExcessWaitUs)
            .max()
            .orElse(0);
    // One rank waits on no present peer: only silent ranks can be named.
    if (x.k >= 2) {
      for (Finding f : judge.slowRanksAndLinks()) {
        if (f.getExcessWaitUs() >= t.abortShare() * timedOutExcess) findings.add(f);
      }
    }
    double baselineUs =
        baseline.matches(x.bytesPerCall) && baseline.ready(t.baselineWindows())
            ? baseline.median()
            : 0;
    // Only with no culprit: a slow rank or link makes the whole collective slower too.
    if (baselineUs > 0 && x.k >= 1 && findings.isEmpty()) {
      Finding u = judge.uniformSlowdown(baseline, baselineUs);
      if (u != null) findings.add(u);
    }
    findings.sort(Comparator.comparingDouble(Finding::getExcessWaitUs).reversed());

    double confidence;
    if (!findings.isEmpty()) {
      confidence = findings.get(0).getConfidence();
    } else if (x.k < 2) {
      // With the others missing there is nothing to compare.
      confidence = x.n == 1 ? 1.0 : 0.0;
    } else {
      double maxExcess = 0;
      for (int i = 0; i < x.k; i++) {
        for (int j = 0; j < x.k; j++) if (i != j) maxExcess = Math.max(maxExcess, x.excess(i, j));
      }
      confidence = clamp(1.0 - maxExcess / (2 * threshold)) * x.callsFactor(t);
    }
    return Attribution.newBuilder()
        .setCluster(communicator.cluster())
        .setJob(communicator.job())
        .setCommunicator(communicator.communicator())
        .setCollective(collective(windows))
        .setWindowStart(Instant.ofEpochMilli(startMs))
        .setWindowEnd(Instant.ofEpochMilli(endMs))
        .setWorldSize(x.n)
        .setRanks(table)
        .setMaxWaitRank(maxWaitRank)
        .setMaxWaitMeanUs(maxWait)
        .setMissingRanks(x.missing)
        .setVerdict(verdict(findings))
        .setFindings(findings)
        .setConfidence(confidence)
        .setCollectiveUs(x.cost)
        .setBytesPerCall(x.bytesPerCall)
        .setBaselineUs(baselineUs)
        .setThresholdUs(threshold)
        .setNoiseUs(x.noise)
        .build();
  }

  /**
   * The collective's own cost in a window, and the median of each phase over the present ranks:
   * what {@link WindowBaseline} remembers of a window without findings.
   */
  public static double[] phaseMedians(List<RankWindow> windows) {
    Matrix x = Matrix.of(windows);
    double[] m = new double[Phase.COUNT];
    for (Phase p : Phase.values()) m[p.ordinal()] = x.median(w -> meanUs(w, p), -1);
    return m;
  }

  /**
   * The collective the window's ranks ran: every rank of a communicator runs the same one, so the
   * first non-empty name (empty when all windows predate RankWindow version 4).
   */
  static String collective(List<RankWindow> windows) {
    for (RankWindow w : windows) {
      CharSequence c = w.getCollective();
      if (c != null && c.length() > 0) return c.toString();
    }
    return "";
  }

  /** The collective's own cost (µs per collective) and bytes per call of a window. */
  public static double cost(List<RankWindow> windows) {
    return Matrix.of(windows).cost;
  }

  public static long bytesPerCall(List<RankWindow> windows) {
    return Matrix.of(windows).bytesPerCall;
  }

  /**
   * One window's delay matrix over the present ranks, its floor and noise, and the collective's own
   * cost.
   */
  private static final class Matrix {
    final TreeMap<Integer, RankWindow> byRank = new TreeMap<>();
    final List<Integer> present = new ArrayList<>();
    final List<Integer> missing = new ArrayList<>();
    int n;
    int k;
    boolean tails;
    double[][] m; // mean lateness, present x present
    double[][] p99; // its tails, when present
    RankWindow[] rows; // present ranks' windows, by matrix index
    double base;
    double tailBase;
    double noise;
    double cost;
    long bytesPerCall;
    long minCalls;

    static Matrix of(List<RankWindow> windows) {
      Matrix x = new Matrix();
      for (RankWindow w : windows) {
        x.n = Math.max(x.n, w.getWorldSize());
        x.byRank.put(w.getRank(), w);
      }
      for (int r = 0; r < x.n; r++) {
        RankWindow w = x.byRank.get(r);
        if (w != null && w.getCalls() > 0 && w.getPeerWaitMeanUs().size() == x.n) x.present.add(r);
        else x.missing.add(r);
      }
      x.k = x.present.size();
      x.tails = x.k > 0;
      for (int r : x.present) x.tails &= x.byRank.get(r).getPeerLateMeanUs().size() == x.n;
      x.m = new double[x.k][x.k];
      x.p99 = new double[x.k][x.k];
      x.rows = new RankWindow[x.k];
      for (int i = 0; i < x.k; i++) x.rows[i] = x.byRank.get(x.present.get(i));
      // Primitive arrays and selection rather than boxed lists and sorting: a 1,024-rank window
      // has a million cells.
      int offDiagonal = x.k * (x.k - 1);
      double[] cells = new double[offDiagonal];
      double[] tailCells = new double[x.tails ? offDiagonal : 0];
      double[] spread = new double[x.tails ? offDiagonal + x.k * x.missing.size() : 0];
      int c = 0;
      int sp = 0;
      for (int i = 0; i < x.k; i++) {
        RankWindow w = x.rows[i];
        List<Double> lateOf = x.tails ? w.getPeerLateMeanUs() : w.getPeerWaitMeanUs();
        List<Double> p99Of = x.tails ? w.getPeerLateP99Us() : null;
        for (int j = 0; j < x.k; j++) {
          if (i == j) continue;
          int p = x.present.get(j);
          double mean = lateOf.get(p);
          x.m[i][j] = mean;
          cells[c] = mean;
          if (x.tails) {
            double tail = p99Of.get(p);
            x.p99[i][j] = tail;
            tailCells[c] = tail;
            spread[sp++] = Math.max(0, tail - mean);
          }
          c++;
        }
      }
      // The spread of every cell a present rank has, missing peers' too: with one rank left
      // those are all there is to measure noise on.
      for (int r : x.present) {
        RankWindow w = x.byRank.get(r);
        for (int s : x.missing) {
          if (x.tails) spread[sp++] = Math.max(0, w.getPeerLateP99Us().get(s) - x.late(w, s));
        }
      }
      // With two ranks one direction is clean unless both are slow: its cell is the floor.
      // Without tails the floor is 0 there, as it was for those counters.
      x.base = c == 0 ? 0 : x.k == 2 ? (x.tails ? min(cells, c) : 0) : lowerQuartile(cells, c);
      // Tails vary more between peers than means do (a shared device's launch order, a busy
      // host): an intermittent culprit's tail must stand out of the typical one, the median.
      int tc = x.tails ? c : 0;
      x.tailBase = tc == 0 ? 0 : x.k == 2 ? min(tailCells, tc) : Attributor.median(tailCells, tc);
      // The lower quartile, as for the floor: a fault widens the tails of every cell it touches
      // (a slow link makes its receiver late in turn, and everyone waits on it now and then), and
      // must not raise its own threshold; a noisy host widens all of them.
      x.noise = sp == 0 ? 0 : x.k == 2 ? min(spread, sp) : lowerQuartile(spread, sp);
      x.cost = Double.MAX_VALUE;
      long calls = 0;
      long bytes = 0;
      x.minCalls = Long.MAX_VALUE;
      for (int r : x.present) {
        RankWindow w = x.byRank.get(r);
        double total = 0;
        for (Phase p : Phase.values()) total += meanUs(w, p);
        x.cost = Math.min(x.cost, total);
        calls += w.getCalls() - w.getTimeouts();
        bytes += w.getBytes();
        x.minCalls = Math.min(x.minCalls, w.getCalls());
      }
      if (x.k == 0) {
        x.cost = 0;
        x.minCalls = 0;
      }
      x.bytesPerCall = calls > 0 ? Math.round((double) bytes / calls) : 0;
      return x;
    }

    /** Lateness of peer p as w saw it; the per-peer wait for counters without lateness. */
    double late(RankWindow w, int p) {
      return tails ? w.getPeerLateMeanUs().get(p) : w.getPeerWaitMeanUs().get(p);
    }

    double excess(int i, int j) {
      return Math.max(0, m[i][j] - base);
    }

    double tailExcess(int i, int j) {
      return Math.max(0, p99[i][j] - tailBase);
    }

    /** The median of f over the present ranks but one. */
    double median(ToDoubleFunction<RankWindow> f, int exceptRank) {
      List<Double> v = new ArrayList<>();
      for (int r : present) if (r != exceptRank) v.add(f.applyAsDouble(byRank.get(r)));
      return Attributor.median(v);
    }

    /** Confidence scale: 1 once every present rank counted enough calls. */
    double callsFactor(Thresholds t) {
      return Math.min(1.0, (double) minCalls / t.minCalls());
    }
  }

  /** The rule's tests over one {@link Matrix} at one threshold. */
  private static final class Judge {
    final Matrix x;
    final Thresholds t;
    final double threshold;
    final boolean[][] high;
    final boolean[][] tailHigh;
    boolean[] passes;

    Judge(Matrix x, Thresholds t, double threshold) {
      this.x = x;
      this.t = t;
      this.threshold = threshold;
      high = new boolean[x.k][x.k];
      tailHigh = new boolean[x.k][x.k];
      for (int i = 0; i < x.k; i++) {
        for (int j = 0; j < x.k; j++) {
          if (i == j) continue;
          high[i][j] = x.excess(i, j) >= threshold && x.m[i][j] >= t.cellFactor() * x.base;
          // A p99 is one collective's worth of evidence, a mean a thousand's: a tail must clear
          // twice the threshold.
          tailHigh[i][j] =
              x.tails
                  && x.tailExcess(i, j) >= TAIL_MARGIN * threshold
                  && x.p99[i][j] >= t.cellFactor() * x.tailBase;
        }
      }
    }

    /**
     * The missing ranks that the present ranks wait on: column test of the slow rank, without the
     * row test, over each present rank's lateness of the missing rank plus, if it timed out, its
     * share of its guard time.
     */
    List<Finding> silentRanks() {
      List<Finding> found = new ArrayList<>();
      if (x.k == 0) return found;
      for (int s : x.missing) {
        int highCount = 0;
        double colExcess = 0;
        long timeouts = 0;
        long calls = 0;
        for (int r : x.present) {
          RankWindow w = x.byRank.get(r);
          double cell = x.late(w, s);
          // A timed-out guard waited for an ack nobody billed to a peer: see the class comment.
          if (w.getTimeouts() > 0) cell += meanUs(w, Phase.GUARD) / x.missing.size();
          double excess = Math.max(0, cell - x.base);
          colExcess += excess;
          if (excess >= threshold && cell >= t.cellFactor() * x.base) {
            highCount++;
            timeouts += w.getTimeouts();
            calls += w.getCalls();
          }
        }
        colExcess /= x.k;
        double highFrac = (double) highCount / x.k;
        if (highFrac < t.columnFraction() || colExcess < threshold) continue;
        found.add(
            new Finding(
                FindingKind.SILENT_RANK,
                s,
                -1,
                timeouts > 0 ? Cause.TIMED_OUT : Cause.NOT_REPORTING,
                confidence(highFrac, colExcess),
                colExcess,
                String.format(
                    Locale.ROOT,
                    "%d of %d present ranks waited on rank %d, which sent no data, %.1fus/call over the %.1fus floor; %s",
                    highCount,
                    x.k,
                    s,
                    colExcess,
                    x.base,
                    timeouts > 0
                        ? String.format(
                            Locale.ROOT, "they timed out in %d of their %d calls", timeouts, calls)
                        : "none of them timed out: it runs, but does not report")));
      }
      return found;
    }

    /** Slow ranks (steadily or intermittently) and slow links among the present ranks. */
    List<Finding> slowRanksAndLinks() {
      int k = x.k;
      List<Finding> findings = new ArrayList<>();
      boolean[] slow = new boolean[k];
      boolean[] all = new boolean[k];
      java.util.Arrays.fill(all, true);
      boolean[] early = new boolean[k];
      for (int i = 0; i < k; i++) for (int j = 0; j < k; j++) early[i] |= high[i][j];
      // Most ranks late by the same amount (3 of 4): each late rank's column is high only in the
      // rows of the few early ranks. Judge columns over those rows when they and the late ranks
      // make up the whole communicator, and then only columns high in every early row: a slow
      // link's sender waits on a slow rank too, but its receiver is the only one that waits on it.
      // A late rank's own waits on ranks later still are not waiting as a victim: its row counts
      // only cells on columns that do not pass the column test themselves.
      passes = new boolean[k];
      for (int j = 0; j < k; j++)
        passes[j] = columnPasses(j, high, x::excess, all, t.columnFraction());
      boolean[] lateOfEarly = new boolean[k];
      boolean partition = false;
      for (int j = 0; j < k; j++) {
        lateOfEarly[j] = columnPasses(j, high, x::excess, early, t.columnFraction());
      }
      for (int j = 0; j < k; j++) partition |= lateOfEarly[j];
      for (int j = 0; j < k; j++) partition &= early[j] || lateOfEarly[j];
      for (int j = 0; j < k; j++) {
        Finding f = slowRank(j, high, x::excess, false, all);
        if (f == null && partition && columnPasses(j, high, x::excess, early, 1.0)) {
          f = slowRank(j, high, x::excess, false, early);
        }
        // Tails need a column: with two ranks one cell's p99 is one peer's hiccup, not a pattern.
        if (f == null && x.tails && k >= 3) f = slowRank(j, tailHigh, x::tailExcess, true, all);
        if (f != null) {
          slow[j] = true;
          findings.add(f);
        }
      }

      List<Finding> links = new ArrayList<>();
      for (int j = 0; j < k; j++) {
        if (slow[j]) continue;
        ColumnMedian column = null;
        for (int i = 0; i < k; i++) {
          if (i == j || !high[i][j]) continue;
          // The other ranks' view of j, from ranks that are not late themselves: a late rank sees
          // everyone early. With no such rank left there is nothing to compare the cell with.
          if (column == null) column = new ColumnMedian(j, slow);
          int others = column.size() - (column.holds(i) ? 1 : 0);
          if (others == 0 && k > 2) continue;
          double med = others == 0 ? 0 : column.medianWithout(i);
          double e = x.excess(i, j);
          boolean standsOut = e - med >= threshold && e >= t.cellFactor() * med;
          if (!standsOut) continue;
          links.add(
              new Finding(
                  FindingKind.SLOW_LINK,
                  x.present.get(i),
                  x.present.get(j),
                  Cause.LINK,
                  confidence(1.0, e - med) * (k == 2 ? 0.5 : 1.0),
                  e,
                  String.format(
                      Locale.ROOT,
                      "rank %d saw rank %d %.1fus/call late over the %.1fus floor while the other ranks saw it %.1fus late%s",
                      x.present.get(i),
                      x.present.get(j),
                      e,
                      x.base,
                      med,
                      k == 2
                          ? "; with 2 ranks the link's direction cannot be told from waits alone"
                          : "")));
        }
      }
      if (k == 2 && links.size() == 2) {
        // Both directions of the only link look alike: report it once, larger cell first.
        links.sort(Comparator.comparingDouble(Finding::getExcessWaitUs).reversed());
        links = links.subList(0, 1);
      }
      findings.addAll(links);
      return findings;
    }

    /**
     * The excess of column j over the rows of ranks that are neither j nor slow, sorted once, so
     * that its median without any one row is read in constant time.
     */
    private final class ColumnMedian {
      private final double[] sorted;
      private final int[] position; // by matrix index; -1 when not a row of it

      ColumnMedian(int j, boolean[] slow) {
        Integer[] order =
            java.util.stream.IntStream.range(0, x.k)
                .filter(q -> q != j && !slow[q])
                .boxed()
                .toArray(Integer[]::new);
        java.util.Arrays.sort(order, Comparator.comparingDouble(q -> x.excess(q, j)));
        sorted = new double[order.length];
        position = new int[x.k];
        java.util.Arrays.fill(position, -1);
        for (int t = 0; t < order.length; t++) {
          sorted[t] = x.excess(order[t], j);
          position[order[t]] = t;
        }
      }

      int size() {
        return sorted.length;
      }

      boolean holds(int i) {
        return position[i] >= 0;
      }

      /** The median of the column's values without row i's (if it is one). */
      double medianWithout(int i) {
        int skip = position[i];
        int n = sorted.length - (skip >= 0 ? 1 : 0);
        if (n % 2 == 1) return at(n / 2, skip);
        return (at(n / 2 - 1, skip) + at(n / 2, skip)) / 2;
      }

      private double at(int t, int skip) {
        return skip >= 0 && t >= skip ? sorted[t + 1] : sorted[t];
      }
    }

    /** Excess of one cell of a matrix (means or tails). */
    interface CellExcess {
      double of(int i, int j);
    }

    /**
     * Whether column j is high in a share {@code fraction} of the given rows (j's own excluded).
     */
    private boolean columnPasses(
        int j, boolean[][] hi, CellExcess excess, boolean[] rows, double fraction) {
      int count = 0;
      int highCount = 0;
      double colExcess = 0;
      for (int i = 0; i < x.k; i++) {
        if (i == j || !rows[i]) continue;
        count++;
        if (hi[i][j]) highCount++;
        colExcess += excess.of(i, j);
      }
      return count > 0 && (double) highCount / count >= fraction && colExcess / count >= threshold;
    }

    /**
     * The column test for present rank j over one matrix and the given rows, or null when it does
     * not pass.
     */
    private Finding slowRank(
        int j, boolean[][] hi, CellExcess excess, boolean intermittent, boolean[] rows) {
      int k = x.k;
      int count = 0;
      int highCount = 0;
      double colExcess = 0;
      double lastShare = 0;
      for (int i = 0; i < k; i++) {
        if (i == j || !rows[i]) continue;
        count++;
        if (hi[i][j]) highCount++;
        colExcess += excess.of(i, j);
        RankWindow wi = x.rows[i];
        lastShare += (double) wi.getPeerArrivedLast().get(x.present.get(j)) / wi.getCalls();
      }
      if (count == 0) return null;
      colExcess /= count;
      lastShare /= count;
      double highFrac = (double) highCount / count;
      double rowExcess = 0;
      // Only its high cells count: summed noise over many small cells is not waiting.
      for (int q = 0; q < k; q++) {
        // ... unless q waits on j as well: then neither is simply later than the other.
        if (q != j && hi[j][q] && (!passes[q] || hi[q][j])) rowExcess += excess.of(j, q);
      }
      if (highFrac < t.columnFraction()
          || colExcess < (intermittent ? TAIL_MARGIN : 1) * threshold
          || rowExcess > t.rowRatio() * colExcess
          || (intermittent
              && (lastShare < t.minGatedShare() || lastShare > INTERMITTENT_MAX_GATED))) {
        return null;
      }
      int rank = x.present.get(j);
      RankWindow w = x.byRank.get(rank);
      double meanExcess = 0;
      for (int i = 0; i < k; i++) if (i != j && rows[i]) meanExcess += x.excess(i, j);
      meanExcess /= count;
      Cause cause = intermittent ? Cause.ARRIVED_LATE : cause(w, colExcess);
      return new Finding(
          FindingKind.SLOW_RANK,
          rank,
          -1,
          cause,
          confidence(highFrac, colExcess) * (rowExcess > 0 ? 1 - rowExcess / colExcess / 2 : 1),
          meanExcess,
          String.format(
              Locale.ROOT,
              "%d of %d %s saw rank %d %s %.1fus/call over the %.1fus floor (threshold %.1fus); it saw its peers %.1fus late itself and gated %.0f%% of their collectives; %s",
              highCount,
              count,
              count == k - 1 ? "peers" : "early peers",
              rank,
              intermittent ? "late in a few collectives: p99 lateness" : "late by",
              colExcess,
              intermittent ? x.tailBase : x.base,
              threshold,
              rowExcess,
              100 * lastShare,
              causeEvidence(w)));
    }

    /** The collective got slower than its baseline with no culprit that explains it. */
    Finding uniformSlowdown(WindowBaseline baseline, double baselineUs) {
      // Judged against the baseline's own spread, not the window's matrix noise: a slowdown that
      // reaches every rank makes every cell's tail wider too, which says nothing about the cost.
      double excess = x.cost - baselineUs;
      // No absolute floor (a GPU collective of a few microseconds regresses by fractions of one),
      // but the noise its clean windows showed: a finding about one window must clear the jitter
      // of the host, which a baseline of a few windows' costs can understate. Not this window's
      // noise: a slowdown that reaches every path widens every tail. Smaller regressions are the
      // alerts' to find, over several windows.
      double needed =
          Math.max(
              Math.max(t.uniformRel() * baselineUs, UNIFORM_SPREADS * baseline.spread()),
              t.noiseFactor() * baseline.noise());
      if (excess < needed) return null;
      Phase grew = null;
      double growth = 0;
      StringBuilder phases = new StringBuilder();
      for (Phase p : Phase.values()) {
        double now = x.median(w -> meanUs(w, p), -1);
        double was = baseline.phase(p);
        phases.append(String.format(Locale.ROOT, " %s %.1f/%.1f", p.fieldName(), now, was));
        if (grew == null || now - was > growth) {
          grew = p;
          growth = now - was;
        }
      }
      Cause cause = grew.blame() != null ? grew.blame() : Cause.LINK;
      return new Finding(
          FindingKind.UNIFORM_SLOWDOWN,
          -1,
          -1,
          cause,
          clamp(1 - Math.exp(-excess / needed)) * x.callsFactor(t),
          excess,
          String.format(
              Locale.ROOT,
              "the collective costs %.1fus/call, %.0f%% over its baseline of %.1fus, with no rank or link later than the others; median phases now/baseline (us/call):%s",
              x.cost,
              100 * excess / baselineUs,
              baselineUs,
              phases));
    }

    /** Grows with how far the excess stands above the threshold and the share that sees it. */
    private double confidence(double share, double excess) {
      return clamp(share * (1 - Math.exp(-excess / Math.max(threshold, 1e-9)))) * x.callsFactor(t);
    }

    /**
     * Why a slow rank was slow: the cause whose phases exceed the peers' median the most, if they
     * explain enough of the excess; otherwise it arrived late (the time went before the collective,
     * in compute or launch).
     */
    private Cause cause(RankWindow w, double excess) {
      Cause best = null;
      double bestExcess = 0;
      for (Phase p : Phase.values()) {
        Cause c = p.blame();
        if (c == null || c == best) continue;
        double e = blamedUs(w, c) - x.median(o -> blamedUs(o, c), w.getRank());
        if (best == null || e > bestExcess) {
          best = c;
          bestExcess = e;
        }
      }
      if (best == null || bestExcess < t.causeShare() * excess || bestExcess < threshold / 2) {
        return Cause.ARRIVED_LATE;
      }
      return best;
    }

    private String causeEvidence(RankWindow w) {
      StringBuilder sb = new StringBuilder("its phases vs its peers' median (us/call):");
      for (Phase p : Phase.values()) {
        if (p.blame() == null) continue;
        sb.append(
            String.format(
                Locale.ROOT,
                " %s %.1f/%.1f",
                p.fieldName(),
                meanUs(w, p),
                x.median(o -> meanUs(o, p), w.getRank())));
      }
      return sb.toString();
    }
  }

  /** NONE, the kind of a single finding, or MULTIPLE. */
  static Verdict verdict(List<Finding> findings) {
    if (findings.isEmpty()) return Verdict.NONE;
    if (findings.size() > 1) return Verdict.MULTIPLE;
    return switch (findings.get(0).getKind()) {
      case SLOW_RANK -> Verdict.SLOW_RANK;
      case SLOW_LINK -> Verdict.SLOW_LINK;
      case SILENT_RANK -> Verdict.SILENT_RANK;
      case UNIFORM_SLOWDOWN -> Verdict.UNIFORM_SLOWDOWN;
      case UNKNOWN -> Verdict.UNKNOWN;
    };
  }

  /** A phase's mean microseconds per collective in a rank window. */
  static double meanUs(RankWindow w, Phase p) {
    return (Double) w.get(p.meanUsField());
  }

  /** The time a rank spent in the phases a cause blames, per collective. */
  private static double blamedUs(RankWindow w, Cause c) {
    double us = 0;
    for (Phase p : Phase.values()) if (p.blame() == c) us += meanUs(w, p);
    return us;
  }

  static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    if (a.length == 0) return 0;
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  /** Nearest-rank 25th percentile. */
  static double lowerQuartile(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a[Math.max(0, (int) Math.ceil(0.25 * a.length) - 1)];
  }

  /** Nearest-rank 25th percentile of the first n values (reordered). */
  static double lowerQuartile(double[] a, int n) {
    return select(a, n, Math.max(0, (int) Math.ceil(0.25 * n) - 1));
  }

  /** The median of the first n values (reordered). */
  static double median(double[] a, int n) {
    if (n == 0) return 0;
    double hi = select(a, n, n / 2);
    return n % 2 == 1 ? hi : (select(a, n / 2, n / 2 - 1) + hi) / 2;
  }

  private static double min(double[] a, int n) {
    double m = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) m = Math.min(m, a[i]);
    return n == 0 ? 0 : m;
  }

  /**
   * The value of rank {@code k} (from 0) among the first n values; afterwards the values below k
   * are no greater and those above no smaller (Hoare's selection, median-of-three pivots).
   */
  static double select(double[] a, int n, int k) {
    int lo = 0;
    int hi = n - 1;
    while (hi > lo) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] < a[lo]) swap(a, mid, lo);
      if (a[hi] < a[lo]) swap(a, hi, lo);
      if (a[hi] < a[mid]) swap(a, hi, mid);
      double pivot = a[mid];
      int i = lo;
      int j = hi;
      while (i <= j) {
        while (a[i] < pivot) i++;
        while (a[j] > pivot) j--;
        if (i <= j) {
          swap(a, i, j);
          i++;
          j--;
        }
      }
      if (k <= j) hi = j;
      else if (k >= i) lo = i;
      else return a[k];
    }
    return a[k];
  }

  private static void swap(double[] a, int i, int j) {
    double t = a[i];
    a[i] = a[j];
    a[j] = t;
  }

  private static double min(List<Double> v) {
    return v.stream().mapToDouble(Double::doubleValue).min().orElse(0);
  }

  private static double clamp(double x) {
    return Double.isNaN(x) ? 0 : Math.max(0, Math.min(1, x));
  }
}
