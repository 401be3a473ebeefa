package io.collscope.exporter;

import io.collscope.alerts.AlertMapping;
import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.exporter.ExporterState.CommunicatorEntry;
import io.collscope.exporter.ExporterState.RankEntry;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.Phase;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;

/**
 * The metric mapping: every series the exporter serves, read from {@link ExporterState} at each
 * scrape (callback metrics), so a rank or communicator the state dropped has no series left.
 *
 * <p>Labels: {@code cluster}, {@code job}, {@code communicator} on everything about a communicator;
 * {@code rank} on per-rank series; {@code phase}, {@code verdict}, {@code kind}, {@code cause},
 * {@code link}, {@code reason} from enums or from the ranks of the communicator. So a communicator
 * of N ranks has 10 N + 22 series, plus 2 per finding of its latest window and 1 per alert, and
 * they all go when it stops (see {@code docs/MONITORING.md}).
 */
public final class ExporterMetrics {

  public static final String CLUSTER = "cluster";
  public static final String JOB = "job";
  public static final String COMMUNICATOR = "communicator";
  public static final String RANK = "rank";
  public static final String LINK = "link";
  public static final String NODE = "node";
  public static final String PHASE = "phase";
  public static final String KIND = "kind";

  public static final String RANK_LATENCY_P50 = "collscope_rank_latency_p50_microseconds";
  public static final String RANK_LATENCY_P99 = "collscope_rank_latency_p99_microseconds";
  public static final String RANK_PHASE = "collscope_rank_phase_microseconds";
  public static final String RANK_CALLS = "collscope_rank_calls";
  public static final String RANK_TIMEOUTS = "collscope_rank_timeouts";
  public static final String RANK_WINDOW_END = "collscope_rank_window_end_timestamp_seconds";
  public static final String MAX_WAIT = "collscope_communicator_max_wait_microseconds";
  public static final String MAX_WAIT_RANK = "collscope_communicator_max_wait_rank";
  public static final String COLLECTIVE = "collscope_communicator_collective_microseconds";
  public static final String BASELINE = "collscope_communicator_baseline_microseconds";
  public static final String CONFIDENCE = "collscope_communicator_confidence";
  public static final String MISSING_RANKS = "collscope_communicator_missing_ranks";
  public static final String VERDICT = "collscope_communicator_verdict";
  public static final String FINDINGS = "collscope_communicator_findings";
  public static final String WINDOW_END = "collscope_communicator_window_end_timestamp_seconds";
  public static final String PIPELINE_LAG = "collscope_pipeline_lag_seconds";
  public static final String CULPRIT_EXCESS = "collscope_culprit_excess_wait_microseconds";
  public static final String CULPRIT_CONFIDENCE = "collscope_culprit_confidence";
  public static final String ALERT_FIRING = "collscope_alert_firing";
  public static final String DEAD_LETTERS = "collscope_dead_letters";
  public static final String RECORDS = "collscope_exporter_records";
  public static final String UNDECODABLE = "collscope_exporter_undecodable";
  public static final String CONSUMER_LAG = "collscope_exporter_consumer_lag_records";
  public static final String EXPIRED = "collscope_exporter_expired";

  /** The alert labels that become metric labels: together they identify an alert. */
  static final List<String> ALERT_LABELS =
      List.of("alertname", KIND, "severity", "collective", "size_bucket", RANK, LINK);

  private static final String[] RANK_LABELS = {CLUSTER, JOB, COMMUNICATOR, RANK};
  private static final String[] COMMUNICATOR_LABELS = {CLUSTER, JOB, COMMUNICATOR};

  private final ExporterState state;

  private ExporterMetrics(ExporterState state) {
    this.state = state;
  }

  /** Registers every collscope metric on {@code registry}, read from {@code state}. */
  public static ExporterMetrics register(ExporterState state, PrometheusRegistry registry) {
    ExporterMetrics m = new ExporterMetrics(state);
    m.registerRankMetrics(registry);
    m.registerCommunicatorMetrics(registry);
    m.registerCulpritMetrics(registry);
    m.registerAlertMetrics(registry);
    m.registerExporterMetrics(registry);
    return m;
  }

