package io.collscope.flink.alert;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Classification;
import io.collscope.avro.Finding;
import io.collscope.avro.HardwareCause;
import io.collscope.avro.RankPhases;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import io.collscope.model.SampledCalls;
import io.collscope.schema.Findings;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Keyed by communicator: turns its attributed windows into alert transitions, each written once.
 *
 * <ul>
 *   <li><b>Latency regression</b>: each window's latency (the median over ranks of the mean time
 *       per collective) is classified against the communicator's {@link WindowBaseline} by the
 *       {@link RegressionRule}; {@code fireAfter} SLOWER windows in a row fire it, {@code
 *       resolveAfter} PARITY (or FASTER) windows in a row resolve it, INCONCLUSIVE windows neither
 *       extend nor break a run. Its annotations name the phase that grew most and the culprits the
 *       attribution found, if any.
 *   <li><b>Sustained slow rank / slow link / dead rank</b>: the same finding in {@code fireAfter}
 *       windows in a row fires; {@code resolveAfter} windows without it resolve.
 * </ul>
 *
 * The baseline learns only from windows with no finding, no missing rank and no regression open or
 * building, so a slowdown never teaches it that slow is normal. A communicator silent for {@code
 * idleTimeout} of event time has its open alerts resolved ("stopped reporting") and its state
 * dropped.
 */
public final class AlertFunction extends KeyedProcessFunction<CommunicatorKey, Attribution, Alert> {

  static final String REGRESSION = "LATENCY_REGRESSION";

  /** Windows the latency baseline remembers: a minute of 1 s windows, ten of 10 s windows. */
  public static final int BASELINE_WINDOWS = 60;

  /**
   * A communicator's first windows teach the baseline nothing: the first is usually partial (its
   * ranks started mid-window) and early ones run code still warming up (JIT-compiled paths on the
   * CPU backend, first-touch page faults and lazy module loading on the GPU), faster or slower than
   * the collective will be. Learnt in the previous session as a low early baseline that later read
   * as a regression.
   */
  public static final int WARMUP_WINDOWS = 2;

  private final RegressionRule rule;
  private final int fireAfter;
  private final int resolveAfter;
  private final long idleTimeoutMs;
  private final BaselineFile seeds;
  private transient ValueState<WindowBaseline> baseline;
  private transient MapState<String, Streak> streaks;
  private transient ValueState<Long> lastEnd;
  private transient ValueState<Integer> windowsSeen;
  private transient MapState<Integer, WindowBaseline> rankBaselines;

  public AlertFunction(RegressionRule rule, int fireAfter, int resolveAfter, Duration idleTimeout) {
    this(rule, fireAfter, resolveAfter, idleTimeout, BaselineFile.empty());
  }

  /** As above, with baselines to start from where a communicator has none yet ({@code seeds}). */
  public AlertFunction(
      RegressionRule rule,
      int fireAfter,
      int resolveAfter,
      Duration idleTimeout,
      BaselineFile seeds) {
    this.rule = rule;
    this.fireAfter = fireAfter;
    this.resolveAfter = resolveAfter;
    this.idleTimeoutMs = idleTimeout.toMillis();
    this.seeds = seeds;
  }

