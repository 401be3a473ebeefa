package io.collscope.eval;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.collective.FaultPlan;
import io.collscope.eval.FaultMatrix.Cell;
import io.collscope.schema.Findings;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * How one cell's windows came out: judged windows (full ones, settled since the last fault change),
 * those exactly right, those with a finding the faults do not make, those lacking one they make,
 * and the time from the onset to the end of the first window that named every culprit. And its
 * alerts: onset to the first FIRING transition, the faults' end to the first RESOLVED one after it
 * (both at the end of the window that made them, event time), and alerts that fired with no fault
 * active (in a clean run, or before the onset).
 */
public record CellScore(
    Cell cell,
    int windows,
    int judged,
    int correct,
    int wrong,
    int missed,
    double verdictSeconds,
    String example,
    double alertSeconds,
    double resolveSeconds,
    int falseAlerts,
    double regressionPct) {

  /** Scores a cell's attributions; {@code startMs} is the event time its run started at. */
  public static CellScore of(
      Cell cell, FaultPlan plan, long startMs, List<Attribution> windows, List<Alert> alerts) {
    // The onset: the earliest fault start (0 for faults on from the start).
    long onsetNanos =
        plan.faults().stream().mapToLong(FaultPlan.Fault::startNanos).min().orElse(Long.MAX_VALUE);
    int judged = 0;
    int correct = 0;
    int wrong = 0;
    int missed = 0;
    double verdict = Double.NaN;
    String example = "";
    long lastEnd = windows.stream().mapToLong(a -> a.getWindowEnd().toEpochMilli()).max().orElse(0);
    for (Attribution a : windows) {
      long from = a.getWindowStart().toEpochMilli();
      long to = a.getWindowEnd().toEpochMilli();
      long windowNs = (to - from) * 1_000_000L;
      long fromNs = (from - startMs) * 1_000_000L;
      long toNs = (to - startMs) * 1_000_000L;
      Set<String> found = tokens(a);
      // Time to verdict: any window, settled or not, that names every culprit after the onset.
      if (Double.isNaN(verdict) && toNs > onsetNanos) {
        Expectation whole =
            Expectation.of(plan, a.getWorldSize(), onsetNanos, onsetNanos + 1, 0).orElse(null);
        if (whole != null && !whole.isClean() && whole.missed(found).isEmpty()) {
          verdict = (toNs - onsetNanos) / 1e9;
        }
      }
      // The first window started before the ranks did; the last may hold the stop.
      if (fromNs < 0 || to >= lastEnd) continue;
      var e = Expectation.of(plan, a.getWorldSize(), fromNs, toNs, windowNs);
      if (e.isEmpty()) continue;
      judged++;
      boolean isWrong = !e.get().wrong(found).isEmpty();
      boolean isMissed = !e.get().missed(found).isEmpty();
      if (isWrong) wrong++;
      if (isMissed) missed++;
      if (!isWrong && !isMissed) correct++;
      else if (example.isEmpty()) {
        example =
            String.format(
                java.util.Locale.ROOT,
                "expected %s, got %s at %+.0fs (collective %.1fus, baseline %.1fus, threshold %.1fus)",
                e.get(),
                found,
                fromNs / 1e9,
                a.getCollectiveUs(),
                a.getBaselineUs(),
                a.getThresholdUs());
        for (Finding f : a.getFindings()) {
          if (e.get().wrong(found).contains(Findings.token(f))) {
            example += " (" + f.getEvidence() + ")";
            break;
          }
        }
      }
    }
    long endNanos =
        plan.faults().stream()
            .filter(f -> f.kind() != FaultPlan.Kind.DEAD_RANK)
            .mapToLong(FaultPlan.Fault::endNanos)
            .max()
            .orElse(Long.MAX_VALUE);
    double alert = Double.NaN;
    double resolve = Double.NaN;
    int falseAlerts = 0;
    double regression = Double.NaN;
    for (Alert x : alerts) {
      if (x.getState() == AlertState.FIRING
          && x.getKind() == io.collscope.avro.AlertKind.LATENCY_REGRESSION
          && x.getBaseline() > 0
          && Double.isNaN(regression)) {
        regression = 100 * (x.getCurrent() / x.getBaseline() - 1);
      }
      long atNs = (x.getWindowEnd().toEpochMilli() - startMs) * 1_000_000L;
      if (x.getState() == AlertState.FIRING) {
        if (plan.isEmpty() || atNs <= onsetNanos) falseAlerts++;
        else if (Double.isNaN(alert)) alert = (atNs - onsetNanos) / 1e9;
      } else if (x.getState() == AlertState.RESOLVED
          && endNanos < FaultPlan.FOREVER
          && atNs > endNanos
          && Double.isNaN(resolve)) {
        resolve = (atNs - endNanos) / 1e9;
      }
    }
    return new CellScore(
        cell,
        windows.size(),
        judged,
        correct,
        wrong,
        missed,
        verdict,
        example,
        alert,
        resolve,
        falseAlerts,
        regression);
  }

  /** The findings of a window as tokens, e.g. {@code SLOW_RANK(2,ARRIVED_LATE)}. */
  public static Set<String> tokens(Attribution a) {
    Set<String> out = new TreeSet<>();
    for (Finding f : a.getFindings()) out.add(Findings.token(f));
    return out;
  }
}