  private void registerRankMetrics(PrometheusRegistry r) {
    rankGauge(
        r,
        RANK_LATENCY_P50,
        "Median latency of a whole collective on this rank in its latest window, its wait"
            + " included (upper edge of the log2 histogram bucket: exact to a factor of 2).",
        RankWindow::getP50Us);
    rankGauge(
        r,
        RANK_LATENCY_P99,
        "99th percentile latency of a whole collective on this rank in its latest window (upper"
            + " edge of the log2 histogram bucket).",
        RankWindow::getP99Us);
    rankGauge(
        r,
        RANK_CALLS,
        "Collectives that ended on this rank in its latest window, timed-out ones included.",
        w -> w.getCalls());
    rankGauge(
        r,
        RANK_TIMEOUTS,
        "Collectives of this rank that timed out in its latest window.",
        w -> w.getTimeouts());
    rankGauge(
        r,
        RANK_WINDOW_END,
        "End of this rank's latest window (Unix seconds).",
        w -> w.getWindowEnd().toEpochMilli() / 1e3);
    gauge(
        r,
        RANK_PHASE,
        "Mean microseconds per collective this rank spent in the phase in its latest window.",
        new String[] {CLUSTER, JOB, COMMUNICATOR, RANK, PHASE},
        cb -> {
          for (RankEntry e : state.ranks()) {
            RankWindow w = e.window();
            String rank = Integer.toString(w.getRank());
            for (Phase p : Phase.values()) {
              cb.call(
                  (Double) w.get(p.meanUsField()),
                  w.getCluster(),
                  w.getJob(),
                  w.getCommunicator(),
                  rank,
                  p.fieldName());
            }
          }
        });
  }

