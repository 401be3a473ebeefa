package io.collscope.flink.attribution;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

/**
 * The attribution rule, as a pure function of one communicator's rank windows.
 *
 * <p>Build the delay matrix {@code M[r][p]}: mean wait per collective of rank r billed to peer p.
 * Its noise floor is the lower quartile of the off-diagonal cells (zero with two ranks, where there
 * are too few cells to tell noise from signal); a cell is high when it exceeds the floor by {@link
 * Thresholds#minExcessUs()} and by a factor {@link Thresholds#cellFactor()}.
 *
 * <ul>
 *   <li><b>Slow rank p</b>: most of column p is high (every peer waits on p) and p itself waits
 *       little — the straggler arrives last and waits least. Its own phases say why: the cause
 *       ({@link Phase#blame()}) whose phases exceed its peers' most, e.g. {@code guard} →
 *       RING_FULL, {@code publish} → SLOW_PUBLISH, {@code copy+reduce} → SLOW_COPY_REDUCE; none →
 *       ARRIVED_LATE.
 *   <li><b>Slow link p→r</b>: one cell (r, p) high that stands out of its column (the other ranks
 *       do not wait on p). Its receiver r then arrives late at the next collective, so column r is
 *       high too, but r waits as much as it is waited on: a victim, not a culprit.
 * </ul>
 *
 * A rank missing from the window has no row and no column in that matrix, but the present ranks'
 * rows still bill it what they waited on it:
 *
 * <ul>
 *   <li><b>Silent rank s</b>: s is missing, yet the present ranks' column on s passes the slow-rank
 *       column test against the same noise floor — at least {@link Thresholds#columnFraction()} of
 *       the present ranks have a high cell on s, and their mean excess on it is at least {@link
 *       Thresholds#minExcessUs()}. There is no row test: s has no row. If the ranks that waited on
 *       it counted timeouts, their waits on it passed their budget (TIMED_OUT: it died or hangs);
 *       otherwise it keeps up, late, but its reporter is gone (NOT_REPORTING). A missing rank whose
 *       column is noise (its window simply has no data) is only listed as missing.
 *   <li>A collective that times out in {@code guard} waited for a peer's ack of a ring slot that
 *       never came, and {@code guard} is not billed per peer; once timed-out collectives go
 *       unacked, every later one times out there, with no per-peer wait at all. So a present rank
 *       that counted timeouts has its guard time billed in equal shares to the missing ranks — as
 *       the emitter bills a timed-out wait in equal shares to the peers it never saw.
 *   <li><b>Aborts are not culprits</b>: a timeout abandons the collective at a different moment on
 *       each rank, so the present ranks fall out of step and wait on each other for a while. Those
 *       waits are a small share of the timeouts that caused them (in the recorded dead-rank run,
 *       with 1 s budgets, the present ranks then waited 1–4 ms per call on each other: 0.1–0.4% of
 *       the silent rank's excess), so in a window with a TIMED_OUT silent rank a finding against
 *       present ranks must also reach {@link Thresholds#abortShare()} (a tenth) of the silent
 *       rank's excess wait, well above that. The matrix of the present ranks never held the silent
 *       rank's column, so nothing else changes. Without timeouts nothing is aborted, and the
 *       present ranks are attributed as usual.
 * </ul>
 *
 * Each culprit is one {@link Finding}; several are reported for one window with the verdict
 * MULTIPLE.
 */
public final class Attributor {

  private Attributor() {}

  public static Attribution attribute(
      CommunicatorKey communicator,
      long startMs,
      long endMs,
      List<RankWindow> windows,
      Thresholds t) {
    int n = 0;
    TreeMap<Integer, RankWindow> byRank = new TreeMap<>();
    for (RankWindow w : windows) {
      n = Math.max(n, w.getWorldSize());
      byRank.put(w.getRank(), w);
    }
    List<Integer> present = new ArrayList<>();
    List<Integer> missing = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      RankWindow w = byRank.get(r);
      if (w != null && w.getCalls() > 0 && w.getPeerWaitMeanUs().size() == n) present.add(r);
      else missing.add(r);
    }

    List<RankPhases> table = new ArrayList<>();
    int maxWaitRank = -1;
    double maxWait = 0;
    for (int r : present) {
      RankWindow w = byRank.get(r);
      RankPhases row = new RankPhases();
      row.setRank(r);
      row.setCalls(w.getCalls());
      for (Phase p : Phase.values()) row.put(p.meanUsField(), meanUs(w, p));
      row.setP99Us(w.getP99Us());
      table.add(row);
      if (maxWaitRank < 0 || w.getWaitMeanUs() > maxWait) {
        maxWait = w.getWaitMeanUs();
        maxWaitRank = r;
      }
    }

    Attribution.Builder out =
        Attribution.newBuilder()
            .setCluster(communicator.cluster())
            .setJob(communicator.job())
            .setCommunicator(communicator.communicator())
            .setWindowStart(Instant.ofEpochMilli(startMs))
            .setWindowEnd(Instant.ofEpochMilli(endMs))
            .setWorldSize(n)
            .setRanks(table)
            .setMaxWaitRank(maxWaitRank)
            .setMaxWaitMeanUs(maxWait)
            .setMissingRanks(missing);

