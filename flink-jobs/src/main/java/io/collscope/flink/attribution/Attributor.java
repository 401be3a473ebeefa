package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.LatenessMatrix.meanUs;
import static io.collscope.flink.attribution.RobustStatistics.MAD_TO_SD;
import static io.collscope.flink.attribution.RobustStatistics.clamp;
import static io.collscope.flink.attribution.RobustStatistics.median;
import static io.collscope.flink.attribution.RobustStatistics.trimmedCenterAndSpread;

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

/**
 * The attribution rule, as a pure function of one communicator's rank windows (and, for uniform
 * slowdowns and two-rank asymmetries, of its {@link WindowBaseline}).
 *
 * <p><b>The delay matrix.</b> {@code L[r][p]}: mean lateness per collective of peer p as rank r saw
 * it — from r's publication until p's flag was visible — with its standard error {@code se[r][p]}
 * (RankWindow.peer_late_se_us: batch means over the window's deltas or the histogram's spread over
 * the sampled collectives, the larger) and the share of the collectives in which p was later than
 * r's tail edge ({@code S[r][p]}). Each late peer shows its whole lateness whatever the others did,
 * so two or three stragglers each get a column of their own. Counters of emitters before snapshot
 * version 4 have no lateness: their per-peer waits stand in for {@code L}, with no errors and no
 * tails, judged against the fixed {@link Thresholds#minExcessUs()}.
 *
 * <p><b>Effects.</b> A rank that waits on everyone (it arrives early, or its host delays what it
 * sees) raises its row; a peer everyone waits on raises its column. The row effect is the row's
 * lower quartile (robust to up to three quarters of its peers being late); the column effect of
 * peer p is the median over the rows of {@code L[r][p]} less r's row effect; the centre is the
 * median column effect, and the between-peer spread 1.4826 × the columns' median absolute deviation
 * from it — robust to up to a third of the peers being culprits. With two ranks there is one cell
 * each way: the columns are the cells, the centre the smaller, and the spread the one their
 * asymmetry showed in the communicator's clean windows (none before it has learned it).
 *
 * <p><b>The bar.</b> An effect is a finding when it clears the largest of {@link
 * Thresholds#absFloorUs()}, {@link Thresholds#relExcess()} × the collective's own cost, and z ×
 * sqrt(spread² + se²), where se is the effect's own standard error and z the normal quantile that
 * keeps the chance of any false finding in the window at {@link Thresholds#falseFindingRate()} over
 * its k columns (k(k−1) cells for links). The standard errors shrink as a window holds more
 * collectives, so a steady 300 µs straggler on a host with 1 ms of jitter per collective is found
 * once the evidence is there, and never by the width of one collective's tail.
 *
 * <ul>
 *   <li><b>Slow rank p</b>: column p's effect clears its bar, most of its cells clear theirs (every
 *       peer waits on p) and p itself waits little — the straggler arrives last and waits least.
 *       Several columns can pass at once: each is its own finding. Its own phases say why: the
 *       cause ({@link Phase#blame()}) whose phases exceed its peers' most, e.g. {@code guard} →
 *       RING_FULL, {@code publish} → SLOW_PUBLISH, {@code copy+reduce} → SLOW_COPY_REDUCE; none →
 *       ARRIVED_LATE.
 *   <li><b>Most ranks late</b>: when a minority of rows waits on everyone (their row effects clear
 *       the same kind of bar) and no column passed, the others are late: each is judged against the
 *       early rows alone, as three stragglers of four would be.
 *   <li><b>Intermittently slow rank p</b> (three ranks or more): the tail test. In each row, p's
 *       share of collectives beyond the row's tail edge less the row's typical share; its median
 *       over the rows must clear {@link Thresholds#minTailShare()} and z × sqrt(the shares'
 *       between-peer spread² + the binomial error of a typical share), most rows must see it, and p
 *       must have gated some but not nearly all of its peers' collectives ({@link
 *       Thresholds#minGatedShare()}, {@link #INTERMITTENT_MAX_GATED}). Its excess is the lateness
 *       in the collectives it was late in.
 *   <li><b>Slow link p→r</b>: one cell (r, p) that stands out of its column (the other ranks do not
 *       wait on p as much) by the bar of a single cell. Its receiver r then arrives late at the
 *       next collective, so column r is high too, but r waits as much as it is waited on: a victim,
 *       not a culprit.
 *   <li><b>Uniform slowdown</b>, when no other finding explains the window: the collective's own
 *       cost exceeds its baseline by {@link Thresholds#uniformRel()} and by four of the baseline's
 *       window-to-window standard deviations. No rank is later than another, so the matrix is
 *       quiet; the cause is that of the phase that grew most (LINK when it is the wait: every path
 *       is slower).
 * </ul>
 *
 * A rank that reported collectives but sampled none (a GPU rank between two timed collectives) has
 * nothing measured: it is listed with its calls but has no row or column, and is not missing. A
 * rank missing from the window has no row and no column in that matrix, but the present ranks' rows
 * still show what they waited on it:
 *
 * <ul>
 *   <li><b>Silent rank s</b>: s is missing, yet the present ranks' column on s passes the slow-rank
 *       column test. If the ranks that waited on it timed out in a share of their collectives,
 *       their waits on it passed their budget (TIMED_OUT: it died or hangs); otherwise it keeps up,
 *       late, but its reporter is gone (NOT_REPORTING). A missing rank whose column is noise (its
 *       window simply has no data, or came late) is only listed as missing.
 *   <li>A collective that times out in {@code guard} waited for a peer's ack of a ring slot that
 *       never came, and {@code guard} is not billed per peer; once timed-out collectives go
 *       unacked, every later one times out there, with no per-peer wait at all. So the share of a
 *       present rank's guard time that its timeouts stand for is billed in equal shares to the
 *       missing ranks — as the emitter bills a timed-out wait in equal shares to the peers it never
 *       saw.
 *   <li><b>Aborts are not culprits</b>: a timeout abandons the collective at a different moment on
 *       each rank, so the present ranks fall out of step and wait on each other for a while. Those
 *       waits are a small share of the timeouts that caused them, so in a window with a TIMED_OUT
 *       silent rank a finding against present ranks must also reach {@link Thresholds#abortShare()}
 *       of the silent rank's excess.
 * </ul>
 *
 * Each culprit is one {@link Finding}, strongest first; several make the verdict MULTIPLE. A
 * finding's confidence grows with how far its effect clears its bar and with the share of peers
 * that see it, and shrinks when the ranks counted fewer than {@link Thresholds#minCalls()}
 * collectives in the window.
 */