  private void registerCommunicatorMetrics(PrometheusRegistry r) {
    attributionGauge(
        r,
        MAX_WAIT,
        "Largest mean wait per collective over the communicator's ranks in its latest window.",
        Attribution::getMaxWaitMeanUs);
    attributionGauge(
        r,
        MAX_WAIT_RANK,
        "The rank with that largest wait (-1: no rank reported).",
        Attribution::getMaxWaitRank);
    attributionGauge(
        r,
        COLLECTIVE,
        "The collective's own cost in the latest window: the smallest mean time per collective"
            + " over the ranks.",
        Attribution::getCollectiveUs);
    attributionGauge(
        r,
        BASELINE,
        "The communicator's baseline cost per collective (0 until enough clean windows).",
        Attribution::getBaselineUs);
    attributionGauge(
        r, CONFIDENCE, "Confidence of the latest verdict (0..1).", Attribution::getConfidence);
    attributionGauge(
        r,
        MISSING_RANKS,
        "Ranks of the world with no data in the latest window.",
        a -> a.getMissingRanks().size());
    gauge(
        r,
        VERDICT,
        "1 for the verdict of the communicator's latest window, 0 for the others.",
        new String[] {CLUSTER, JOB, COMMUNICATOR, "verdict"},
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            if (e.attribution() == null) continue;
            CommunicatorKey k = e.key();
            for (Verdict v : Verdict.values()) {
              double on = e.attribution().getVerdict() == v ? 1 : 0;
              cb.call(on, k.cluster(), k.job(), k.communicator(), v.name());
            }
          }
        });
    gauge(
        r,
        FINDINGS,
        "Findings of the communicator's latest window, by kind.",
        new String[] {CLUSTER, JOB, COMMUNICATOR, KIND},
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            if (e.attribution() == null) continue;
            Map<FindingKind, Integer> counts = findingCounts(e.attribution());
            CommunicatorKey k = e.key();
            for (FindingKind kind : FindingKind.values()) {
              cb.call(counts.get(kind), k.cluster(), k.job(), k.communicator(), kind.name());
            }
          }
        });
    gauge(
        r,
        WINDOW_END,
        "End of the communicator's latest window in any output topic (Unix seconds).",
        COMMUNICATOR_LABELS,
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            if (e.latestWindowEnd().equals(Instant.EPOCH)) continue;
            CommunicatorKey k = e.key();
            cb.call(
                e.latestWindowEnd().toEpochMilli() / 1e3, k.cluster(), k.job(), k.communicator());
          }
        });
    gauge(
        r,
        PIPELINE_LAG,
        "Now minus the end of the communicator's latest window: how far behind the live data"
            + " the pipeline's output is (window length, watermark delay, checkpoint interval).",
        COMMUNICATOR_LABELS,
        cb -> {
          Instant now = state.clock().instant();
          for (CommunicatorEntry e : state.communicators()) {
            if (e.latestWindowEnd().equals(Instant.EPOCH)) continue;
            CommunicatorKey k = e.key();
            double lag = Duration.between(e.latestWindowEnd(), now).toMillis() / 1e3;
            cb.call(lag, k.cluster(), k.job(), k.communicator());
          }
        });
  }

  private void registerCulpritMetrics(PrometheusRegistry r) {
    String[] labels = {
      CLUSTER, JOB, COMMUNICATOR, KIND, RANK, LINK, NODE, "cause", "hardware_cause"
    };
    culpritGauge(
        r,
        CULPRIT_EXCESS,
        "Each finding of the communicator's latest window: the culprit's mean lateness per"
            + " collective beyond the noise floor as its peers saw it (UNIFORM_SLOWDOWN: the"
            + " collective's cost beyond its baseline).",
        labels,
        Finding::getExcessWaitUs);
    culpritGauge(
        r,
        CULPRIT_CONFIDENCE,
        "Each finding of the communicator's latest window: its confidence (0..1).",
        labels,
        Finding::getConfidence);
  }

  private void registerAlertMetrics(PrometheusRegistry r) {
    String[] labels = new String[3 + ALERT_LABELS.size()];
    labels[0] = CLUSTER;
    labels[1] = JOB;
    labels[2] = COMMUNICATOR;
    for (int i = 0; i < ALERT_LABELS.size(); i++) labels[3 + i] = ALERT_LABELS.get(i);
    gauge(
        r,
        ALERT_FIRING,
        "1 while the alert fires, 0 once resolved (the series goes a TTL after it resolved).",
        labels,
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            for (Alert a : e.alerts()) {
              cb.call(a.getState() == AlertState.FIRING ? 1 : 0, alertLabels(e.key(), a));
            }
          }
        });
    CounterWithCallback.builder()
        .name(DEAD_LETTERS)
        .help(
            "Dead letters (input records the job could not use) read since the exporter"
                + " started, by reason.")
        .labelNames("reason")
        .callback(cb -> state.deadLetters().forEach((reason, n) -> cb.call(n, reason.name())))
        .register(r);
  }

  private void registerExporterMetrics(PrometheusRegistry r) {
    CounterWithCallback.builder()
        .name(RECORDS)
        .help("Records the exporter read, by topic.")
        .labelNames("topic")
        .callback(cb -> state.topics().forEach(t -> cb.call(t.records(), t.topic())))
        .register(r);
    CounterWithCallback.builder()
        .name(UNDECODABLE)
        .help("Records the exporter could not decode (skipped), by topic.")
        .labelNames("topic")
        .callback(cb -> state.topics().forEach(t -> cb.call(t.undecodable(), t.topic())))
        .register(r);
    gauge(
        r,
        CONSUMER_LAG,
        "Records the exporter has yet to read, by topic (its consumer's lag, summed over"
            + " partitions).",
        new String[] {"topic"},
        cb ->
            state.topics().stream()
                .filter(t -> t.consumerLag() != null)
                .forEach(t -> cb.call(t.consumerLag(), t.topic())));
    CounterWithCallback.builder()
        .name(EXPIRED)
        .help("Ranks and communicators whose series were removed after the series TTL.")
        .labelNames("scope")
        .callback(
            cb -> {
              ExporterState.Expired x = state.expired();
              cb.call(x.ranks(), "rank");
              cb.call(x.communicators(), "communicator");
            })
        .register(r);
  }

  /** The alert's metric labels, in the order of the alert metric's label names. */
  static String[] alertLabels(CommunicatorKey k, Alert a) {
    String[] v = new String[3 + ALERT_LABELS.size()];
    v[0] = k.cluster();
    v[1] = k.job();
    v[2] = k.communicator();
    Map<String, String> labels = a.getLabels();
    for (int i = 0; i < ALERT_LABELS.size(); i++) {
      String name = ALERT_LABELS.get(i);
      String value = labels == null ? null : labels.get(name);
      if (value == null && name.equals("alertname")) {
        value = AlertMapping.alertname(a.getKind());
      }
      if (value == null && name.equals(KIND)) value = a.getKind().name();
      if (value == null && name.equals("severity")) value = a.getSeverity();
      v[3 + i] = value == null ? "" : value;
    }
    return v;
  }

  /**
   * A finding's culprit labels: kind, rank (SLOW_RANK, SILENT_RANK), link {@code P->R} (SLOW_LINK),
   * node (SLOW_NODE: the slow host; empty otherwise), cause, and the hardware cause its GPUs showed
   * (NONE without GPU health). The rank of a link or node finding is not a culprit, so it is left
   * empty.
   */
  static String[] culpritLabels(CommunicatorKey k, Finding f) {
    String rank = "";
    String link = "";
    String node = "";
    switch (f.getKind()) {
      case SLOW_LINK -> link = f.getFromRank() + "->" + f.getRank();
      case SLOW_NODE -> node = f.getNode() == null ? "" : f.getNode().toString();
      case UNIFORM_SLOWDOWN -> {}
      default -> rank = f.getRank() < 0 ? "" : Integer.toString(f.getRank());
    }
    return new String[] {
      k.cluster(),
      k.job(),
      k.communicator(),
      f.getKind().name(),
      rank,
      link,
      node,
      f.getCause().name(),
      f.getHardwareCause().name()
    };
  }

  static Map<FindingKind, Integer> findingCounts(Attribution a) {
    Map<FindingKind, Integer> counts = new EnumMap<>(FindingKind.class);
    for (FindingKind k : FindingKind.values()) counts.put(k, 0);
    for (Finding f : a.getFindings()) counts.merge(f.getKind(), 1, Integer::sum);
    return counts;
  }

  private void rankGauge(
      PrometheusRegistry r, String name, String help, ToDoubleFunction<RankWindow> value) {
    gauge(
        r,
        name,
        help,
        RANK_LABELS,
        cb -> {
          for (RankEntry e : state.ranks()) {
            RankWindow w = e.window();
            cb.call(
                value.applyAsDouble(w),
                w.getCluster(),
                w.getJob(),
                w.getCommunicator(),
                Integer.toString(w.getRank()));
          }
        });
  }

  private void attributionGauge(
      PrometheusRegistry r, String name, String help, ToDoubleFunction<Attribution> value) {
    gauge(
        r,
        name,
        help,
        COMMUNICATOR_LABELS,
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            if (e.attribution() == null) continue;
            CommunicatorKey k = e.key();
            cb.call(value.applyAsDouble(e.attribution()), k.cluster(), k.job(), k.communicator());
          }
        });
  }

  private void culpritGauge(
      PrometheusRegistry r,
      String name,
      String help,
      String[] labels,
      ToDoubleFunction<Finding> value) {
    gauge(
        r,
        name,
        help,
        labels,
        cb -> {
          for (CommunicatorEntry e : state.communicators()) {
            if (e.attribution() == null) continue;
            // Findings come strongest first; a second finding with the same labels (it cannot
            // happen today) would be a duplicate series, so only the strongest is kept.
            Set<List<String>> seen = new HashSet<>();
            for (Finding f : e.attribution().getFindings()) {
              String[] l = culpritLabels(e.key(), f);
              if (seen.add(List.of(l))) cb.call(value.applyAsDouble(f), l);
            }
          }
        });
  }

  private static void gauge(
      PrometheusRegistry r,
      String name,
      String help,
      String[] labels,
      Consumer<GaugeWithCallback.Callback> callback) {
    GaugeWithCallback.builder()
        .name(name)
        .help(help)
        .labelNames(labels)
        .callback(callback)
        .register(r);
  }
}
