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
import io.collscope.model.SampledCalls;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
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
      row.setSampledCalls(SampledCalls.of(w));
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
      double maxExcess = x.maxExcess();
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
   *
   * <p>Held sparsely. Row i has its listed cells (the present peers its rank window lists, by
   * matrix index, ascending) and one value for every other cell of the row, {@code otherCount[i]}
   * of them: a compact rank window ({@link RankWindow#getPeerIndex()}) gives every unlisted peer
   * the same values, so its row is its listed peers plus one weighted value. A dense window lists
   * every peer (no weighted value). Every statistic below is the one the dense matrix of the same
   * cells gives — quantiles over weighted values, column sums from a sum over the rows' common
   * values corrected by the few rows that list the column — at O(listed cells + ranks) instead of
   * O(ranks²): a 1,024-rank window of 16 listed peers a row is 17,000 values, not a million cells.
   */
  private static final class Matrix {
    final TreeMap<Integer, RankWindow> byRank = new TreeMap<>();
    final List<Integer> present = new ArrayList<>();
    final List<Integer> missing = new ArrayList<>();
    int n;
    int k;
    boolean tails;
    RankWindow[] rows; // present ranks' windows, by matrix index
    int[] column; // by rank: matrix index, -1 when missing
    int[][] rowIndex; // by matrix index: the window's peer_index (ranks), null when dense
    int[][] listed; // row i's listed cells: present columns, ascending, not i
    int[] otherCount; // row i's cells that are not listed (present columns but i)
    Cells mean; // lateness means (per-peer waits without lateness)
    Cells p99; // their tails, when present
    Cells lastShare; // share of the row rank's collectives the column's peer gated
    int[][] listers; // column j: the rows that list it, ascending
    int[][] listerAt; // ... and where in their row
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
      x.column = new int[x.n];
      for (int r = 0; r < x.n; r++) {
        RankWindow w = x.byRank.get(r);
        if (w != null && w.getCalls() > 0 && w.getPeerWaitMeanUs().size() == entries(w, x.n)) {
          x.column[r] = x.present.size();
          x.present.add(r);
        } else {
          x.column[r] = -1;
          x.missing.add(r);
        }
      }
      x.k = x.present.size();
      x.tails = x.k > 0;
      for (int r : x.present) {
        RankWindow w = x.byRank.get(r);
        x.tails &= w.getPeerLateMeanUs().size() == entries(w, x.n) && entries(w, x.n) > 0;
      }
      int k = x.k;
      x.rows = new RankWindow[k];
      x.rowIndex = new int[k][];
      x.listed = new int[k][];
      x.otherCount = new int[k];
      x.mean = new Cells(k);
      x.p99 = new Cells(k);
      x.lastShare = new Cells(k);
      int[] listerCount = new int[k];
      for (int i = 0; i < k; i++) x.readRow(i, listerCount);
      x.listers = new int[k][];
      x.listerAt = new int[k][];
      for (int j = 0; j < k; j++) {
        x.listers[j] = new int[listerCount[j]];
        x.listerAt[j] = new int[listerCount[j]];
      }
      int[] fill = new int[k];
      for (int i = 0; i < k; i++) {
        for (int c = 0; c < x.listed[i].length; c++) {
          int j = x.listed[i][c];
          x.listers[j][fill[j]] = i;
          x.listerAt[j][fill[j]++] = c;
        }
      }
      x.floorsAndNoise();
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
        // the sample, not the calls: confidence grows with what was measured
        x.minCalls = Math.min(x.minCalls, SampledCalls.of(w));
      }
      if (x.k == 0) {
        x.cost = 0;
        x.minCalls = 0;
      }
      x.bytesPerCall = calls > 0 ? Math.round((double) bytes / calls) : 0;
      return x;
    }

    /** Row i of the matrix from its rank window: its listed cells and its others' value. */
    private void readRow(int i, int[] listerCount) {
      RankWindow w = byRank.get(present.get(i));
      rows[i] = w;
      rowIndex[i] = peerIndex(w);
      List<Double> lateOf = tails ? w.getPeerLateMeanUs() : w.getPeerWaitMeanUs();
      List<Double> p99Of = tails ? w.getPeerLateP99Us() : null;
      List<Long> lastOf = w.getPeerArrivedLast();
      int entries = entries(w, n);
      int[] cols = new int[entries];
      double[] m = new double[entries];
      double[] t = new double[entries];
      double[] g = new double[entries];
      int c = 0;
      for (int e = 0; e < entries; e++) {
        int p = rowIndex[i] == null ? e : rowIndex[i][e];
        int j = p < n ? column[p] : -1;
        if (j < 0 || j == i) continue;
        cols[c] = j;
        m[c] = lateOf.get(e);
        t[c] = tails ? p99Of.get(e) : 0;
        g[c] = (double) lastOf.get(e) / accounted(w);
        listerCount[j]++;
        c++;
      }
      listed[i] = Arrays.copyOf(cols, c);
      mean.listed[i] = Arrays.copyOf(m, c);
      p99.listed[i] = Arrays.copyOf(t, c);
      lastShare.listed[i] = Arrays.copyOf(g, c);
      otherCount[i] = k - 1 - c;
      mean.other[i] = tails ? w.getOthersLateMeanUs() : w.getOthersWaitMeanUs();
      p99.other[i] = tails ? w.getOthersLateP99Us() : 0;
      lastShare.other[i] = (double) w.getOthersArrivedLast() / accounted(w);
    }

    /** The floor, the tails' floor and the noise: quantiles of the cells, weighted. */
    private void floorsAndNoise() {
      // Weighted values rather than a million cells; selection where every weight is 1.
      Weighted cells = new Weighted();
      Weighted tailCells = new Weighted();
      Weighted spread = new Weighted();
      for (int i = 0; i < k; i++) {
        double[] m = mean.listed[i];
        double[] t = p99.listed[i];
        for (int c = 0; c < m.length; c++) {
          cells.add(m[c], 1);
          if (tails) {
            tailCells.add(t[c], 1);
            spread.add(Math.max(0, t[c] - m[c]), 1);
          }
        }
        if (otherCount[i] > 0) {
          cells.add(mean.other[i], otherCount[i]);
          if (tails) {
            tailCells.add(p99.other[i], otherCount[i]);
            spread.add(Math.max(0, p99.other[i] - mean.other[i]), otherCount[i]);
          }
        }
      }
      // The spread of every cell a present rank has, missing peers' too: with one rank left
      // those are all there is to measure noise on.
      if (tails) {
        for (int i = 0; i < k; i++) {
          RankWindow w = rows[i];
          int unlisted = 0;
          for (int s : missing) {
            int at = entryOf(i, s);
            if (at < 0) unlisted++;
            else spread.add(Math.max(0, w.getPeerLateP99Us().get(at) - lateAt(i, at)), 1);
          }
          if (unlisted > 0) {
            spread.add(Math.max(0, p99.other[i] - mean.other[i]), unlisted);
          }
        }
      }
      long c = cells.size();
      long sp = spread.size();
      // With two ranks one direction is clean unless both are slow: its cell is the floor.
      // Without tails the floor is 0 there, as it was for those counters.
      base = c == 0 ? 0 : k == 2 ? (tails ? cells.min() : 0) : cells.lowerQuartile();
      // Tails vary more between peers than means do (a shared device's launch order, a busy
      // host): an intermittent culprit's tail must stand out of the typical one, the median.
      long tc = tails ? c : 0;
      tailBase = tc == 0 ? 0 : k == 2 ? tailCells.min() : tailCells.median();
      // The lower quartile, as for the floor: a fault widens the tails of every cell it touches
      // (a slow link makes its receiver late in turn, and everyone waits on it now and then), and
      // must not raise its own threshold; a noisy host widens all of them.
      noise = sp == 0 ? 0 : k == 2 ? spread.min() : spread.lowerQuartile();
    }

    /** A rank window's peer_index, null when it is dense. */
    static int[] peerIndex(RankWindow w) {
      List<Integer> index = w.getPeerIndex();
      if (index == null || index.isEmpty()) return null;
      int[] a = new int[index.size()];
      for (int i = 0; i < a.length; i++) a[i] = index.get(i);
      return a;
    }

    /** How many entries a rank window's per-peer arrays must have: world size, or its listed. */
    static int entries(RankWindow w, int n) {
      List<Integer> index = w.getPeerIndex();
      return index == null || index.isEmpty() ? n : index.size();
    }

    /** The entry of rank p in row i's per-peer arrays, or -1 when p is not listed. */
    int entryOf(int i, int p) {
      if (rowIndex[i] == null) return p;
      int at = Arrays.binarySearch(rowIndex[i], p);
      return at >= 0 ? at : -1;
    }

    /** Row i's lateness at an entry (the per-peer wait for counters without lateness). */
    double lateAt(int i, int at) {
      RankWindow w = rows[i];
      return (tails ? w.getPeerLateMeanUs() : w.getPeerWaitMeanUs()).get(at);
    }

    /** Lateness of rank p as row i saw it; the per-peer wait for counters without lateness. */
    double late(int i, int p) {
      int at = entryOf(i, p);
      return at >= 0 ? lateAt(i, at) : mean.other[i];
    }

    /** Where column j is among row i's listed cells, or -1 when the row's common value holds. */
    int cellOf(int i, int j) {
      int c = Arrays.binarySearch(listed[i], j);
      return c >= 0 ? c : -1;
    }

    double excess(double mean) {
      return Math.max(0, mean - base);
    }

    double tailExcess(double p99) {
      return Math.max(0, p99 - tailBase);
    }

    /** The largest excess of any cell. */
    double maxExcess() {
      double max = 0;
      for (int i = 0; i < k; i++) {
        for (double v : mean.listed[i]) max = Math.max(max, excess(v));
        if (otherCount[i] > 0) max = Math.max(max, excess(mean.other[i]));
      }
      return max;
    }

    /**
     * Column sums of one quantity over the given rows (each column without its own row): the sum of
     * the rows' common values, less the own row's, corrected by the rows that list the column.
     */
    double[] columnSums(Cells q, boolean[] rowsIn) {
      double total = 0;
      for (int i = 0; i < k; i++) if (rowsIn[i] && otherCount[i] > 0) total += q.other[i];
      double[] out = new double[k];
      Arrays.fill(out, total);
      for (int i = 0; i < k; i++) {
        if (!rowsIn[i]) continue;
        double common = otherCount[i] > 0 ? q.other[i] : 0;
        out[i] -= common;
        double[] v = q.listed[i];
        for (int c = 0; c < v.length; c++) out[listed[i][c]] += v[c] - common;
      }
      return out;
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

  /** One quantity over a {@link Matrix}'s cells: row by row its listed cells, and the others'. */
  private static final class Cells {
    final double[][] listed;
    final double[] other;

    Cells(int k) {
      listed = new double[k][];
      other = new double[k];
    }

    /** The same shape, each value mapped. */
    Cells map(java.util.function.DoubleUnaryOperator f) {
      Cells c = new Cells(other.length);
      for (int i = 0; i < other.length; i++) {
        c.listed[i] = new double[listed[i].length];
        for (int e = 0; e < listed[i].length; e++) c.listed[i][e] = f.applyAsDouble(listed[i][e]);
        c.other[i] = f.applyAsDouble(other[i]);
      }
      return c;
    }
  }

  /**
   * A multiset of values, most with weight 1 and a few with a weight (a row's unlisted cells): its
   * nearest-rank quantiles as those of the values repeated.
   */
  static final class Weighted {
    private double[] ones = new double[64];
    private int n1;
    private double[] heavy = new double[8];
    private long[] weight = new long[8];
    private int nh;
    private long size;

    void add(double v, long w) {
      if (w <= 0) return;
      size += w;
      if (w == 1) {
        if (n1 == ones.length) ones = Arrays.copyOf(ones, 2 * n1);
        ones[n1++] = v;
        return;
      }
      if (nh == heavy.length) {
        heavy = Arrays.copyOf(heavy, 2 * nh);
        weight = Arrays.copyOf(weight, 2 * nh);
      }
      heavy[nh] = v;
      weight[nh++] = w;
    }

    long size() {
      return size;
    }

    double min() {
      double m = Double.POSITIVE_INFINITY;
      for (int i = 0; i < n1; i++) m = Math.min(m, ones[i]);
      for (int i = 0; i < nh; i++) m = Math.min(m, heavy[i]);
      return size == 0 ? 0 : m;
    }

    /** Nearest-rank 25th percentile. */
    double lowerQuartile() {
      return at(Math.max(0, (long) Math.ceil(0.25 * size) - 1));
    }

    double median() {
      if (size == 0) return 0;
      double hi = at(size / 2);
      return size % 2 == 1 ? hi : (at(size / 2 - 1) + hi) / 2;
    }

    /** The value of rank r (from 0) of the values repeated by their weights. */
    double at(long r) {
      if (nh == 0) return select(ones, n1, (int) r);
      Arrays.sort(ones, 0, n1);
      Integer[] order = new Integer[nh];
      for (int i = 0; i < nh; i++) order[i] = i;
      Arrays.sort(order, Comparator.comparingDouble(i -> heavy[i]));
      long seen = 0;
      int a = 0;
      int b = 0;
      while (a < n1 || b < nh) {
        boolean fromOnes = b >= nh || (a < n1 && ones[a] <= heavy[order[b]]);
        double v = fromOnes ? ones[a] : heavy[order[b]];
        seen += fromOnes ? 1 : weight[order[b]];
        if (fromOnes) a++;
        else b++;
        if (seen > r) return v;
      }
      throw new IllegalArgumentException("rank " + r + " of " + size + " values");
    }
  }

  /**
   * A multiset given as a sorted base less some of its positions plus a few values: the column of a
   * sparse matrix (the rows' common values, less the rows that list the column, plus their cells).
   * Its values by rank in O(changes × log size), without building it.
   */
  static final class CorrectedSorted {
    private final double[] base; // ascending
    private final int[] removed; // positions in base, ascending, distinct
    private final double[] added; // ascending

    CorrectedSorted(double[] base, int[] removed, double[] added) {
      this.base = base;
      this.removed = removed.clone();
      this.added = added.clone();
      Arrays.sort(this.removed);
      Arrays.sort(this.added);
    }

    int size() {
      return base.length - removed.length + added.length;
    }

    /** The value of rank t (from 0). */
    double at(int t) {
      // A base value at position p has a rank within [p - removed, p + added]: the answer is one
      // of the added values or a base value from positions t - added .. t + removed.
      for (double v : added) if (holdsRank(v, t)) return v;
      int from = Math.max(0, t - added.length);
      int to = Math.min(base.length - 1, t + removed.length);
      for (int p = from; p <= to; p++) {
        if (Arrays.binarySearch(removed, p) < 0 && holdsRank(base[p], t)) return base[p];
      }
      throw new IllegalStateException("rank " + t + " of " + size());
    }

    double median() {
      int m = size();
      if (m % 2 == 1) return at(m / 2);
      return (at(m / 2 - 1) + at(m / 2)) / 2;
    }

    /** Whether rank t falls on value v: fewer than t+1 values below v, more than t up to it. */
    private boolean holdsRank(double v, int t) {
      int below = lowerBound(base, v);
      int upTo = upperBound(base, v);
      long lt = below - countBelow(removed, below) + lowerBound(added, v);
      long le = upTo - countBelow(removed, upTo) + upperBound(added, v);
      return lt <= t && t < le;
    }

    private static int countBelow(int[] sortedPositions, int limit) {
      int i = Arrays.binarySearch(sortedPositions, limit);
      return i >= 0 ? i : -i - 1;
    }

    private static int lowerBound(double[] a, double v) {
      int lo = 0, hi = a.length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    }

    private static int upperBound(double[] a, double v) {
      int lo = 0, hi = a.length;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (a[mid] <= v) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    }
  }

  /** The rule's tests over one {@link Matrix} at one threshold. */
  private static final class Judge {
    final Matrix x;
    final Thresholds t;
    final double threshold;
    final Cells excess; // of the means over the floor
    final Cells tailExcess; // of the tails over theirs
    final Cells high; // 1 where a mean cell is high
    final Cells tailHigh; // 1 where a tail cell is high
    boolean[] passes;
    int[] passing; // the columns that pass, ascending

    Judge(Matrix x, Thresholds t, double threshold) {
      this.x = x;
      this.t = t;
      this.threshold = threshold;
      excess = x.mean.map(x::excess);
      tailExcess = x.p99.map(x::tailExcess);
      high = x.mean.map(m -> x.excess(m) >= threshold && m >= t.cellFactor() * x.base ? 1.0 : 0.0);
      // A p99 is one collective's worth of evidence, a mean a thousand's: a tail must clear
      // twice the threshold.
      tailHigh =
          x.p99.map(
              p ->
                  x.tails
                          && x.tailExcess(p) >= TAIL_MARGIN * threshold
                          && p >= t.cellFactor() * x.tailBase
                      ? 1.0
                      : 0.0);
    }

    /** A quantity's value at cell (i, j). */
    double at(Cells q, int i, int j) {
      int c = x.cellOf(i, j);
      return c >= 0 ? q.listed[i][c] : q.other[i];
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
        for (int i = 0; i < x.k; i++) {
          RankWindow w = x.rows[i];
          double cell = x.late(i, s);
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

    /** Column sums of the column tests over one set of rows. */
    private final class Columns {
      final boolean[] rows;
      final double[] count;
      final double[] highCount;
      final double[] excessSum;
      final double[] tailHighCount;
      final double[] tailExcessSum;
      final double[] lastShareSum;

      Columns(boolean[] rows, boolean withTails) {
        this.rows = rows;
        int in = 0;
        for (boolean r : rows) if (r) in++;
        count = new double[x.k];
        for (int j = 0; j < x.k; j++) count[j] = in - (rows[j] ? 1 : 0);
        highCount = x.columnSums(high, rows);
        excessSum = x.columnSums(excess, rows);
        lastShareSum = x.columnSums(x.lastShare, rows);
        tailHighCount = withTails ? x.columnSums(tailHigh, rows) : null;
        tailExcessSum = withTails ? x.columnSums(tailExcess, rows) : null;
      }

      /** Whether column j is high in a share {@code fraction} of the rows (j's own excluded). */
      boolean passes(int j, double fraction) {
        return count[j] > 0
            && Math.round(highCount[j]) / count[j] >= fraction
            && excessSum[j] / count[j] >= threshold;
      }
    }

    /** Slow ranks (steadily or intermittently) and slow links among the present ranks. */
    List<Finding> slowRanksAndLinks() {
      int k = x.k;
      List<Finding> findings = new ArrayList<>();
      boolean[] slow = new boolean[k];
      boolean[] all = new boolean[k];
      Arrays.fill(all, true);
      boolean[] early = new boolean[k];
      for (int i = 0; i < k; i++) {
        for (double h : high.listed[i]) early[i] |= h > 0;
        early[i] |= x.otherCount[i] > 0 && high.other[i] > 0;
      }
      // Most ranks late by the same amount (3 of 4): each late rank's column is high only in the
      // rows of the few early ranks. Judge columns over those rows when they and the late ranks
      // make up the whole communicator, and then only columns high in every early row: a slow
      // link's sender waits on a slow rank too, but its receiver is the only one that waits on it.
      // A late rank's own waits on ranks later still are not waiting as a victim: its row counts
      // only cells on columns that do not pass the column test themselves.
      Columns overAll = new Columns(all, x.tails && k >= 3);
      Columns overEarly = new Columns(early, false);
      passes = new boolean[k];
      List<Integer> pass = new ArrayList<>();
      for (int j = 0; j < k; j++) {
        passes[j] = overAll.passes(j, t.columnFraction());
        if (passes[j]) pass.add(j);
      }
      passing = pass.stream().mapToInt(Integer::intValue).toArray();
      boolean[] lateOfEarly = new boolean[k];
      boolean partition = false;
      for (int j = 0; j < k; j++) lateOfEarly[j] = overEarly.passes(j, t.columnFraction());
      for (int j = 0; j < k; j++) partition |= lateOfEarly[j];
      for (int j = 0; j < k; j++) partition &= early[j] || lateOfEarly[j];
      for (int j = 0; j < k; j++) {
        Finding f = slowRank(j, false, overAll);
        if (f == null && partition && overEarly.passes(j, 1.0)) f = slowRank(j, false, overEarly);
        // Tails need a column: with two ranks one cell's p99 is one peer's hiccup, not a pattern.
        if (f == null && x.tails && k >= 3) f = slowRank(j, true, overAll);
        if (f != null) {
          slow[j] = true;
          findings.add(f);
        }
      }

      List<Finding> links = new ArrayList<>();
      ColumnMedians medians = null;
      List<Integer> highOtherRows = new ArrayList<>();
      for (int i = 0; i < k; i++)
        if (x.otherCount[i] > 0 && high.other[i] > 0) highOtherRows.add(i);
      for (int j = 0; j < k; j++) {
        if (slow[j]) continue;
        ColumnMedian column = null;
        for (int i : highRows(j, highOtherRows)) {
          // The other ranks' view of j, from ranks that are not late themselves: a late rank sees
          // everyone early. With no such rank left there is nothing to compare the cell with.
          if (column == null) {
            if (medians == null) medians = new ColumnMedians(slow);
            column = medians.of(j);
          }
          int others = column.size() - (column.holds(i) ? 1 : 0);
          if (others == 0 && k > 2) continue;
          double med = others == 0 ? 0 : column.medianWithout(i);
          double e = at(excess, i, j);
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
     * The rows whose cell on column j is high, ascending: rows listing it, rows whose common is.
     */
    private List<Integer> highRows(int j, List<Integer> highOtherRows) {
      List<Integer> rowsOf = new ArrayList<>();
      int[] listers = x.listers[j];
      int[] at = x.listerAt[j];
      int a = 0;
      int b = 0;
      while (a < listers.length || b < highOtherRows.size()) {
        int next;
        if (b >= highOtherRows.size()
            || (a < listers.length && listers[a] < highOtherRows.get(b))) {
          int i = listers[a];
          if (high.listed[i][at[a]] > 0) rowsOf.add(i);
          a++;
          continue;
        }
        next = highOtherRows.get(b++);
        if (next != j && x.cellOf(next, j) < 0) rowsOf.add(next);
      }
      return rowsOf;
    }

    /**
     * The excess of each column over the rows of ranks that are neither its own nor slow: one
     * sorted array of the rows' common values, corrected per column by the rows that list it.
     */
    private final class ColumnMedians {
      final boolean[] slow;
      final double[] common; // ascending
      final int[] position; // by row: where its common value is in it, -1 when it has none
      int notSlow; // rows

      ColumnMedians(boolean[] slow) {
        this.slow = slow;
        for (boolean s : slow) if (!s) notSlow++;
        List<Integer> rowsWith = new ArrayList<>();
        for (int q = 0; q < x.k; q++) if (!slow[q] && x.otherCount[q] > 0) rowsWith.add(q);
        Integer[] order = rowsWith.toArray(Integer[]::new);
        Arrays.sort(order, Comparator.comparingDouble(q -> excess.other[q]));
        common = new double[order.length];
        position = new int[x.k];
        Arrays.fill(position, -1);
        for (int p = 0; p < order.length; p++) {
          common[p] = excess.other[order[p]];
          position[order[p]] = p;
        }
      }

      ColumnMedian of(int j) {
        List<Integer> removed = new ArrayList<>();
        List<Double> added = new ArrayList<>();
        if (position[j] >= 0) removed.add(position[j]);
        int[] listers = x.listers[j];
        int[] at = x.listerAt[j];
        int[] addedRow = new int[listers.length];
        int na = 0;
        for (int a = 0; a < listers.length; a++) {
          int q = listers[a];
          if (slow[q]) continue;
          if (position[q] >= 0) removed.add(position[q]);
          added.add(excess.listed[q][at[a]]);
          addedRow[na++] = q;
        }
        return new ColumnMedian(this, j, removed, added, Arrays.copyOf(addedRow, na));
      }
    }

    /** Column j's excess over the rows of ranks that are neither j nor slow. */
    private final class ColumnMedian {
      private final ColumnMedians all;
      private final int j;
      private final List<Integer> removed;
      private final List<Double> added;
      private final int[] addedRow;

      ColumnMedian(
          ColumnMedians all, int j, List<Integer> removed, List<Double> added, int[] addedRow) {
        this.all = all;
        this.j = j;
        this.removed = removed;
        this.added = added;
        this.addedRow = addedRow;
      }

      int size() {
        return all.notSlow - (all.slow[j] ? 0 : 1);
      }

      boolean holds(int i) {
        return i != j && !all.slow[i];
      }

      /** The median of the column's values without row i's (if it is one). */
      double medianWithout(int i) {
        List<Integer> r = new ArrayList<>(removed);
        List<Double> a = new ArrayList<>(added);
        if (holds(i)) {
          int listedAt = -1;
          for (int q = 0; q < addedRow.length; q++) if (addedRow[q] == i) listedAt = q;
          if (listedAt >= 0) a.remove(listedAt);
          else r.add(all.position[i]);
        }
        return new CorrectedSorted(
                all.common,
                r.stream().mapToInt(Integer::intValue).toArray(),
                a.stream().mapToDouble(Double::doubleValue).toArray())
            .median();
      }
    }

    /**
     * The column test for present rank j over the means or the tails and the given rows, or null
     * when it does not pass.
     */
    private Finding slowRank(int j, boolean intermittent, Columns over) {
      int k = x.k;
      double count = over.count[j];
      if (count == 0) return null;
      Cells hi = intermittent ? tailHigh : high;
      Cells ex = intermittent ? tailExcess : excess;
      long highCount = Math.round(intermittent ? over.tailHighCount[j] : over.highCount[j]);
      double colExcess = (intermittent ? over.tailExcessSum[j] : over.excessSum[j]) / count;
      double lastShare = over.lastShareSum[j] / count;
      double highFrac = highCount / count;
      // Only its high cells count: summed noise over many small cells is not waiting.
      // ... unless q waits on j as well: then neither is simply later than the other.
      double rowExcess = 0;
      int[] cols = x.listed[j];
      for (int c = 0; c < cols.length; c++) {
        int q = cols[c];
        if (hi.listed[j][c] > 0 && (!passes[q] || at(hi, q, j) > 0)) rowExcess += ex.listed[j][c];
      }
      if (x.otherCount[j] > 0 && hi.other[j] > 0) {
        int excluded = 0;
        for (int q : passing) {
          if (q != j && x.cellOf(j, q) < 0 && at(hi, q, j) == 0) excluded++;
        }
        rowExcess += ex.other[j] * (x.otherCount[j] - excluded);
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
      double meanExcess = over.excessSum[j] / count;
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
              (long) count,
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
  /**
   * The divisor of w's arrived-last shares: the collectives its accounted counts stand for, at
   * least 1 (a window with no sampled collective has no arrivals counted: every share 0).
   */
  private static double accounted(RankWindow w) {
    return Math.max(1, SampledCalls.accounted(w));
  }

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
