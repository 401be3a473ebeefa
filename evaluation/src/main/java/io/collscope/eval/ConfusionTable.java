package io.collscope.eval;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The evaluation's table: a row per cell, then totals, the clean runs and time to verdict. */
public final class ConfusionTable {

  private ConfusionTable() {}

  private static String seconds(double s) {
    return Double.isNaN(s) ? "-" : String.format(Locale.ROOT, "%.1f", s);
  }

  public static void print(List<CellScore> scores, PrintWriter out) {
    out.printf(
        Locale.ROOT,
        "%-26s %-60s %7s %6s %7s %5s %6s %9s %7s %9s %6s %8s%n",
        "cell",
        "inject",
        "windows",
        "judged",
        "correct",
        "wrong",
        "missed",
        "verdict_s",
        "alert_s",
        "resolve_s",
        "false_alerts",
        "slower_%");
    for (CellScore s : scores) {
      out.printf(
          Locale.ROOT,
          "%-26s %-60s %7d %6d %7d %5d %6d %9s %7s %9s %6d %8s%s%n",
          s.cell().id(),
          s.cell().inject().isEmpty() ? "-" : s.cell().inject(),
          s.windows(),
          s.judged(),
          s.correct(),
          s.wrong(),
          s.missed(),
          seconds(s.verdictSeconds()),
          seconds(s.alertSeconds()),
          seconds(s.resolveSeconds()),
          s.falseAlerts(),
          seconds(s.regressionPct()),
          s.example().isEmpty() ? "" : "   " + s.example());
    }
    int judged = 0;
    int correct = 0;
    int wrong = 0;
    int missed = 0;
    int cleanWindows = 0;
    int cleanFindings = 0;
    List<Double> verdicts = new ArrayList<>();
    int perfect = 0;
    int falseAlerts = 0;
    int cleanAlertWindows = 0;
    for (CellScore s : scores) {
      falseAlerts += s.falseAlerts();
      if (s.cell().inject().isEmpty()) cleanAlertWindows += s.windows();
      judged += s.judged();
      correct += s.correct();
      wrong += s.wrong();
      missed += s.missed();
      if (s.judged() > 0 && s.correct() == s.judged()) perfect++;
      if (s.cell().inject().isEmpty()) {
        cleanWindows += s.judged();
        cleanFindings += s.wrong();
      }
      if (!Double.isNaN(s.verdictSeconds())) verdicts.add(s.verdictSeconds());
    }
    out.printf(
        Locale.ROOT,
        "%ntotal: %d cells, %d with every judged window correct; %d judged windows: %d correct"
            + " (%.1f%%), %d with a wrong finding, %d missing a culprit%n",
        scores.size(),
        perfect,
        judged,
        correct,
        judged == 0 ? 0.0 : 100.0 * correct / judged,
        wrong,
        missed);
    out.printf(
        Locale.ROOT,
        "clean runs: %d windows with a finding out of %d judged%n",
        cleanFindings,
        cleanWindows);
    out.printf(
        Locale.ROOT,
        "alerts: %d fired with no fault active (%d windows of clean runs, and every window before"
            + " an onset)%n",
        falseAlerts,
        cleanAlertWindows);
    if (!verdicts.isEmpty()) {
      verdicts.sort(Double::compare);
      out.printf(
          Locale.ROOT,
          "time to verdict (onset -> end of the first window naming every culprit, event time):"
              + " median %.1fs, max %.1fs over %d cells%n",
          verdicts.get(verdicts.size() / 2),
          verdicts.get(verdicts.size() - 1),
          verdicts.size());
    }
    out.flush();
  }
}