public final class Attributor {

  /**
   * A rank that gates nearly every collective while its mean lateness stays under the bar is last
   * by a small margin every time (e.g. the last one launched on a shared device), not slow now and
   * then: an intermittent culprit gates the collectives it is slow in and shares the rest (about
   * half of them with two ranks).
   */
  static final double INTERMITTENT_MAX_GATED = 0.9;

  /**
   * Windows in a row over the band that make a uniform slowdown (it is named in the last of them):
   * a band learned from a few dozen clean windows understates a busy host's window-to-window swings
   * — 1 s windows of CPU ranks on two cores cost twice their median for a second or two now and
   * then (docs/ACCURACY.md) — while a slowdown of every path lasts. One window of delay; the
   * regression alerts judge smaller and longer changes.
   */
  static final int UNIFORM_WINDOWS = 2;

  /** How many of its baseline's standard deviations a uniform slowdown's excess must reach. */
  static final double UNIFORM_SPREADS = 4.0;

  /**
   * A window teaches the baseline only when its largest effect stays under this share of its bar: a
   * straggler just under the bar is not what the communicator costs when nothing is wrong.
   */
  static final double TEACHING_SHARE = 0.5;

  /**
   * How many floors an intermittent rank must be late by in the collectives it is late in: a tail
   * is a few collectives' evidence, where a mean is all of them.
   */
  static final double TAIL_MARGIN = 2.0;

  /** A finding that clears its bar this many times is named without the last window's support. */
  static final double STRONG = 2.0;

  /**
   * A rank whose effect reached this share of its bar leans towards a finding: a close finding in
   * the next window is named when this one cleared its bar too (two windows in a row).
   */
  static final double LEANING = 1.0;

  /** Timeouts in at least this share of their collectives make a silent rank TIMED_OUT. */
  static final double TIMED_OUT_SHARE = 0.01;

  private Attributor() {}

  /**
   * One window's attribution and what it may teach its communicator's baseline: whether it is a
   * clean, complete window with no effect near its bar, and (two ranks) the asymmetry of its two
   * cells, NaN otherwise.
   */
  public record Judged(
      Attribution attribution,
      boolean teachesBaseline,
      double asymmetryUs,
      boolean slowerThanBaseline,
      java.util.Map<Integer, Double> leaning) {}

  /**
   * Attributes one window alone, without a baseline: no uniform slowdown can be told, and a finding
   * needs no earlier window's support (there is none to ask).
   */
  public static Attribution attribute(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t) {
    windows = CrossNodeLateness.join(windows);
    LatenessMatrix x = LatenessMatrix.of(windows);
    return judge(
            communicator,
            startMs,
            endMs,
            x,
            windows,
            t,
            WindowBaseline.of(AttributionFunction.BASELINE_WINDOWS),
            null)
        .attribution();
  }

  public static Attribution attribute(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t,
      WindowBaseline baseline) {
    return judge(communicator, startMs, endMs, windows, t, baseline).attribution();
  }

  /**
   * Attributes one window of a communicator whose earlier windows taught {@code baseline} (its
   * clean cost and, from the last window, which ranks leaned towards a finding).
   */
  public static Judged judge(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t,
      WindowBaseline baseline) {
    return judge(communicator, startMs, endMs, windows, t, baseline, false);
  }

  /**
   * As above; {@code first}: the communicator's first window, with no window before it to confirm
   * or contradict a close finding, which is then named as a window judged alone would be (a job
   * that starts with a straggler has it named in its first window).
   */
  public static Judged judge(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t,
      WindowBaseline baseline,
      boolean first) {
    windows = CrossNodeLateness.join(windows);
    return judge(
        communicator,
        startMs,
        endMs,
        LatenessMatrix.of(windows),
        windows,
        t,
        baseline,
        first ? null : baseline.leaning());
  }

