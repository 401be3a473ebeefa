package io.collscope.flink.attribution;

import static io.collscope.flink.attribution.LatenessMatrix.meanUs;
import static io.collscope.flink.attribution.RobustStatistics.clamp;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import io.collscope.model.SampledCalls;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

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
 * <p><b>The order of the tests.</b> This class holds the rule's contract — the order below and the
 * rule's own parameters (the constants below; a deployment's are {@link Thresholds}) — and each
 * test is a class of its own:
 *
 * <ol>
 *   <li>the window's {@link LatenessMatrix} and its {@link WindowEffects} (row and column effects,
 *       centre, spread, bars), once, read by every test;
 *   <li>{@link SilentRankRule}: the missing ranks the present ones wait on;
 *   <li>with two present ranks or more, against present ranks only: {@link SlowRankRule}'s column
 *       test (each passing column a slow rank), then, when none was named, most ranks late; {@link
 *       IntermittentRule}'s tail test over the columns not yet named; {@link SlowLinkRule}'s cells
 *       between ranks not named (with two ranks of waits only, their one link). In a window with a
 *       TIMED_OUT silent rank these must reach {@link Thresholds#abortShare()} of its excess;
 *   <li>{@link NetworkLinks}: inter-node links from NCCL's network proxy steps;
 *   <li>{@link UniformSlowdownRule}, only when nothing was found;
 *   <li>{@link SlowNodes}: the findings of one node's ranks grouped into one; strongest first.
 * </ol>
 *
 * Every matrix finding is named only once {@link Confirmation} confirms it: it cleared its bar
 * {@link #STRONG} times, or the window before leaned the same way.
 *
 * <p>Each culprit is one {@link Finding}, strongest first; several make the verdict MULTIPLE. A
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
    WindowEffects effects = new WindowEffects(x, t, baseline);
    Confirmation confirmation = new Confirmation(previous);

    List<Finding> findings = SilentRankRule.find(effects);
    double timedOutExcess =
        findings.stream()
            .filter(f -> f.getCause() == Cause.TIMED_OUT)
            .mapToDouble(Finding::getExcessWaitUs)
            .max()
            .orElse(0);
    // One rank waits on no present peer: only silent ranks can be named.
    if (x.k >= 2) {
      for (Finding f : slowRanksAndLinks(effects, confirmation)) {
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
    boolean slowerThanBaseline = false;
    if (baselineUs > 0 && x.k >= 1 && findings.isEmpty()) {
      UniformSlowdownRule.Result u = UniformSlowdownRule.judge(effects, baseline, baselineUs);
      slowerThanBaseline = u.slowerThanBaseline();
      if (u.finding() != null) findings.add(u.finding());
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
      confidence = clamp(1.0 - effects.largestRatio() / 2) * x.callsFactor(t);
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
            .setThresholdUs(effects.typicalBar())
            .setNoiseUs(effects.typicalNoise())
            .build();
    boolean teaches =
        findings.isEmpty()
            && x.missing.isEmpty()
            && x.unmeasured.isEmpty()
            && x.cost > 0
            && effects.largestRatio() < TEACHING_SHARE
            && x.evenCalls();
    // A clean window over the uniform band teaches only once its run ended unnamed (a busy host's
    // cost wanders for seconds at a time, and the upper spread must see that): AttributionFunction
    // holds it until then (WindowBaseline.holdExcursion).
    return new Judged(a, teaches, effects.asymmetry(), slowerThanBaseline, confirmation.leaning);
  }

  /**
   * The matrix tests against present ranks, in the rule's order (see the class comment): the column
   * test (slow ranks), most ranks late when no column named one, the tail test (intermittently slow
   * ranks) over the columns not yet named, then single cells (slow links) over the ranks not named,
   * and with two ranks of waits only, their one link.
   */
  private static List<Finding> slowRanksAndLinks(WindowEffects effects, Confirmation confirmation) {
    int k = effects.k;
    List<Finding> findings = new ArrayList<>();
    boolean[] slow = new boolean[k];
    IntermittentRule intermittent = new IntermittentRule(effects);
    SlowRankRule slowRanks = new SlowRankRule(effects, confirmation, intermittent);
    for (int j = 0; j < k; j++) {
      if (!slowRanks.passes[j]) continue;
      Finding f = slowRanks.find(j);
      if (f != null) {
        slow[j] = true;
        findings.add(f);
      }
    }
    if (findings.isEmpty() && k >= 3) findings.addAll(slowRanks.mostRanksLate(slow));
    // The tail test runs over the rows that have tails, whatever the others are: one emitter
    // without lateness does not take it from the rest.
    if (k >= 3) {
      for (int j = 0; j < k; j++) {
        if (slow[j] || slowRanks.passes[j]) continue;
        Finding f = intermittent.find(j, confirmation);
        if (f != null) {
          slow[j] = true;
          findings.add(f);
        }
      }
    }
    if (k >= 3) findings.addAll(SlowLinkRule.find(effects, slow));
    if (k == 2 && !effects.x.lateness && findings.isEmpty()) {
      Finding link = SlowLinkRule.twoRankLink(effects);
      if (link != null) findings.add(link);
    }
    return findings;
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
}