  @Override
  public void open(OpenContext ctx) {
    baseline =
        getRuntimeContext()
            .getState(
                new ValueStateDescriptor<>("baseline", TypeInformation.of(WindowBaseline.class)));
    streaks =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "streaks", Types.STRING, TypeInformation.of(Streak.class)));
    lastEnd = getRuntimeContext().getState(new ValueStateDescriptor<>("lastEnd", Types.LONG));
    windowsSeen =
        getRuntimeContext().getState(new ValueStateDescriptor<>("windowsSeen", Types.INT));
    rankBaselines =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "rankBaselines", Types.INT, TypeInformation.of(WindowBaseline.class)));
  }

  @Override
  public void processElement(Attribution a, Context ctx, Collector<Alert> out) throws Exception {
    long end = a.getWindowEnd().toEpochMilli();
    Long last = lastEnd.value();
    if (last != null && end <= last) return; // a window already judged
    lastEnd.update(end);
    Integer seenBefore = windowsSeen.value();
    int seenSoFar = seenBefore == null ? 0 : seenBefore;
    windowsSeen.update(seenSoFar + 1);
    ctx.timerService().registerEventTimeTimer(end + idleTimeoutMs);

    CommunicatorKey key = ctx.getCurrentKey();
    WindowBaseline b = baseline.value();
    if (b == null || !b.matches(a.getBytesPerCall())) {
      // A communicator (or a message size) not seen yet: start from the baseline file's, if any.
      WindowBaseline seeded =
          seeds.seed(key, collective(a), a.getWorldSize(), a.getBytesPerCall(), BASELINE_WINDOWS);
      if (seeded != null) b = seeded;
      else if (b == null) b = WindowBaseline.of(BASELINE_WINDOWS);
    }
    double latency = latencyUs(a);
    // The sample every rank measured (SampledCalls): an emitter that accounts 1 collective in 16
    // needs 16 times the calls for the same confidence.
    long calls = a.getRanks().stream().mapToLong(SampledCalls::of).min().orElse(0);
    Classification c =
        b.matches(a.getBytesPerCall())
            ? rule.classify(latency, calls, b)
            : Classification.INCONCLUSIVE;

    // The latency regression.
    Streak reg = streak(REGRESSION);
    boolean bad = c == Classification.SLOWER;
    boolean good = c == Classification.PARITY || c == Classification.FASTER;
    step(reg, bad, good, end);
    if (!reg.open && reg.present >= fireAfter) {
      reg.open = true;
      reg.startsAt = reg.runStartedAt;
      reg.severity = latency >= 1.5 * b.median() ? "critical" : "warning";
      reg.sizeBucket = sizeBucket(a.getBytesPerCall());
      reg.collective = collective(a);
      out.collect(
          regression(key, a, reg, AlertState.FIRING, c, latency, b, end, ranksSlowerThanOwn(a)));
    } else if (reg.open && reg.absent >= resolveAfter) {
      out.collect(regression(key, a, reg, AlertState.RESOLVED, c, latency, b, end, List.of()));
      reg.open = false;
    }
    put(REGRESSION, reg);

    // Sustained culprits.
    Set<String> seen = new HashSet<>();
    for (Finding f : a.getFindings()) {
      String subject = subject(f);
      if (subject == null) continue;
      seen.add(subject);
    }
    Set<String> subjects = new HashSet<>(seen);
    for (String s : streaks.keys()) if (!s.equals(REGRESSION)) subjects.add(s);
    for (String s : subjects) {
      Streak st = streak(s);
      step(st, seen.contains(s), !seen.contains(s), end);
      if (!st.open && st.present >= fireAfter) {
        st.open = true;
        st.startsAt = st.runStartedAt;
        st.severity = s.startsWith("DEAD_RANK") ? "critical" : "warning";
        st.sizeBucket = sizeBucket(a.getBytesPerCall());
        st.collective = collective(a);
        st.hardwareCause = "";
        for (Finding f : a.getFindings()) {
          if (s.equals(subject(f)) && f.getHardwareCause() != HardwareCause.NONE) {
            st.hardwareCause = f.getHardwareCause().name();
          }
        }
        out.collect(culprit(key, a, s, st, AlertState.FIRING, end));
      } else if (st.open && st.absent >= resolveAfter) {
        out.collect(culprit(key, a, s, st, AlertState.RESOLVED, end));
        st.open = false;
      }
      if (!st.open && st.present == 0) streaks.remove(s);
      else put(s, st);
    }

    // Only clean windows teach the baseline what the collective costs.
    if (seenSoFar >= WARMUP_WINDOWS
        && !reg.open
        && reg.present == 0
        && a.getFindings().isEmpty()
        && a.getMissingRanks().isEmpty()
        && calls >= rule.minCalls()
        && latency > 0) {
      b.add(a.getBytesPerCall(), latency, phaseMedians(a));
      baseline.update(b);
      for (RankPhases r : a.getRanks()) {
        WindowBaseline rb = rankBaselines.get(r.getRank());
        if (rb == null) rb = WindowBaseline.of(BASELINE_WINDOWS);
        rb.add(a.getBytesPerCall(), ownUs(r), phases(r));
        rankBaselines.put(r.getRank(), rb);
      }
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Alert> out) throws Exception {
    Long last = lastEnd.value();
    if (last == null || last + idleTimeoutMs > timestamp) return; // a newer window came since
    for (Map.Entry<String, Streak> e : streaks.entries()) {
      Streak st = e.getValue();
      if (!st.open) continue;
      AlertKind kind = kindOf(e.getKey());
      Map<String, String> labels = labels(ctx.getCurrentKey(), kind, e.getKey(), st);
      Map<String, String> ann = new LinkedHashMap<>();
      String summary =
          String.format(
              Locale.ROOT,
              "%s on %s resolved: the communicator stopped reporting",
              kind,
              ctx.getCurrentKey());
      ann.put("summary", summary);
      out.collect(
          alert(
              labels,
              ann,
              kind,
              st,
              AlertState.RESOLVED,
              Classification.INCONCLUSIVE,
              0,
              0,
              0,
              last,
              summary,
              last));
    }
    streaks.clear();
    baseline.clear();
    lastEnd.clear();
    windowsSeen.clear();
    rankBaselines.clear();
  }

  private Streak streak(String subject) throws Exception {
    Streak s = streaks.get(subject);
    return s == null ? new Streak() : s;
  }

  private void put(String subject, Streak s) throws Exception {
    streaks.put(subject, s);
  }

  /** Extends a bad or a good run; a window that is neither (INCONCLUSIVE) changes nothing. */
  private static void step(Streak s, boolean bad, boolean good, long end) {
    if (bad) {
      if (s.present == 0) s.runStartedAt = end;
      s.present++;
      s.absent = 0;
    } else if (good) {
      s.absent++;
      s.present = 0;
    }
  }

  /**
   * SLOW_RANK:2, SLOW_LINK:3->6, DEAD_RANK:3, SLOW_NODE:host, or null for findings that are not
   * culprits.
   */
  static String subject(Finding f) {
    return switch (f.getKind()) {
      case SLOW_RANK -> "SLOW_RANK:" + f.getRank();
      case SLOW_LINK -> "SLOW_LINK:" + f.getFromRank() + "->" + f.getRank();
      case SILENT_RANK -> "DEAD_RANK:" + f.getRank();
      case SLOW_NODE -> "SLOW_NODE:" + f.getNode();
      default -> null;
    };
  }

  private static AlertKind kindOf(String subject) {
    return AlertKind.valueOf(
        subject.contains(":") ? subject.substring(0, subject.indexOf(':')) : subject);
  }

  /** The median over ranks of the mean time per collective: the latency the job sees. */
  static double latencyUs(Attribution a) {
    List<Double> v = new ArrayList<>();
    for (RankPhases r : a.getRanks()) {
      double t = 0;
      for (Phase p : Phase.values()) t += (Double) r.get(p.meanUsField());
      v.add(t);
    }
    return median(v);
  }

  /**
   * A rank's own time per collective: every phase but the wait, which is the other ranks' doing.
   * Its per-rank baseline tells which ranks got slower than themselves when the communicator's
   * latency regresses — the same rank's history, where the attribution compares it with its peers.
   */
  static double ownUs(RankPhases r) {
    double t = 0;
    for (Phase p : Phase.values()) if (p != Phase.WAIT) t += (Double) r.get(p.meanUsField());
    return t;
  }

  static double[] phases(RankPhases r) {
    double[] m = new double[Phase.COUNT];
    for (Phase p : Phase.values()) m[p.ordinal()] = (Double) r.get(p.meanUsField());
    return m;
  }

  /**
   * The ranks whose own time is SLOWER than their own baseline in this window, each with the phase
   * that grew most: {@code 2:copy+30.1us}. Empty when no rank has a baseline yet at this message
   * size, or none is SLOWER (a regression all in the waits: a link, or the fabric).
   */
  private List<String> ranksSlowerThanOwn(Attribution a) throws Exception {
    List<String> out = new ArrayList<>();
    for (RankPhases r : a.getRanks()) {
      WindowBaseline rb = rankBaselines.get(r.getRank());
      if (rb == null || !rb.matches(a.getBytesPerCall())) continue;
      if (rule.classify(ownUs(r), SampledCalls.of(r), rb) != Classification.SLOWER) continue;
      Phase grew = null;
      double growth = 0;
      for (Phase p : Phase.values()) {
        if (p == Phase.WAIT) continue;
        double g = (Double) r.get(p.meanUsField()) - rb.phase(p);
        if (grew == null || g > growth) {
          grew = p;
          growth = g;
        }
      }
      out.add(String.format(Locale.ROOT, "%d:%s+%.1fus", r.getRank(), grew.fieldName(), growth));
    }
    return out;
  }

  static double[] phaseMedians(Attribution a) {
    double[] m = new double[Phase.COUNT];
    for (Phase p : Phase.values()) {
      List<Double> v = new ArrayList<>();
      for (RankPhases r : a.getRanks()) v.add((Double) r.get(p.meanUsField()));
      m[p.ordinal()] = median(v);
    }
    return m;
  }

  /** The collective's name, "unknown" from attributions that predate version 4. */
  static String collective(Attribution a) {
    CharSequence c = a.getCollective();
    return c == null || c.length() == 0 ? "unknown" : c.toString();
  }

  /** Message size bucket by powers of two ({@link RegressionRule#sizeBucket}). */
  public static String sizeBucket(long bytes) {
    return RegressionRule.sizeBucket(bytes);
  }

  private Alert regression(
      CommunicatorKey key,
      Attribution a,
      Streak st,
      AlertState state,
      Classification c,
      double latency,
      WindowBaseline b,
      long end,
      List<String> slowerRanks) {
    Map<String, String> labels = labels(key, AlertKind.LATENCY_REGRESSION, REGRESSION, st);
    Phase grew = null;
    double growth = 0;
    double[] now = phaseMedians(a);
    for (Phase p : Phase.values()) {
      double g = now[p.ordinal()] - b.phase(p);
      if (grew == null || g > growth) {
        grew = p;
        growth = g;
      }
    }
    List<String> culprits = new ArrayList<>();
    for (Finding f : a.getFindings()) culprits.add(Findings.token(f));
    String summary =
        state == AlertState.FIRING
            ? String.format(
                Locale.ROOT,
                "collective latency on %s is %.1fus, %.0f%% over its baseline of %.1fus (%d windows"
                    + " SLOWER in a row)%s",
                key,
                latency,
                100 * (latency / b.median() - 1),
                b.median(),
                st.present,
                culprits.isEmpty() ? "" : "; culprits: " + String.join(", ", culprits))
            : String.format(
                Locale.ROOT,
                "collective latency on %s is back to %.1fus (baseline %.1fus) for %d windows",
                key,
                latency,
                b.median(),
                st.absent);
    Map<String, String> ann = new LinkedHashMap<>();
    ann.put("summary", summary);
    ann.put("phase", grew.fieldName());
    ann.put("phase_growth_us", String.format(Locale.ROOT, "%.1f", growth));
    ann.put("baseline_us", String.format(Locale.ROOT, "%.1f", b.median()));
    ann.put("current_us", String.format(Locale.ROOT, "%.1f", latency));
    ann.put("noise_us", String.format(Locale.ROOT, "%.1f", rule.band(b)));
    ann.put("culprits", String.join(", ", culprits));
    if (state == AlertState.FIRING)
      ann.put("ranks_slower_than_own", String.join(", ", slowerRanks));
    return alert(
        labels,
        ann,
        AlertKind.LATENCY_REGRESSION,
        st,
        state,
        c,
        b.median(),
        latency,
        rule.band(b),
        end,
        summary,
        end);
  }

  private Alert culprit(
      CommunicatorKey key, Attribution a, String subject, Streak st, AlertState state, long end) {
    AlertKind kind = kindOf(subject);
    Map<String, String> labels = labels(key, kind, subject, st);
    Finding f = null;
    for (Finding x : a.getFindings()) if (subject.equals(subject(x))) f = x;
    String summary =
        state == AlertState.FIRING
            ? String.format(
                Locale.ROOT,
                "%s on %s for %d windows in a row: %s",
                subject.replace(':', ' '),
                key,
                st.present,
                f == null ? "" : Findings.token(f))
            : String.format(
                Locale.ROOT,
                "%s on %s cleared for %d windows",
                subject.replace(':', ' '),
                key,
                st.absent);
    Map<String, String> ann = new LinkedHashMap<>();
    ann.put("summary", summary);
    if (f != null) {
      ann.put("description", f.getEvidence());
      ann.put("cause", f.getCause().name());
      if (f.getHardwareEvidence() != null && !f.getHardwareEvidence().isEmpty()) {
        ann.put("hardware_evidence", f.getHardwareEvidence());
      }
      ann.put("excess_us", String.format(Locale.ROOT, "%.1f", f.getExcessWaitUs()));
    }
    double excess = f == null ? 0 : f.getExcessWaitUs();
    return alert(
        labels, ann, kind, st, state, Classification.UNKNOWN, 0, excess, 0, end, summary, end);
  }

  private static Alert alert(
      Map<String, String> labels,
      Map<String, String> annotations,
      AlertKind kind,
      Streak st,
      AlertState state,
      Classification c,
      double baselineValue,
      double current,
      double noise,
      long windowEnd,
      String summary,
      long at) {
    return Alert.newBuilder()
        .setAlertId(fingerprint(labels))
        .setCluster(labels.get("cluster"))
        .setJob(labels.get("job"))
        .setCommunicator(labels.get("communicator"))
        .setKind(kind)
        .setState(state)
        .setSeverity(st.severity)
        .setLabels(new TreeMap<>(labels))
        .setAnnotations(annotations)
        .setStartsAt(Instant.ofEpochMilli(st.startsAt))
        .setEndsAt(state == AlertState.RESOLVED ? Instant.ofEpochMilli(at) : null)
        .setClassification(c)
        .setMetric(kind == AlertKind.LATENCY_REGRESSION ? "latency_mean_us" : "excess_wait_us")
        .setBaseline(baselineValue)
        .setCurrent(current)
        .setNoise(noise)
        .setWindowEnd(Instant.ofEpochMilli(windowEnd))
        .setMessage(summary)
        .build();
  }

  /** The labels that identify an alert: the same at FIRING and at RESOLVED. */
  public static Map<String, String> labels(
      CommunicatorKey key, AlertKind kind, String subject, Streak st) {
    Map<String, String> l = new TreeMap<>();
    l.put("alertname", alertName(kind));
    l.put("cluster", key.cluster());
    l.put("job", key.job());
    l.put("communicator", key.communicator());
    l.put("kind", kind.name());
    l.put("severity", st.severity);
    l.put("size_bucket", st.sizeBucket);
    l.put("collective", st.collective);
    String what = subject.contains(":") ? subject.substring(subject.indexOf(':') + 1) : "";
    if (kind == AlertKind.SLOW_LINK) l.put("link", what);
    else if (kind == AlertKind.SLOW_NODE) l.put("node", what);
    else if (!what.isEmpty()) l.put("rank", what);
    // Only when the GPUs showed one: alerts of windows without health keep their labels and id.
    if (st.hardwareCause != null && !st.hardwareCause.isEmpty()) {
      l.put("hardware_cause", st.hardwareCause);
    }
    return l;
  }

  static String alertName(AlertKind kind) {
    return switch (kind) {
      case LATENCY_REGRESSION -> "CollscopeLatencyRegression";
      case SLOW_RANK -> "CollscopeSlowRank";
      case SLOW_LINK -> "CollscopeSlowLink";
      case DEAD_RANK -> "CollscopeDeadRank";
      case SLOW_NODE -> "CollscopeSlowNode";
      case UNKNOWN -> "CollscopeAlert";
    };
  }

  /** A stable id of the labels: the first 16 hex digits of SHA-256 over sorted k=v lines. */
  public static String fingerprint(Map<String, String> labels) {
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<String, String> e : new TreeMap<>(labels).entrySet()) {
      sb.append(e.getKey()).append('=').append(e.getValue()).append('\n');
    }
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256")
              .digest(sb.toString().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static double median(List<Double> v) {
    return median(v.stream().mapToDouble(Double::doubleValue).toArray());
  }

  /** The median of {@code v} (0 when empty); {@code v} is left as it was. */
  static double median(double[] v) {
    double[] x = v.clone();
    java.util.Arrays.sort(x);
    if (x.length == 0) return 0;
    return x.length % 2 == 1 ? x[x.length / 2] : (x[x.length / 2 - 1] + x[x.length / 2]) / 2;
  }
}