  private static Judged judge(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      LatenessMatrix x,
      List<RankWindow> windows,
      Thresholds t,
      WindowBaseline baseline,
      java.util.Map<Integer, Double> previous) {
    List<RankPhases> table = new ArrayList<>();
    int maxWaitRank = -1;
    double maxWait = 0;
    for (RankWindow w : x.byRank.values()) {
      int r = w.getRank();
      if (r >= x.n || x.column[r] < 0 && !x.unmeasured.contains(r)) continue;
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
    Judge judge = new Judge(x, t, baseline, previous);

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
    // Inter-node links from NCCL's network proxy steps (windows that carry them): NetworkLinks.
    NetworkLinks.addTo(findings, NetworkLinks.find(windows, t));
    double baselineUs =
        baseline.matches(x.bytesPerCall) && baseline.ready(t.baselineWindows())
            ? baseline.median()
            : 0;
    // Only with no culprit: a slow rank or link makes the whole collective slower too.
    if (baselineUs > 0 && x.k >= 1 && findings.isEmpty()) {
      Finding u = judge.uniformSlowdown(baseline, baselineUs);
      if (u != null) findings.add(u);
    }
    findings =
        SlowNodes.group(
            findings,
            x.byRank,
            (r, p) ->
                x.lateness && x.column != null && x.column[r] >= 0
                    ? x.late(x.column[r], p)
                    : Double.NaN);
    findings.sort(Comparator.comparingDouble(Finding::getExcessWaitUs).reversed());

    double confidence;
    if (!findings.isEmpty()) {
      confidence = findings.get(0).getConfidence();
    } else if (x.k < 2) {
      // With the others missing there is nothing to compare.
      confidence = x.n == 1 ? 1.0 : 0.0;
    } else {
      confidence = clamp(1.0 - judge.largestRatio() / 2) * x.callsFactor(t);
    }
    Attribution a =
        Attribution.newBuilder()
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
            .setThresholdUs(judge.typicalBar())
            .setNoiseUs(judge.typicalNoise())
            .build();
    boolean teaches =
        findings.isEmpty()
            && x.missing.isEmpty()
            && x.unmeasured.isEmpty()
            && x.cost > 0
            && judge.largestRatio() < TEACHING_SHARE
            && x.evenCalls();
    // A clean window over the uniform band teaches only once its run ended unnamed (a busy host's
    // cost wanders for seconds at a time, and the upper spread must see that): AttributionFunction
    // holds it until then (WindowBaseline.holdExcursion).
    return new Judged(a, teaches, judge.asymmetry(), judge.slowerThanBaseline, judge.leaning);
  }

  /**
   * The collective's own cost in a window, and the median of each phase over the present ranks:
   * what {@link WindowBaseline} remembers of a window without findings.
   */
  public static double[] phaseMedians(List<RankWindow> windows) {
    LatenessMatrix x = LatenessMatrix.of(windows);
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
    return LatenessMatrix.of(windows).cost;
  }

  public static long bytesPerCall(List<RankWindow> windows) {
    return LatenessMatrix.of(windows).bytesPerCall;
  }

  /** The effects of one window's matrix (see the class comment) and the rule's tests over them. */
  private static final class Judge {
    final LatenessMatrix x;
    final Thresholds t;
    final WindowBaseline baseline;
    final int k;

    final double[] rowEffect;
    final Cells centred; // L[i][j] less row i's effect
    final double[] colEffect;
    final double center;
    final double spread;
    final double[] colSe;
    final double cellSpread;
    final double floor; // the largest of the absolute and relative floors
    final double z; // over the columns
    final double zLink; // over the cells
    final double z1; // one test
    final Cells se2; // the cells' standard errors squared
    final double[] colNoise; // what a column effect is weighed against
    final double[] colBar;
    final Cells excess; // centred less the centre
    final Cells high; // 1 where a cell clears its own bar
    boolean[] passes;
    int[] passing; // the columns that pass, ascending
    boolean slowerThanBaseline; // the cost cleared the uniform band (see uniformSlowdown)
    final java.util.Map<Integer, Double> previous; // the last window's leaning ranks; null: none
    final java.util.Map<Integer, Double> leaning = new java.util.HashMap<>(); // this window's

    /**
     * Whether a finding against {@code rank} that clears its bar by {@code ratio} is named now: at
     * once when it clears it twice ({@link #STRONG}), else only when the last window leaned the
     * same way ({@link #LEANING}: it cleared its bar too). A rank late by a margin for a window on
     * a busy host — a thread descheduled for a second — is a lean, not a culprit; a fault lasts.
     * Without a previous window to ask (one window judged alone) every finding is named.
     */
    boolean confirmed(int rank, double ratio) {
      lean(rank, ratio);
      return previous == null || ratio >= STRONG || previous.getOrDefault(rank, 0.0) >= LEANING;
    }

    /** Remembers how far {@code rank} leaned towards a finding in this window. */
    void lean(int rank, double ratio) {
      if (ratio >= LEANING) leaning.merge(rank, ratio, Math::max);
    }

    Judge(
        LatenessMatrix x,
        Thresholds t,
        WindowBaseline baseline,
        java.util.Map<Integer, Double> previous) {
      this.x = x;
      this.t = t;
      this.baseline = baseline;
      this.previous = previous;
      k = x.k;

      rowEffect = new double[k];
      boolean centring = x.lateness && k >= 3;
      if (centring) {
        for (int i = 0; i < k; i++) rowEffect[i] = x.row(x.mean, i).lowerQuartile();
      }
      centred = x.mean.map((i, v) -> v - rowEffect[i]);
      colEffect = new double[k];
      if (k == 2) {
        colEffect[0] = x.at(centred, 1, 0);
        colEffect[1] = x.at(centred, 0, 1);
      } else if (k >= 3) {
        ColumnMedians medians = new ColumnMedians(x, centred, new boolean[k]);
        for (int j = 0; j < k; j++) colEffect[j] = medians.of(j).medianWithout(-1);
      }
      double[] effects = colEffect.clone();
      if (k == 2) {
        // One cell each way: one direction is clean unless both are slow. Without lateness the
        // cells are waits, billed to the gater only: 0 is the floor, as it was for those counters.
        center = x.lateness ? Math.min(colEffect[0], colEffect[1]) : 0;
      } else if (centring) {
        center = trimmedCenterAndSpread(effects)[0];
      } else {
        // Waits without lateness: the lower quartile of the cells, the floor of those counters.
        Weighted cells = new Weighted();
        for (int i = 0; i < k; i++) {
          for (double v : x.mean.listed[i]) cells.add(v, 1);
          cells.add(x.mean.other[i], x.otherCount[i]);
        }
        center = cells.size() == 0 ? 0 : cells.lowerQuartile();
      }
      if (centring) {
        spread = trimmedCenterAndSpread(colEffect.clone())[1];
      } else if (k == 2 && x.lateness) {
        spread = baseline.asymmetryReady(t.baselineWindows()) ? baseline.asymmetrySpread() : 0;
      } else {
        spread = 0;
      }
      colSe = new double[k];
      se2 = x.se.map((i, v) -> v * v);
      if (k == 2) {
        double s = Math.sqrt(x.at(se2, 0, 1) + x.at(se2, 1, 0));
        colSe[0] = colSe[1] = s;
      } else if (k >= 3) {
        double[] sums = x.columnSums(se2, all(k));
        double[] counts = x.columnCounts(all(k));
        for (int j = 0; j < k; j++) colSe[j] = counts[j] > 0 ? Math.sqrt(sums[j] / counts[j]) : 0;
      }
      // The residual of a single cell: how far cells stray from their row and column effects.
      if (centring) {
        Weighted residuals = new Weighted();
        for (int i = 0; i < k; i++) {
          for (int c = 0; c < x.listed[i].length; c++) {
            residuals.add(Math.abs(centred.listed[i][c] - colEffect[x.listed[i][c]]), 1);
          }
          residuals.add(Math.abs(centred.other[i] - center), x.otherCount[i]);
        }
        cellSpread = MAD_TO_SD * residuals.median();
      } else {
        cellSpread = spread;
      }
      floor = Math.max(x.lateness ? t.absFloorUs() : t.minExcessUs(), t.relExcess() * x.cost);
      z = x.lateness ? t.z(k) : 0;
      zLink = x.lateness ? t.z((long) k * Math.max(1, k - 1)) : 0;
      z1 = t.z(1);
      // A column effect is the median of its cells: besides the spread between columns and its
      // cells' own errors, it carries their residuals' error, π/2 × σ² / rows for a median. With
      // few peers the spread (a median of a handful of effects) can come out near 0 by chance;
      // this term cannot.
      colNoise = new double[k];
      colBar = new double[k];
      double[] rowsOf = x.columnCounts(all(k));
      for (int j = 0; j < k; j++) {
        double cellTerm =
            k >= 3 && rowsOf[j] > 0 ? Math.PI / 2 * cellSpread * cellSpread / rowsOf[j] : 0;
        colNoise[j] = Math.sqrt(spread * spread + colSe[j] * colSe[j] + cellTerm);
        colBar[j] = Math.max(floor, z * colNoise[j]);
      }
      excess = centred.map((i, v) -> v - center);
      Cells cellSe = x.se;
      // Each cell against its own bar: the same spread, the cell's own standard error.
      high = excess.map((i, v) -> 0.0);
      for (int i = 0; i < k; i++) {
        for (int c = 0; c < x.listed[i].length; c++) {
          double b = bar(z, spread, cellSe.listed[i][c]);
          high.listed[i][c] = excess.listed[i][c] >= b ? 1 : 0;
        }
        high.other[i] = excess.other[i] >= bar(z, spread, cellSe.other[i]) ? 1 : 0;
      }
    }

    private static boolean[] all(int k) {
      boolean[] a = new boolean[k];
      Arrays.fill(a, true);
      return a;
    }

    /** The bar an effect of this noise must clear: floors, or z × sqrt(spread² + se²). */
    double bar(double zValue, double spreadUs, double seUs) {
      return Math.max(floor, zValue * Math.sqrt(spreadUs * spreadUs + seUs * seUs));
    }

    /** The median column bar: the window's threshold_us. */
    double typicalBar() {
      return k == 0 ? 0 : median(colBar.clone(), k);
    }

    /** The median noise a column effect was weighed against: the window's noise_us. */
    double typicalNoise() {
      if (k == 0) return 0;
      return median(colNoise.clone(), k);
    }

    /**
     * The standard error of the cost, as its rank's lateness errors show it: its wait is the last
     * of its peers' arrivals, as uncertain as a typical one. A host that stalls the ranks widens
     * every collective's spread, and this with it; a slowdown of every path moves the mean alone.
     */
    double costSe() {
      if (x.costRow < 0 || !x.lateness) return 0;
      return Math.sqrt(x.row(se2, x.costRow).median());
    }

    /** The largest column effect over the centre, in bars (0 when none is above it). */
    double largestRatio() {
      double max = 0;
      for (int j = 0; j < k; j++) {
        if (colBar[j] > 0) max = Math.max(max, (colEffect[j] - center) / colBar[j]);
      }
      return max;
    }

    /** Two ranks with lateness: rank 1's lateness less rank 0's, as their cells show; else NaN. */
    double asymmetry() {
      return k == 2 && x.lateness ? colEffect[1] - colEffect[0] : Double.NaN;
    }

    /**
     * The missing ranks that the present ranks wait on: the column test of the slow rank, without
     * the row test, over each present rank's lateness of the missing rank plus the share of its
     * guard time that its timeouts stand for.
     */
    List<Finding> silentRanks() {
      List<Finding> found = new ArrayList<>();
      if (k == 0) return found;
      for (int s : x.missing) {
        int highCount = 0;
        int lateHighCount = 0;
        long timeouts = 0;
        long calls = 0;
        double[] v = new double[k];
        double se2 = 0;
        for (int i = 0; i < k; i++) {
          RankWindow w = x.rows[i];
          double cell = x.late(i, s);
          double se = x.lateSe(i, s);
          // A timed-out wait counts the peers it never saw late by the whole wait: timeouts on s
          // show in its lateness itself.
          if (cell - rowEffect[i] - center >= bar(z, spread, se)) lateHighCount++;
          // A timed-out guard waited for an ack nobody billed to a peer: see the class comment.
          if (w.getTimeouts() > 0 && w.getCalls() > 0) {
            double timedOut = Math.min(1.0, (double) w.getTimeouts() / w.getCalls());
            cell += meanUs(w, Phase.GUARD) * timedOut / x.missing.size();
          }
          v[i] = cell - rowEffect[i] - center;
          se2 += se * se;
          if (v[i] >= bar(z, spread, se)) {
            highCount++;
            timeouts += w.getTimeouts();
            calls += w.getCalls();
          }
        }
        double effect = median(v, k);
        double colBarS = bar(z, spread, Math.sqrt(se2 / k));
        double highFrac = (double) highCount / k;
        if (highFrac < t.columnFraction() || effect < colBarS) continue;
        // The timeouts were on s when its lateness alone is high in most rows (each timed-out wait
        // counts it late by the whole budget), or when they are a share of the collectives too
        // large for a few unrelated aborts (once nothing is acked, every collective times out in
        // guard, with no per-peer wait at all). A rank only late to report has neither.
        boolean timedOut =
            timeouts > 0
                && ((double) lateHighCount / k >= t.columnFraction()
                    || timeouts >= TIMED_OUT_SHARE * calls);
        // Alone, a rank has nobody to compare a missing peer with: only timeouts say it is silent.
        if (k < 2 && !timedOut) continue;
        found.add(
            new Finding(
                FindingKind.SILENT_RANK,
                s,
                -1,
                timedOut ? Cause.TIMED_OUT : Cause.NOT_REPORTING,
                confidence(highFrac, effect, colBarS),
                effect,
                String.format(
                    Locale.ROOT,
                    "%d of %d present ranks waited on rank %d, which sent no data, %.1fus/call"
                        + " more than on a typical peer (bar %.1fus); %s",
                    highCount,
                    k,
                    s,
                    effect,
                    colBarS,
                    timedOut
                        ? String.format(
                            Locale.ROOT, "they timed out in %d of their %d calls", timeouts, calls)
                        : timeouts > 0
                            ? String.format(
                                Locale.ROOT,
                                "they timed out in only %d of their %d calls: it runs, but does"
                                    + " not report",
                                timeouts,
                                calls)
                            : "none of them timed out: it runs, but does not report"),
                "",
                io.collscope.avro.HardwareCause.NONE,
                ""));
      }
      return found;
    }

    /** Slow ranks (steadily, as a majority, or intermittently) and slow links. */
    List<Finding> slowRanksAndLinks() {
      List<Finding> findings = new ArrayList<>();
      boolean[] slow = new boolean[k];
      double[] highCount = x.columnSums(high, all(k));
      double[] count = x.columnCounts(all(k));
      passes = new boolean[k];
      List<Integer> pass = new ArrayList<>();
      for (int j = 0; j < k; j++) {
        passes[j] =
            count[j] > 0
                && Math.round(highCount[j]) / count[j] >= t.columnFraction()
                && colEffect[j] - center >= colBar[j];
        if (passes[j]) pass.add(j);
      }
      passing = pass.stream().mapToInt(Integer::intValue).toArray();
      for (int j = 0; j < k; j++) {
        if (colBar[j] > 0) lean(x.present.get(j), (colEffect[j] - center) / colBar[j]);
      }
      for (int j = 0; j < k; j++) {
        if (!passes[j]) continue;
        Finding f = slowRank(j, Math.round(highCount[j]), count[j]);
        if (f != null) {
          slow[j] = true;
          findings.add(f);
        }
      }
      if (findings.isEmpty() && k >= 3) findings.addAll(mostRanksLate(slow));
      // The tail test runs over the rows that have tails, whatever the others are: one emitter
      // without lateness does not take it from the rest.
      if (k >= 3) {
        for (int j = 0; j < k; j++) {
          if (slow[j] || passes[j]) continue;
          Finding f = intermittent(j);
          if (f != null) {
            slow[j] = true;
            findings.add(f);
          }
        }
      }
      if (k >= 3) findings.addAll(slowLinks(slow));
      if (k == 2 && !x.lateness && findings.isEmpty()) {
        Finding link = twoRankLink();
        if (link != null) findings.add(link);
      }
      return findings;
    }

    /** The column test's finding for passing column j, or null when j fails the row test. */
    private Finding slowRank(int j, long highCount, double count) {
      double colExcess = colEffect[j] - center;
      // Only its high cells count: summed noise over many small cells is not waiting.
      // ... unless q waits on j as well: then neither is simply later than the other.
      double rowExcess = 0;
      int[] cols = x.listed[j];
      for (int c = 0; c < cols.length; c++) {
        int q = cols[c];
        if (high.listed[j][c] > 0 && (!passes[q] || x.at(high, q, j) > 0)) {
          rowExcess += excess.listed[j][c];
        }
      }
      if (x.otherCount[j] > 0 && high.other[j] > 0) {
        int excluded = 0;
        for (int q : passing) {
          if (q != j && x.cellOf(j, q) < 0 && x.at(high, q, j) == 0) excluded++;
        }
        rowExcess += excess.other[j] * (x.otherCount[j] - excluded);
      }
      if (rowExcess > t.rowRatio() * colExcess) return null;
      int rank = x.present.get(j);
      if (!confirmed(rank, colExcess / colBar[j])) return null;
      RankWindow w = x.byRank.get(rank);
      double lastShare = x.columnSums(x.lastShare, all(k))[j] / count;
      double highFrac = highCount / count;
      double seen = highRowsMedian(j);
      return new Finding(
          FindingKind.SLOW_RANK,
          rank,
          -1,
          cause(w, colExcess),
          confidence(highFrac, colExcess, colBar[j])
              * (rowExcess > 0 ? Math.max(0, 1 - rowExcess / colExcess / 2) : 1),
          colExcess,
          String.format(
              Locale.ROOT,
              "%d of %d peers saw rank %d late by %.1fus/call (median of those; %.1fus over a"
                  + " typical peer over all of them), bar %.1fus%s%s; it saw its peers %.1fus late"
                  + " itself and gated %.0f%% of their collectives; %s",
              highCount,
              (long) count,
              rank,
              seen,
              colExcess,
              colBar[j],
              barReason(colBar[j], colNoise[j]),
              tailNote(j),
              rowExcess,
              100 * lastShare,
              causeEvidence(w)),
          "",
          io.collscope.avro.HardwareCause.NONE,
          "");
    }

    /**
     * For a slow rank late in only some collectives (its tail share clears the tail test's bar, in
     * under half of them): how its lateness is spread, so the evidence says both.
     */
    private String tailNote(int j) {
      if (k < 3 || tailRowsBut(j) < 2) return "";
      TailEffects te = tails();
      double tau = te.effect[j] - te.center;
      if (tau < te.bar || tau >= 0.5) return "";
      return String.format(
          Locale.ROOT,
          "; late in a few collectives: beyond the tail edge in %.1f%% more of them than a typical"
              + " peer (bar %.1f%%)",
          100 * tau,
          100 * te.bar);
    }

    /** The median excess of column j over the rows whose cell clears its bar. */
    private double highRowsMedian(int j) {
      List<Double> v = new ArrayList<>();
      for (int i = 0; i < k; i++) {
        if (i == j) continue;
        int c = x.cellOf(i, j);
        if (c >= 0) {
          if (high.listed[i][c] > 0) v.add(excess.listed[i][c]);
        } else if (high.other[i] > 0) {
          v.add(excess.other[i]);
        }
      }
      return median(v);
    }

    /** What set the bar: the floors, or the statistics. */
    private String barReason(double b, double noiseUs) {
      if (z * noiseUs >= b) {
        return String.format(
            Locale.ROOT, " = z %.1f x noise %.1fus (spread %.1fus)", z, noiseUs, spread);
      }
      return String.format(
          Locale.ROOT,
          " = the floor (max of %.1fus and %.0f%% of the %.1fus collective)",
          x.lateness ? t.absFloorUs() : t.minExcessUs(),
          100 * t.relExcess(),
          x.cost);
    }

    /**
     * Most ranks late: when no column passed and a minority of rows waits on everyone (their row
     * effects clear a bar like the columns'), every other rank is judged over those early rows
     * alone, against the late ranks' own lower quartile of lateness: each late rank must clear its
     * cell's bar in every early row and the column's bar in their median.
     */
    private List<Finding> mostRanksLate(boolean[] slow) {
      List<Finding> found = new ArrayList<>();
      if (!x.lateness) return found;
      double[] rowStats = trimmedCenterAndSpread(rowEffect.clone());
      double rowCenter = rowStats[0];
      double rowSpread = rowStats[1];
      boolean[] early = new boolean[k];
      int earlyCount = 0;
      for (int i = 0; i < k; i++) {
        double rowSe = Math.sqrt(x.row(se2, i).median());
        early[i] = rowEffect[i] - rowCenter >= bar(z, rowSpread, rowSe);
        if (early[i]) earlyCount++;
      }
      if (earlyCount == 0 || 2 * earlyCount >= k) return found;
      Weighted lateCells = new Weighted();
      for (int i = 0; i < k; i++) {
        if (early[i]) continue;
        for (double v : x.mean.listed[i]) lateCells.add(v, 1);
        lateCells.add(x.mean.other[i], x.otherCount[i]);
      }
      double base = lateCells.size() == 0 ? 0 : lateCells.lowerQuartile();
      for (int j = 0; j < k; j++) {
        if (early[j]) continue;
        List<Double> v = new ArrayList<>();
        double se2 = 0;
        boolean everyRow = true;
        for (int i = 0; i < k; i++) {
          if (!early[i]) continue;
          double e = x.at(x.mean, i, j) - base;
          double se = x.at(x.se, i, j);
          se2 += se * se;
          everyRow &= e >= bar(z, rowSpread, se);
          v.add(e);
        }
        double effect = median(v);
        double b = bar(z, rowSpread, Math.sqrt(se2 / earlyCount));
        if (!everyRow || effect < b) continue;
        int rank = x.present.get(j);
        if (!confirmed(rank, effect / b)) continue;
        slow[j] = true;
        RankWindow w = x.byRank.get(rank);
        found.add(
            new Finding(
                FindingKind.SLOW_RANK,
                rank,
                -1,
                cause(w, effect),
                confidence(1.0, effect, b),
                effect,
                String.format(
                    Locale.ROOT,
                    "most ranks were late: the %d early rank(s) saw rank %d late by %.1fus/call"
                        + " over the late ranks' own %.1fus (bar %.1fus); %s",
                    earlyCount,
                    rank,
                    effect,
                    base,
                    b,
                    causeEvidence(w)),
                "",
                io.collscope.avro.HardwareCause.NONE,
                ""));
      }
      return found;
    }

    /**
     * The tail test for column j: its share of collectives beyond each row's tail edge over the
     * row's typical share, against the shares' between-peer spread and binomial error.
     */
    private Finding intermittent(int j) {
      if (tailRowsBut(j) < 2) return null;
      boolean[] tailRows = x.hasTail;
      TailEffects te = tails();
      double tau = te.effect[j] - te.center;
      if (tau < te.bar) return null;
      // Most rows must see it.
      int seen = 0;
      int rowsOf = 0;
      for (int i = 0; i < k; i++) {
        if (!tailRows[i] || i == j) continue;
        rowsOf++;
        if (x.at(te.shifted, i, j) - te.center >= te.bar) seen++;
      }
      if ((double) seen / rowsOf < t.columnFraction()) return null;
      // It waits little itself: no peer is in its own tail as much as it is in theirs.
      if (tailRows[j]) {
        double own = 0;
        for (double v : te.shifted.listed[j]) own = Math.max(own, v - te.center);
        if (x.otherCount[j] > 0) own = Math.max(own, te.shifted.other[j] - te.center);
        if (own > t.rowRatio() * tau) return null;
      }
      double lastShare = x.columnSums(x.lastShare, tailRows)[j] / x.columnCounts(tailRows)[j];
      if (lastShare < t.minGatedShare() || lastShare > INTERMITTENT_MAX_GATED) return null;
      int rank = x.present.get(j);
      double meanExcess = Math.max(0, colEffect[j] - center);
      // Its excess is the lateness in the collectives it was late in: the mean spread over them.
      List<Double> edges = new ArrayList<>();
      for (int i = 0; i < k; i++) if (tailRows[i]) edges.add(x.rows[i].getLateTailEdgeUs());
      // ... and at least the tail edge it was beyond there.
      double whenLate = Math.max(meanExcess / Math.max(tau, t.minTailShare()), median(edges));
      // Late in those by less than the floor is the placement's own skew (the last of several
      // ranks one dispatcher launches on a shared GPU), not a culprit.
      if (whenLate < TAIL_MARGIN * floor) return null;
      if (!confirmed(rank, tau / te.bar)) return null;
      return new Finding(
          FindingKind.SLOW_RANK,
          rank,
          -1,
          cause(x.byRank.get(rank), meanExcess),
          confidence((double) seen / rowsOf, tau, te.bar),
          whenLate,
          String.format(
              Locale.ROOT,
              "%d of %d peers saw rank %d late in a few collectives: beyond the %.0fus tail edge in"
                  + " %.1f%% more of them than a typical peer (bar %.1f%%), about %.0fus late in"
                  + " those (%.1fus/call over a typical peer on the mean); it gated %.0f%% of"
                  + " their collectives",
              seen,
              rowsOf,
              rank,
              median(edges),
              100 * tau,
              100 * te.bar,
              whenLate,
              meanExcess,
              100 * lastShare),
          "",
          io.collscope.avro.HardwareCause.NONE,
          "");
    }

    /** The tail shares' effects: rows centred on their median share, columns by median. */
    private final class TailEffects {
      final Cells shifted;
      final double[] effect;
      final double center;
      final double bar;

      TailEffects() {
        boolean[] tailRows = x.hasTail;
        double[] typical = new double[k];
        List<Double> typicals = new ArrayList<>();
        long minSampled = Long.MAX_VALUE;
        for (int i = 0; i < k; i++) {
          if (!tailRows[i]) continue;
          typical[i] = x.row(x.tail, i).median();
          typicals.add(typical[i]);
          minSampled = Math.min(minSampled, SampledCalls.of(x.rows[i]));
        }
        shifted = x.tail.map((i, v) -> v - typical[i]);
        boolean[] excluded = new boolean[k];
        for (int i = 0; i < k; i++) excluded[i] = !tailRows[i];
        ColumnMedians medians = new ColumnMedians(x, shifted, excluded);
        effect = new double[k];
        for (int j = 0; j < k; j++) effect[j] = medians.of(j).medianWithout(-1);
        double[] stats = trimmedCenterAndSpread(effect.clone());
        center = stats[0];
        double spreadShare = stats[1];
        double p0 = Math.max(median(typicals), 1.0 / Math.max(1, minSampled));
        double binomial = Math.sqrt(p0 * (1 - p0) / Math.max(1, minSampled));
        bar =
            Math.max(
                t.minTailShare(),
                t.z(k) * Math.sqrt(spreadShare * spreadShare + binomial * binomial));
      }
    }

    /** The tail effects over the rows that have tails, computed once a window when first asked. */
    private TailEffects tails() {
      if (tails == null) tails = new TailEffects();
      return tails;
    }

    private TailEffects tails;

    /** The rows with tails other than row j. */
    private int tailRowsBut(int j) {
      int n = 0;
      for (int i = 0; i < k; i++) if (x.hasTail[i] && i != j) n++;
      return n;
    }

    /** Single cells that stand out of their column: the slow links. */
    private List<Finding> slowLinks(boolean[] slow) {
      List<Finding> links = new ArrayList<>();
      ColumnMedians medians = null;
      for (int j = 0; j < k; j++) {
        if (slow[j]) continue;
        ColumnMedians.ColumnMedian column = null;
        for (int i = 0; i < k; i++) {
          if (i == j || slow[i]) continue;
          double e = x.at(excess, i, j);
          double se = x.at(x.se, i, j);
          // The cell against the median of its column's other cells: the cell's own error and
          // residual, and the median's (π/2 × the residual² over the other rows, and their errors).
          double others2 = Math.PI / 2 * cellSpread * cellSpread / Math.max(1, k - 2);
          double b =
              Math.max(
                  floor,
                  zLink
                      * Math.sqrt(
                          cellSpread * cellSpread + se * se + others2 + colSe[j] * colSe[j]));
          if (e < b) continue;
          // The other ranks' view of j, from ranks that are not late themselves: a late rank sees
          // everyone early. With no such rank left there is nothing to compare the cell with.
          if (column == null) {
            if (medians == null) medians = new ColumnMedians(x, excess, slow);
            column = medians.of(j);
          }
          int others = column.size() - (column.holds(i) ? 1 : 0);
          if (others == 0) continue;
          double med = column.medianWithout(i);
          if (e - med < b) continue;
          int receiver = x.present.get(i);
          int sender = x.present.get(j);
          double share = x.at(x.tail, i, j);
          double othersShare = median(columnValues(x.tail, j, i, slow));
          links.add(
              new Finding(
                  FindingKind.SLOW_LINK,
                  receiver,
                  sender,
                  Cause.LINK,
                  confidence(1.0, e - med, b),
                  e - med,
                  String.format(
                      Locale.ROOT,
                      "rank %d saw rank %d %.1fus/call later than the other ranks saw it (bar"
                          + " %.1fus); beyond the %.0fus tail edge in %.0f%% of the collectives"
                          + " against %.0f%% for the others",
                      receiver,
                      sender,
                      e - med,
                      b,
                      x.rows[i].getLateTailEdgeUs(),
                      100 * share,
                      100 * othersShare),
                  "",
                  io.collscope.avro.HardwareCause.NONE,
                  ""));
        }
      }
      return links;
    }

    /**
     * Two ranks with waits only (counters without lateness): a high cell that no rank explains is
     * the only link there is, reported once, the larger cell's direction, at half confidence.
     */
    private Finding twoRankLink() {
      int j = colEffect[1] >= colEffect[0] ? 1 : 0;
      int i = 1 - j;
      double e = colEffect[j] - center;
      if (x.at(high, i, j) == 0 || e < colBar[j]) return null;
      int receiver = x.present.get(i);
      int sender = x.present.get(j);
      return new Finding(
          FindingKind.SLOW_LINK,
          receiver,
          sender,
          Cause.LINK,
          confidence(1.0, e, colBar[j]) * 0.5,
          e,
          String.format(
              Locale.ROOT,
              "rank %d waited %.1fus/call on rank %d (bar %.1fus); with 2 ranks the link's"
                  + " direction cannot be told from waits alone",
              receiver,
              e,
              sender,
              colBar[j]),
          "",
          io.collscope.avro.HardwareCause.NONE,
          "");
    }

    /** Column j's values of q over the rows neither excluded nor {@code except} nor j. */
    private List<Double> columnValues(Cells q, int j, int except, boolean[] excluded) {
      List<Double> v = new ArrayList<>();
      for (int i = 0; i < k; i++) {
        if (i == j || i == except || excluded[i]) continue;
        v.add(x.at(q, i, j));
      }
      return v;
    }

    /** The collective got slower than its baseline with no culprit that explains it. */
    Finding uniformSlowdown(WindowBaseline baseline, double baselineUs) {
      // Judged against the baseline's own spread, not the window's matrix: a slowdown that reaches
      // every rank makes every cell wider too, which says nothing about the cost. Smaller
      // regressions are the alerts' to find, over several windows.
      double excess = x.cost - baselineUs;
      double needed =
          Math.max(
              Math.max(t.uniformRel() * baselineUs, UNIFORM_SPREADS * baseline.upperSpread()),
              z1 * costSe());
      slowerThanBaseline = excess >= needed;
      if (!slowerThanBaseline || baseline.slowerInARow + 1 < UNIFORM_WINDOWS) return null;
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
              "the collective costs %.1fus/call, %.0f%% over its baseline of %.1fus, with no rank"
                  + " or link later than the others; median phases now/baseline (us/call):%s",
              x.cost,
              100 * excess / baselineUs,
              baselineUs,
              phases),
          "",
          io.collscope.avro.HardwareCause.NONE,
          "");
    }

    /** Grows with how far the effect clears its bar and the share that sees it. */
    private double confidence(double share, double effect, double bar) {
      return clamp(share * (1 - Math.exp(-effect / Math.max(bar, 1e-9)))) * x.callsFactor(t);
    }

    /**
     * Why a slow rank was slow: the cause whose phases exceed the peers' median the most, if they
     * explain enough of the excess; otherwise it arrived late (the time went before the collective,
     * in compute or launch).
     */
    private Cause cause(RankWindow w, double excessUs) {
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
      if (best == null || bestExcess < t.causeShare() * excessUs || bestExcess < typicalBar() / 2) {
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
      case SLOW_NODE -> Verdict.SLOW_NODE;
      case UNKNOWN -> Verdict.UNKNOWN;
    };
  }

  /** The time a rank spent in the phases a cause blames, per collective. */
  private static double blamedUs(RankWindow w, Cause c) {
    double us = 0;
    for (Phase p : Phase.values()) if (p.blame() == c) us += meanUs(w, p);
    return us;
  }
}