    int k = present.size();
    double[][] m = new double[k][k];
    List<Double> cells = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      List<Double> row = byRank.get(present.get(i)).getPeerWaitMeanUs();
      for (int j = 0; j < k; j++) {
        if (i == j) continue;
        m[i][j] = row.get(present.get(j));
        cells.add(m[i][j]);
      }
    }
    double base = k <= 2 ? 0 : lowerQuartile(cells);

    List<Finding> findings = silentRanks(present, missing, byRank, base, t);
    double timedOutExcess =
        findings.stream()
            .filter(f -> f.getCause() == Cause.TIMED_OUT)
            .mapToDouble(Finding::getExcessWaitUs)
            .max()
            .orElse(0);
    // One rank waits on no present peer: only silent ranks can be named.
    if (k >= 2) {
      for (Finding f : slowRanksAndLinks(present, byRank, m, base, t)) {
        if (f.getExcessWaitUs() >= t.abortShare() * timedOutExcess) findings.add(f);
      }
    }
    findings.sort(Comparator.comparingDouble(Finding::getExcessWaitUs).reversed());

    double confidence;
    if (!findings.isEmpty()) {
      confidence = findings.get(0).getConfidence();
    } else if (k < 2) {
      // With the others missing there is nothing to compare.
      confidence = n == 1 ? 1.0 : 0.0;
    } else {
      double maxExcess =
          Math.max(0, cells.stream().mapToDouble(Double::doubleValue).max().orElse(0) - base);
      confidence = clamp(1.0 - maxExcess / (2 * t.minExcessUs()));
    }
    return out.setVerdict(verdict(findings))
        .setFindings(findings)
        .setConfidence(confidence)
        .build();
  }

  /**
   * The missing ranks that the present ranks wait on: column test of the slow rank, without the row
   * test, over each present rank's wait billed to the missing rank plus, if it timed out, its share
   * of its guard time.
   */
  private static List<Finding> silentRanks(
      List<Integer> present,
      List<Integer> missing,
      TreeMap<Integer, RankWindow> byRank,
      double base,
      Thresholds t) {
    List<Finding> found = new ArrayList<>();
    if (present.isEmpty()) return found;
    int k = present.size();
    for (int s : missing) {
      int highCount = 0;
      double colExcess = 0;
      long timeouts = 0;
      long calls = 0;
      for (int r : present) {
        RankWindow w = byRank.get(r);
        double cell = w.getPeerWaitMeanUs().get(s);
        // A timed-out guard waited for an ack nobody billed to a peer: see the class comment.
        if (w.getTimeouts() > 0) cell += meanUs(w, Phase.GUARD) / missing.size();
        double excess = Math.max(0, cell - base);
        colExcess += excess;
        if (excess >= t.minExcessUs() && cell >= t.cellFactor() * base) {
          highCount++;
          timeouts += w.getTimeouts();
          calls += w.getCalls();
        }
      }
      colExcess /= k;
      double highFrac = (double) highCount / k;
      if (highFrac < t.columnFraction() || colExcess < t.minExcessUs()) continue;
      found.add(
          new Finding(
              FindingKind.SILENT_RANK,
              s,
              -1,
              timeouts > 0 ? Cause.TIMED_OUT : Cause.NOT_REPORTING,
              clamp(highFrac * colExcess / (colExcess + base)),
              colExcess,
              String.format(
                  Locale.ROOT,
                  "%d of %d present ranks waited on rank %d, which sent no data, %.1fus/call over the %.1fus floor; %s",
                  highCount,
                  k,
                  s,
                  colExcess,
                  base,
                  timeouts > 0
                      ? String.format(
                          Locale.ROOT, "they timed out in %d of their %d calls", timeouts, calls)
                      : "none of them timed out: it runs, but does not report")));
    }
    return found;
  }

  /** Slow ranks and slow links among the present ranks, from their delay matrix {@code m}. */
  private static List<Finding> slowRanksAndLinks(
      List<Integer> present,
      TreeMap<Integer, RankWindow> byRank,
      double[][] m,
      double base,
      Thresholds t) {
    int k = present.size();
    double[][] e = new double[k][k];
    boolean[][] high = new boolean[k][k];
    for (int i = 0; i < k; i++) {
      for (int j = 0; j < k; j++) {
        if (i == j) continue;
        e[i][j] = Math.max(0, m[i][j] - base);
        high[i][j] = e[i][j] >= t.minExcessUs() && m[i][j] >= t.cellFactor() * base;
      }
    }

    List<Finding> findings = new ArrayList<>();
    boolean[] slow = new boolean[k];
    for (int j = 0; j < k; j++) {
      int highCount = 0;
      double colExcess = 0;
      double lastShare = 0;
      for (int i = 0; i < k; i++) {
        if (i == j) continue;
        if (high[i][j]) highCount++;
        colExcess += e[i][j];
        RankWindow wi = byRank.get(present.get(i));
        lastShare += (double) wi.getPeerArrivedLast().get(present.get(j)) / wi.getCalls();
      }
      colExcess /= (k - 1);
      lastShare /= (k - 1);
      double highFrac = (double) highCount / (k - 1);
      double rowExcess = 0;
      // Only its high cells count: summed noise over many small cells is not waiting.
      for (int q = 0; q < k; q++) if (q != j && high[j][q]) rowExcess += e[j][q];
      if (highFrac >= t.columnFraction()
          && colExcess >= t.minExcessUs()
          && rowExcess <= t.rowRatio() * colExcess) {
        slow[j] = true;
        RankWindow w = byRank.get(present.get(j));
        Cause cause = cause(w, present, byRank, colExcess, t);
        double conf = clamp(highFrac * colExcess / (colExcess + base + rowExcess));
        findings.add(
            new Finding(
                FindingKind.SLOW_RANK,
                present.get(j),
                -1,
                cause,
                conf,
                colExcess,
                String.format(
                    Locale.ROOT,
                    "%d of %d peers waited on rank %d, %.1fus/call over the %.1fus floor; it waited %.1fus itself and arrived last in %.0f%% of its peers' collectives; %s",
                    highCount,
                    k - 1,
                    present.get(j),
                    colExcess,
                    base,
                    rowExcess,
                    100 * lastShare,
                    causeEvidence(w, present, byRank))));
      }
    }

    List<Finding> links = new ArrayList<>();
    for (int j = 0; j < k; j++) {
      if (slow[j]) continue;
      for (int i = 0; i < k; i++) {
        if (i == j || !high[i][j]) continue;
        List<Double> others = new ArrayList<>();
        for (int q = 0; q < k; q++) if (q != i && q != j) others.add(e[q][j]);
        double med = others.isEmpty() ? 0 : median(others);
        boolean standsOut = e[i][j] - med >= t.minExcessUs() && e[i][j] >= t.cellFactor() * med;
        if (!standsOut) continue;
        double conf = clamp(e[i][j] / (e[i][j] + base + med)) * (k == 2 ? 0.5 : 1.0);
        links.add(
            new Finding(
                FindingKind.SLOW_LINK,
                present.get(i),
                present.get(j),
                Cause.LINK,
                conf,
                e[i][j],
                String.format(
                    Locale.ROOT,
                    "rank %d waited %.1fus/call on rank %d over the %.1fus floor while the other ranks waited %.1fus on it%s",
                    present.get(i),
                    e[i][j],
                    present.get(j),
                    base,
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

  /** NONE, the kind of a single finding, or MULTIPLE. */
  static Verdict verdict(List<Finding> findings) {
    if (findings.isEmpty()) return Verdict.NONE;
    if (findings.size() > 1) return Verdict.MULTIPLE;
    return switch (findings.get(0).getKind()) {
      case SLOW_RANK -> Verdict.SLOW_RANK;
      case SLOW_LINK -> Verdict.SLOW_LINK;
      case SILENT_RANK -> Verdict.SILENT_RANK;
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

  /**
   * Why a slow rank was slow: the cause whose phases exceed the peers' median the most, if they
   * explain enough of the excess wait; otherwise it arrived late (the time went before the
   * collective, in compute or launch).
   */
  private static Cause cause(
      RankWindow w,
      List<Integer> present,
      TreeMap<Integer, RankWindow> byRank,
      double excess,
      Thresholds t) {
    Cause best = null;
    double bestExcess = 0;
    for (Phase p : Phase.values()) {
      Cause c = p.blame();
      if (c == null || c == best) continue;
      double e = blamedUs(w, c) - medianOf(present, byRank, w.getRank(), x -> blamedUs(x, c));
      if (best == null || e > bestExcess) {
        best = c;
        bestExcess = e;
      }
    }
    if (best == null || bestExcess < t.causeShare() * excess || bestExcess < t.minExcessUs() / 2) {
      return Cause.ARRIVED_LATE;
    }
    return best;
  }

  private static String causeEvidence(
      RankWindow w, List<Integer> present, TreeMap<Integer, RankWindow> byRank) {
    StringBuilder sb = new StringBuilder("its phases vs its peers' median (us/call):");
    for (Phase p : Phase.values()) {
      if (p.blame() == null) continue;
      sb.append(
          String.format(
              Locale.ROOT,
              " %s %.1f/%.1f",
              p.fieldName(),
              meanUs(w, p),
              medianOf(present, byRank, w.getRank(), x -> meanUs(x, p))));
    }
    return sb.toString();
  }

  private static double medianOf(
      List<Integer> present,
      TreeMap<Integer, RankWindow> byRank,
      int except,
      java.util.function.ToDoubleFunction<RankWindow> f) {
    List<Double> v = new ArrayList<>();
    for (int r : present) if (r != except) v.add(f.applyAsDouble(byRank.get(r)));
    return median(v);
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

  private static double clamp(double x) {
    return Double.isNaN(x) ? 0 : Math.max(0, Math.min(1, x));
  }
}
