package io.collscope.cli;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.Verdict;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import io.collscope.model.SampledCalls;
import io.collscope.schema.RecordJson;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.StringJoiner;
import java.util.function.Consumer;

/**
 * Prints each attribution window of the demo: a verdict line and a per-rank phase table, or one
 * JSON object per line. A window is full when the feed ran for the whole of it; the first and the
 * last window of a run usually are not, and say so, because their means cover only part of it.
 */
final class AttributionPrinter implements Consumer<Attribution> {

  private static final DateTimeFormatter HMS =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneOffset.UTC);

  private final PrintWriter out;
  private final boolean json;
  // Written by the command's thread, read by the attribution reader's.
  private volatile Instant feedStarted;
  private volatile Instant feedStopped;

  AttributionPrinter(PrintWriter out, boolean json) {
    this.out = out;
    this.json = json;
  }

  void feedStarted(Instant at) {
    feedStarted = at;
  }

  void feedStopped(Instant at) {
    feedStopped = at;
  }

  @Override
  public void accept(Attribution a) {
    boolean full = fullWindow(a, feedStarted, feedStopped);
    out.println(json ? jsonLine(a, full) : table(a, full));
    out.flush();
  }

  /**
   * Prints one alert transition: a line of its own, or a JSON object with {@code "type":"alert"}.
   */
  void alert(Alert a) {
    out.println(json ? alertJson(a) : alertLine(a));
    out.flush();
  }

  /** {@code ALERT FIRING CollscopeLatencyRegression local/demo/comm0 since 12:00:03: summary}. */
  static String alertLine(Alert a) {
    return String.format(
        Locale.ROOT,
        "%nALERT %s %s %s/%s/%s since %s%s: %s",
        a.getState(),
        a.getLabels().getOrDefault("alertname", a.getKind().name()),
        a.getCluster(),
        a.getJob(),
        a.getCommunicator(),
        HMS.format(a.getStartsAt()),
        a.getEndsAt() == null ? "" : " until " + HMS.format(a.getEndsAt()),
        a.getMessage());
  }

  static String alertJson(Alert a) {
    StringBuilder sb = new StringBuilder(512);
    sb.append("{\"type\":\"alert\",\"state\":");
    RecordJson.string(a.getState().name(), sb);
    sb.append(",\"kind\":");
    RecordJson.string(a.getKind().name(), sb);
    sb.append(",\"alert_id\":");
    RecordJson.string(a.getAlertId(), sb);
    sb.append(",\"labels\":");
    RecordJson.write(new java.util.TreeMap<>(a.getLabels()), sb);
    sb.append(",\"starts_at\":");
    RecordJson.string(a.getStartsAt().toString(), sb);
    sb.append(",\"ends_at\":");
    if (a.getEndsAt() == null) sb.append("null");
    else RecordJson.string(a.getEndsAt().toString(), sb);
    sb.append(",\"classification\":");
    RecordJson.string(a.getClassification().name(), sb);
    sb.append(",\"baseline\":");
    RecordJson.write(a.getBaseline(), sb);
    sb.append(",\"current\":");
    RecordJson.write(a.getCurrent(), sb);
    sb.append(",\"summary\":");
    RecordJson.string(a.getMessage(), sb);
    sb.append(",\"annotations\":");
    RecordJson.write(new java.util.TreeMap<>(a.getAnnotations()), sb);
    return sb.append('}').toString();
  }

  /** Whether the feed ran over all of the window; {@code stopped} is null while it still runs. */
  static boolean fullWindow(Attribution a, Instant started, Instant stopped) {
    return started != null
        && !a.getWindowStart().isBefore(started)
        && (stopped == null || !a.getWindowEnd().isAfter(stopped));
  }

  /**
   * One line of JSON. {@code rank}, {@code link} and {@code cause} describe the strongest finding;
   * {@code findings} lists all of them.
   */
  static String jsonLine(Attribution a, boolean full) {
    Finding top = a.getFindings().isEmpty() ? null : a.getFindings().get(0);
    boolean link = top != null && top.getKind() == FindingKind.SLOW_LINK;
    StringBuilder sb = new StringBuilder(512);
    sb.append("{\"type\":\"window\",\"window_start\":");
    RecordJson.string(a.getWindowStart().toString(), sb);
    sb.append(",\"window_end\":");
    RecordJson.string(a.getWindowEnd().toString(), sb);
    sb.append(",\"full_window\":").append(full);
    sb.append(",\"cluster\":");
    RecordJson.string(a.getCluster(), sb);
    sb.append(",\"job\":");
    RecordJson.string(a.getJob(), sb);
    sb.append(",\"communicator\":");
    RecordJson.string(a.getCommunicator(), sb);
    sb.append(",\"verdict\":");
    RecordJson.string(a.getVerdict().name(), sb);
    sb.append(",\"rank\":").append(top == null || link ? "null" : Integer.toString(top.getRank()));
    sb.append(",\"link\":");
    if (link) RecordJson.string(top.getFromRank() + "->" + top.getRank(), sb);
    else sb.append("null");
    sb.append(",\"cause\":");
    if (top == null) sb.append("null");
    else RecordJson.string(top.getCause().name(), sb);
    sb.append(",\"hardware_cause\":");
    if (top == null) sb.append("null");
    else RecordJson.string(top.getHardwareCause().name(), sb);
    sb.append(",\"confidence\":");
    RecordJson.write(a.getConfidence(), sb);
    sb.append(",\"max_wait_rank\":").append(a.getMaxWaitRank());
    // The README's key since version 1 of the record, where the field had this name too.
    sb.append(",\"max_wait_us\":");
    RecordJson.write(a.getMaxWaitMeanUs(), sb);
    sb.append(",\"missing_ranks\":");
    RecordJson.write(a.getMissingRanks(), sb);
    sb.append(",\"findings\":");
    RecordJson.write(a.getFindings(), sb);
    return sb.append('}').toString();
  }

  /**
   * When the window had too few collectives to decide (a rank sampled fewer than the rule's {@link
   * Thresholds#minCalls()}: a partial window, a rank that just started, a GPU rank between two
   * timed collectives), says so and how big a culprit had to be: a NONE then reads as "nothing
   * bigger than this", not "nothing is wrong". Elsewhere the bar shrinks with the evidence and a
   * NONE means what it says. Empty otherwise.
   */
  static String noisy(Attribution a) {
    long fewest = Long.MAX_VALUE;
    for (RankPhases r : a.getRanks()) fewest = Math.min(fewest, SampledCalls.of(r));
    if (a.getRanks().isEmpty() || fewest >= Thresholds.DEFAULT.minCalls()) return "";
    return String.format(
        Locale.ROOT,
        "  (noisy: %d collectives sampled, a culprit needed > %.0fus)",
        fewest,
        a.getThresholdUs());
  }

  /** The verdict line, then a row per present rank: calls, each phase's mean, p99. */
  static String table(Attribution a, boolean full) {
    StringBuilder sb = new StringBuilder(1024);
    sb.append(
        String.format(
            Locale.ROOT,
            "%nwindow %s-%s%s  %s  %s  confidence %.2f  max wait %.1fus @ rank %d  missing %s%s%n",
            HMS.format(a.getWindowStart()),
            HMS.format(a.getWindowEnd()),
            full ? "" : " (partial)",
            CommunicatorKey.of(a),
            verdict(a),
            a.getConfidence(),
            a.getMaxWaitMeanUs(),
            a.getMaxWaitRank(),
            a.getMissingRanks().isEmpty() ? "-" : a.getMissingRanks().toString(),
            noisy(a)));
    // Each finding's hardware evidence, where its GPUs reported health (GpuHealth) in the window.
    for (Finding f : a.getFindings()) {
      if (f.getHardwareEvidence() == null || f.getHardwareEvidence().isEmpty()) continue;
      sb.append(
          String.format(
              Locale.ROOT,
              "  hardware %s: %s: %s%n",
              finding(f),
              f.getHardwareCause(),
              f.getHardwareEvidence()));
    }
    sb.append(String.format(Locale.ROOT, "%6s %9s", "rank", "calls"));
    for (Phase p : Phase.values()) {
      sb.append(String.format(Locale.ROOT, " %10s", p.fieldName() + "_us"));
    }
    // persistent-CTA kernels: the grid's drift (lead over the begun tiles, rounds) and throttle
    boolean drift = a.getRanks().stream().anyMatch(r -> r.getCtaLeadMaxRounds() > 0);
    sb.append(String.format(Locale.ROOT, " %9s", "p99_us"));
    if (drift) {
      sb.append(String.format(Locale.ROOT, " %9s %9s %9s", "lead_max", "lead_p99", "stalls"));
    }
    sb.append(String.format("%n"));
    for (RankPhases r : a.getRanks()) {
      sb.append(String.format(Locale.ROOT, "%6d %9d", r.getRank(), r.getCalls()));
      for (Phase p : Phase.values()) {
        sb.append(String.format(Locale.ROOT, " %10.1f", (Double) r.get(p.meanUsField())));
      }
      sb.append(String.format(Locale.ROOT, " %9.0f", r.getP99Us()));
      if (drift) {
        sb.append(
            String.format(
                Locale.ROOT,
                " %9.2f %9.2f %9.0f",
                r.getCtaLeadMaxRounds(),
                r.getCtaLeadP99Rounds(),
                r.getThrottleStallsPerCall()));
      }
      sb.append(String.format("%n"));
    }
    return sb.toString().stripTrailing();
  }

  /** NONE, one finding, or MULTIPLE followed by every finding, strongest first. */
  static String verdict(Attribution a) {
    if (a.getFindings().isEmpty()) return a.getVerdict().name();
    StringJoiner findings = new StringJoiner(" + ");
    for (Finding f : a.getFindings()) findings.add(finding(f));
    return a.getVerdict() == Verdict.MULTIPLE ? "MULTIPLE: " + findings : findings.toString();
  }

  /**
   * {@code SLOW_RANK(5,RING_FULL)}, {@code SLOW_LINK(3->6)}, {@code SILENT_RANK(3,TIMED_OUT)} or
   * {@code UNIFORM_SLOWDOWN(LINK)}: one token, also in tail's lines.
   */
  static String finding(Finding f) {
    return io.collscope.schema.Findings.token(f);
  }
}
