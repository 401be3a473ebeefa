package io.collscope.report;

import io.collscope.flink.history.HistoryLayout;
import io.collscope.history.HistoryDb;
import io.collscope.history.TimeRange;
import io.collscope.model.Phase;
import io.collscope.report.Report.AlertEpisode;
import io.collscope.report.Report.CommunicatorSummary;
import io.collscope.report.Report.Culprits;
import io.collscope.report.Report.DelayMatrix;
import io.collscope.report.Report.Detail;
import io.collscope.report.Report.Latency;
import io.collscope.report.Report.Overview;
import io.collscope.report.Report.Phases;
import io.collscope.report.Report.RankHeatmap;
import io.collscope.report.Report.RankSeries;
import io.collscope.report.Report.Totals;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Builds a {@link Report} from the history views {@code rank_windows}, {@code attributions} and
 * {@code alerts} (columns: the Avro field names) with DuckDB SQL. Everything the browser draws is
 * aggregated here, so the page stays small whatever the cluster: time in {@link #bucketMs buckets}
 * of at most {@link #MAX_BUCKETS} per range, ranks of large communicators in blocks of at most
 * {@link #MAX_RANK_ROWS} rows, the rank windows of the detailed communicators read in one scan.
 */
public final class ReportQuery {

  /** Time buckets per range at most: a chart's x axis, a few pixels per bucket. */
  static final int MAX_BUCKETS = 400;

  /** Bucket widths to choose from (the smallest that keeps the range within MAX_BUCKETS). */
  static final long[] BUCKET_CHOICES_MS = {
    1_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    3_600_000,
    7_200_000,
    21_600_000,
    86_400_000
  };

  /** Rows of a rank heatmap and rows/columns of a delay matrix at most: larger ones get blocks. */
  public static final int MAX_RANK_ROWS = 64;

  /** Bars of the phase chart at most (one per rank up to this many ranks). */
  static final int MAX_PHASE_BARS = 1024;

  /** Communicators in the summary table at most (the rest are counted). */
  static final int MAX_SUMMARY_ROWS = 200;

  /** Communicators in the overview heatmap at most. */
  static final int MAX_OVERVIEW_ROWS = 30;

  /** Alert episodes listed at most, newest first. */
  static final int MAX_ALERTS = 200;

  /** Ranks whose own p50/p99 lines are drawn: those the findings named most. */
  static final int FEATURED_RANKS = 3;

  /** Windows per communicator whose delay matrix is shipped: its worst ones. */
  static final int MATRIX_WINDOWS = 8;

  /** How one finding is labelled on the culprit timeline and in the summary. */
  static final String FINDING_LABEL =
      "CASE f.kind WHEN 'SLOW_LINK' THEN 'link ' || f.from_rank || '→' || f.rank"
          + " WHEN 'SILENT_RANK' THEN 'silent rank ' || f.rank"
          + " WHEN 'SLOW_NODE' THEN 'node ' || node"
          + " WHEN 'UNIFORM_SLOWDOWN' THEN 'uniform slowdown'"
          + " ELSE 'rank ' || f.rank END";

  static final String KEY = "concat_ws('/', cluster, job, communicator)";

  /** What to report on. {@code communicator}: a name or cluster/job/communicator; null: all. */
  public record Options(Instant since, Instant until, String communicator, int top) {}

  private final Connection db;
  private final Options options;
  private final TimeRange range;
  private final Scope scope;
  private final long sinceMs;
  private final long untilMs;
  private final long bucketMs;

  private ReportQuery(Connection db, Options options) {
    this.db = db;
    this.options = options;
    // Windows that lie in [since, until]: those that end in (since, until] (their event time).
    this.range = new TimeRange(options.since().plusMillis(1), options.until().plusMillis(1));
    this.scope = Scope.of(options.communicator());
    this.sinceMs = options.since().toEpochMilli();
    this.untilMs = options.until().toEpochMilli();
    this.bucketMs = bucketMs(untilMs - sinceMs);
  }

  /**
   * Runs every query of the report over the views of {@code db} ({@link HistoryDb}). The range
   * holds the windows that lie in it: those that end in (since, until] (a window's event time is
   * its end, as in the history's partitions).
   */
  public static Report run(HistoryDb db, Options options, Instant now) throws SQLException {
    if (!options.until().isAfter(options.since())) {
      throw new IllegalArgumentException("the report's range is empty: until <= since");
    }
    ReportQuery q = new ReportQuery(db.connection(), options);
    try {
      return q.build(db.base().toString(), now);
    } finally {
      q.dropTemporaryTables();
    }
  }

  /** The smallest bucket width that cuts {@code spanMs} into at most MAX_BUCKETS buckets. */
  static long bucketMs(long spanMs) {
    for (long b : BUCKET_CHOICES_MS) {
      if (spanMs / b <= MAX_BUCKETS) return b;
    }
    return BUCKET_CHOICES_MS[BUCKET_CHOICES_MS.length - 1];
  }

  /**
   * The --communicator filter on the raw columns: NAME (in any cluster and job) or
   * CLUSTER/JOB/NAME.
   */
  record Scope(String cluster, String job, String communicator) {
    static Scope of(String s) {
      if (s == null || s.isBlank()) return new Scope(null, null, null);
      String[] parts = s.split("/", -1);
      if (parts.length == 1) return new Scope(null, null, s);
      if (parts.length == 3 && !parts[2].isEmpty()) return new Scope(parts[0], parts[1], parts[2]);
      throw new IllegalArgumentException(
          "--communicator '" + s + "' is neither NAME nor CLUSTER/JOB/NAME");
    }

    String where() {
      if (communicator == null) return "TRUE";
      String c = "communicator = " + literal(communicator);
      return cluster == null
          ? c
          : "cluster = " + literal(cluster) + " AND job = " + literal(job) + " AND " + c;
    }
  }

  private Report build(String historyName, Instant now) throws SQLException {
    scanAttributions();
    List<Summary> summaries = summaries();
    Map<String, List<AlertEpisode>> alertsByKey = new LinkedHashMap<>();
    List<AlertEpisode> alerts = alertEpisodes();
    for (AlertEpisode a : alerts) {
      alertsByKey.computeIfAbsent(a.communicator(), k -> new ArrayList<>()).add(a);
    }
    for (Summary s : summaries) {
      List<AlertEpisode> own = alertsByKey.getOrDefault(s.key, List.of());
      s.alerts = own.size();
      s.alertsFiring = (int) own.stream().filter(a -> a.endMs() == null).count();
    }
    // Most alerts first, then most windows with findings, then the largest excess.
    summaries.sort(
        Comparator.<Summary>comparingInt(s -> -s.alerts)
            .thenComparingLong(s -> -s.findingWindows)
            .thenComparingDouble(s -> -(s.maxExcessUs == null ? 0 : s.maxExcessUs))
            .thenComparing(s -> s.key));
    List<Summary> detailed = summaries.subList(0, Math.min(options.top(), summaries.size()));
    Map<String, Detail> details = details(detailed, alertsByKey);

    List<CommunicatorSummary> rows = new ArrayList<>();
    for (Summary s : summaries.subList(0, Math.min(MAX_SUMMARY_ROWS, summaries.size()))) {
      rows.add(s.row(details.containsKey(s.key)));
    }
    Totals totals =
        new Totals(
            summaries.size(),
            rankWindowCount(),
            summaries.stream().mapToLong(s -> s.windows).sum(),
            summaries.stream().mapToLong(s -> s.findingWindows).sum(),
            alerts.size());
    List<String> overviewKeys =
        summaries.stream()
            .filter(s -> s.findingWindows > 0 || s.alerts > 0)
            .limit(MAX_OVERVIEW_ROWS)
            .map(s -> s.key)
            .toList();
    List<AlertEpisode> listed =
        alerts.stream()
            .sorted(Comparator.comparingLong(AlertEpisode::startMs).reversed())
            .limit(MAX_ALERTS)
            .toList();
    return new Report(
        historyName,
        now.toString(),
        sinceMs,
        untilMs,
        options.communicator(),
        bucketMs,
        totals,
        rows,
        summaries.size() - rows.size(),
        overview(overviewKeys),
        listed,
        alerts.size() - listed.size(),
        detailed.stream().map(s -> details.get(s.key)).toList());
  }

  // ---- SQL fragments --------------------------------------------------------------------------

  /** Rows of the range and the --communicator scope; the range prunes whole partitions first. */
  private String inScope() {
    return range.where("window_end") + " AND " + scope.where();
  }

  private String bucket(String column) {
    return "(epoch_ms(" + column + ") // " + bucketMs + ") * " + bucketMs;
  }

  private static String keyIn(List<String> keys) {
    return keys.isEmpty() ? "FALSE" : "k IN (" + list(keys) + ")";
  }

  private static String list(List<String> keys) {
    return keys.stream().map(ReportQuery::literal).collect(Collectors.joining(", "));
  }

  static String literal(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  // ---- the attributions: two scans --------------------------------------------------------------

  /**
   * Reads the attributions of the range twice, into two small tables the rest of the report
   * queries: per (communicator, time bucket) counts and medians ({@code report_windows}), and one
   * row per finding ({@code report_findings}, windows with findings only).
   */
  private void scanAttributions() throws SQLException {
    execute(
        "CREATE OR REPLACE TEMP TABLE report_windows AS SELECT "
            + KEY
            + " AS k, * FROM (SELECT cluster, job, communicator, "
            + bucket("window_start")
            + " AS t, max(world_size) AS ws, count(*) AS n,"
            + " count(*) FILTER (WHERE len(findings) > 0) AS nf,"
            + " max(max_wait_mean_us) AS max_wait,"
            + " max(list_max(list_transform(findings, f -> f.excess_wait_us))) AS max_excess,"
            + " median(collective_us) AS collective,"
            + " median(baseline_us) FILTER (WHERE baseline_us > 0) AS baseline,"
            + " arg_max(epoch_ms(window_start), max_wait_mean_us) AS worst_wait_start,"
            + " arg_max(epoch_ms(window_end), max_wait_mean_us) AS worst_wait_end"
            + " FROM attributions WHERE "
            + inScope()
            + " GROUP BY ALL)");
    // Fields added to Finding since (node in version 7, the hardware cause and evidence in 8) are
    // missing from attributions written before them; when no file in range has one, DuckDB cannot
    // bind f.<field> at all. So the findings' struct is looked up once and the table gets each as
    // a column, a constant where the files lack it.
    String struct = findingsStructType();
    String node = struct.contains("node VARCHAR") ? "coalesce(f.node, '')" : "''";
    String cause =
        struct.contains("hardware_cause")
            ? "coalesce(CAST(f.hardware_cause AS VARCHAR), 'NONE')"
            : "'NONE'";
    String evidence =
        struct.contains("hardware_evidence") ? "coalesce(f.hardware_evidence, '')" : "''";
    execute(
        "CREATE OR REPLACE TEMP TABLE report_findings AS SELECT *, "
            + node
            + " AS node, "
            + cause
            + " AS hardware_cause, "
            + evidence
            + " AS hardware_evidence FROM (SELECT "
            + KEY
            + " AS k, epoch_ms(window_start) AS s, epoch_ms(window_end) AS e, verdict,"
            + " unnest(findings) AS f FROM attributions WHERE "
            + inScope()
            + " AND len(findings) > 0)");
  }

  /** The DuckDB type of the attributions' findings list, as the files in range unite it. */
  private String findingsStructType() throws SQLException {
    String[] type = {""};
    query(
        "SELECT column_type FROM (DESCRIBE attributions) WHERE column_name = 'findings'",
        r -> type[0] = r.getString(1));
    return type[0];
  }

  /** A finding's hardware cause and evidence after its label, where its GPUs showed one. */
  private static final String HARDWARE_LABEL =
      " || CASE WHEN hardware_cause = 'NONE' THEN ''"
          + " ELSE ' [' || hardware_cause || ': ' || hardware_evidence || ']' END";

  private void dropTemporaryTables() throws SQLException {
    for (String t : List.of("report_windows", "report_findings", "report_rank_buckets")) {
      execute("DROP TABLE IF EXISTS " + t);
    }
  }

  // ---- summary --------------------------------------------------------------------------------

  /** One communicator's counts while the report is assembled. */
  private static final class Summary {
    String key;
    int worldSize;
    long windows;
    long findingWindows;
    Double maxWaitUs;
    Double maxExcessUs;
    String topCulprit;
    long topCulpritWindows;
    int alerts;
    int alertsFiring;

    CommunicatorSummary row(boolean detailed) {
      return new CommunicatorSummary(
          key,
          worldSize,
          windows,
          findingWindows,
          alerts,
          alertsFiring,
          topCulprit,
          topCulpritWindows,
          maxWaitUs,
          maxExcessUs,
          detailed);
    }
  }

  private List<Summary> summaries() throws SQLException {
    Map<String, Summary> byKey = new LinkedHashMap<>();
    query(
        "SELECT k, max(ws), sum(n), sum(nf), round(max(max_wait), 2), round(max(max_excess), 2)"
            + " FROM report_windows GROUP BY k",
        r -> {
          Summary s = new Summary();
          s.key = r.getString(1);
          s.worldSize = r.getInt(2);
          s.windows = r.getLong(3);
          s.findingWindows = r.getLong(4);
          s.maxWaitUs = doubleOrNull(r, 5);
          s.maxExcessUs = doubleOrNull(r, 6);
          byKey.put(s.key, s);
        });
    query(
        "SELECT k, arg_max(label, n), max(n) FROM (SELECT k, "
            + FINDING_LABEL
            + " AS label, count(DISTINCT s) AS n FROM report_findings GROUP BY ALL) GROUP BY k",
        r -> {
          Summary s = byKey.get(r.getString(1));
          if (s != null) {
            s.topCulprit = r.getString(2);
            s.topCulpritWindows = r.getLong(3);
          }
        });
    return new ArrayList<>(byKey.values());
  }

  private long rankWindowCount() throws SQLException {
    long[] n = {0};
    query("SELECT count(*) FROM rank_windows WHERE " + inScope(), r -> n[0] = r.getLong(1));
    return n[0];
  }

  // ---- alerts ---------------------------------------------------------------------------------

  /**
   * Alert episodes that overlap the range: one per (alert, start), FIRING until its RESOLVED
   * transition; one that resolved after the range's end still fires at its end. (Alerts are few:
   * one record per transition, so this reads them all.)
   */
  private List<AlertEpisode> alertEpisodes() throws SQLException {
    List<AlertEpisode> out = new ArrayList<>();
    String sql =
        "SELECT k, kind, subject, severity, s, e, message FROM (SELECT "
            + KEY
            + " AS k, alert_id, kind, any_value(severity) AS severity,"
            + " coalesce(any_value(labels['rank']), any_value(labels['link']),"
            + " any_value(labels['size_bucket']), '') AS subject,"
            + " epoch_ms(starts_at) AS s,"
            + " epoch_ms(max(ends_at) FILTER (WHERE state = 'RESOLVED')) AS e,"
            + " arg_max(message, window_end) AS message"
            + " FROM alerts WHERE starts_at < "
            + TimeRange.timestamp(options.until())
            + " AND "
            + scope.where()
            + " GROUP BY k, alert_id, kind, starts_at)"
            + " WHERE e IS NULL OR e >= "
            + sinceMs
            + " ORDER BY s";
    query(
        sql,
        r -> {
          long end = r.getLong(6);
          Long endMs = r.wasNull() || end > untilMs ? null : end;
          out.add(
              new AlertEpisode(
                  r.getString(1),
                  r.getString(2),
                  r.getString(3),
                  r.getString(4),
                  r.getLong(5),
                  endMs,
                  r.getString(7)));
        });
    return out;
  }

  // ---- overview -------------------------------------------------------------------------------

  private Overview overview(List<String> keys) throws SQLException {
    List<long[]> cells = new ArrayList<>();
    if (keys.isEmpty()) return new Overview(keys, cells);
    Map<String, Integer> index = indexOf(keys);
    query(
        "SELECT k, t, nf FROM report_windows WHERE nf > 0 AND " + keyIn(keys) + " ORDER BY t",
        r -> cells.add(new long[] {r.getLong(2), index.get(r.getString(1)), r.getLong(3)}));
    return new Overview(keys, cells);
  }

  // ---- details --------------------------------------------------------------------------------

  /** Per detailed communicator: what one scan of its rank windows and the small tables give. */
  private Map<String, Detail> details(
      List<Summary> detailed, Map<String, List<AlertEpisode>> alertsByKey) throws SQLException {
    Map<String, Detail> out = new HashMap<>();
    if (detailed.isEmpty()) return out;
    List<String> keys = detailed.stream().map(s -> s.key).toList();
    scanRankWindows(keys);
    Map<String, List<Integer>> featured = featuredRanks(keys);
    Map<String, Culprits> culprits = culprits(keys);
    Map<String, List<DelayMatrix>> matrices = matrices(detailed);
    for (Summary s : detailed) {
      int block = blockOf(s.worldSize, MAX_RANK_ROWS);
      out.put(
          s.key,
          new Detail(
              s.key,
              s.worldSize,
              latency(s.key, featured.getOrDefault(s.key, List.of())),
              p99ByRank(s.key, s.worldSize, block),
              phases(s.key, s.worldSize),
              culprits.getOrDefault(s.key, new Culprits(kinds(), List.of(), List.of(), List.of())),
              matrices.getOrDefault(s.key, List.of()),
              alertsByKey.getOrDefault(s.key, List.of())));
    }
    return out;
  }

  /** Ranks per row or bar so that a communicator of {@code worldSize} fits in {@code max}. */
  static int blockOf(int worldSize, int max) {
    return Math.max(1, (worldSize + max - 1) / max);
  }

  /**
   * The one pass over the rank windows: per (communicator, rank, bucket) the median p50, the
   * largest p99 and, for the phase chart, each phase's µs times calls. The scan filters on the
   * communicator's name alone (a cheap filter the Parquet reader applies while it reads), the key
   * is built and checked on the aggregated rows only.
   */
  private void scanRankWindows(List<String> keys) throws SQLException {
    StringBuilder phases = new StringBuilder();
    for (Phase p : Phase.values()) {
      phases.append(", sum(").append(p.meanUsField()).append(" * calls) AS ").append(p.fieldName());
    }
    List<String> names =
        keys.stream().map(k -> k.substring(k.lastIndexOf('/') + 1)).distinct().toList();
    execute(
        "CREATE OR REPLACE TEMP TABLE report_rank_buckets AS SELECT * FROM (SELECT "
            + KEY
            + " AS k, * EXCLUDE (cluster, job, communicator) FROM (SELECT cluster, job,"
            + " communicator, rank, "
            + bucket("window_start")
            + " AS t, median(p50_us) AS p50, max(p99_us) AS p99, sum(calls) AS calls"
            + phases
            + " FROM rank_windows WHERE "
            + range.where("window_end")
            + " AND communicator IN ("
            + list(names)
            + ") GROUP BY ALL)) WHERE "
            + keyIn(keys));
  }

  /** The ranks the findings named in most windows (SLOW_RANK and both ends of a SLOW_LINK). */
  private Map<String, List<Integer>> featuredRanks(List<String> keys) throws SQLException {
    Map<String, List<Integer>> out = new HashMap<>();
    String sql =
        "SELECT k, r FROM (SELECT k, r, row_number() OVER (PARTITION BY k ORDER BY count(*) DESC,"
            + " r) AS i FROM (SELECT k, unnest(CASE f.kind WHEN 'SLOW_RANK' THEN [f.rank]"
            + " WHEN 'SLOW_LINK' THEN [f.from_rank, f.rank] ELSE [] END) AS r"
            + " FROM report_findings WHERE "
            + keyIn(keys)
            + ") GROUP BY k, r) WHERE i <= "
            + FEATURED_RANKS
            + " ORDER BY k, i";
    query(sql, r -> out.computeIfAbsent(r.getString(1), k -> new ArrayList<>()).add(r.getInt(2)));
    return out;
  }

  private Latency latency(String key, List<Integer> featured) throws SQLException {
    List<Long> t = new ArrayList<>();
    List<Double> p50 = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    List<Integer> p99Rank = new ArrayList<>();
    query(
        "SELECT t, round(median(p50), 2), round(max(p99), 2), arg_max(rank, p99)"
            + " FROM report_rank_buckets WHERE k = "
            + literal(key)
            + " GROUP BY t ORDER BY t",
        r -> {
          t.add(r.getLong(1));
          p50.add(doubleOrNull(r, 2));
          p99.add(doubleOrNull(r, 3));
          p99Rank.add(r.getInt(4));
        });
    Map<Long, Integer> at = new HashMap<>();
    for (int i = 0; i < t.size(); i++) at.put(t.get(i), i);
    List<RankSeries> ranks = new ArrayList<>();
    for (int rank : featured) {
      Double[] rp50 = new Double[t.size()];
      Double[] rp99 = new Double[t.size()];
      query(
          "SELECT t, round(p50, 2), round(p99, 2) FROM report_rank_buckets WHERE k = "
              + literal(key)
              + " AND rank = "
              + rank,
          r -> {
            Integer i = at.get(r.getLong(1));
            if (i != null) {
              rp50[i] = doubleOrNull(r, 2);
              rp99[i] = doubleOrNull(r, 3);
            }
          });
      ranks.add(new RankSeries(rank, rp50, rp99));
    }
    Double[] collective = new Double[t.size()];
    Double[] baseline = new Double[t.size()];
    query(
        "SELECT t, round(collective, 2), round(baseline, 2) FROM report_windows WHERE k = "
            + literal(key),
        r -> {
          Integer i = at.get(r.getLong(1));
          if (i != null) {
            collective[i] = doubleOrNull(r, 2);
            baseline[i] = doubleOrNull(r, 3);
          }
        });
    return new Latency(
        t.stream().mapToLong(Long::longValue).toArray(),
        p50.toArray(Double[]::new),
        p99.toArray(Double[]::new),
        p99Rank.toArray(Integer[]::new),
        collective,
        baseline,
        BAND_REL,
        ranks);
  }

  /**
   * Half-width of the baseline band, relative: the alert rule's minimum effect ({@code
   * --alert-min-effect}, the job's default), the smallest change it ever calls SLOWER or FASTER.
   */
  static final double BAND_REL =
      Double.parseDouble(
          io.collscope.flink.JobOptions.DEFAULTS.get(
              io.collscope.flink.JobOptions.ALERT_MIN_EFFECT));

  private RankHeatmap p99ByRank(String key, int worldSize, int block) throws SQLException {
    List<String> rows = rankLabels(worldSize, block);
    long first = Math.floorDiv(sinceMs, bucketMs) * bucketMs;
    int buckets = (int) ((untilMs - first + bucketMs - 1) / bucketMs);
    Double[] values = new Double[rows.size() * buckets];
    query(
        "SELECT t, rank // "
            + block
            + " AS row, round(max(p99), 2) FROM report_rank_buckets WHERE k = "
            + literal(key)
            + " GROUP BY ALL",
        r -> {
          int i = (int) ((r.getLong(1) - first) / bucketMs);
          int row = r.getInt(2);
          if (i >= 0 && i < buckets && row >= 0 && row < rows.size()) {
            values[row * buckets + i] = r.getDouble(3);
          }
        });
    return new RankHeatmap(block, rows, first, buckets, values);
  }

  /** "5" for one rank per row, "0–15" for a block. */
  static List<String> rankLabels(int worldSize, int block) {
    List<String> labels = new ArrayList<>();
    for (int lo = 0; lo < worldSize; lo += block) {
      int hi = Math.min(worldSize, lo + block) - 1;
      labels.add(lo == hi ? Integer.toString(lo) : lo + "–" + hi);
    }
    return labels;
  }

  private Phases phases(String key, int worldSize) throws SQLException {
    int block = blockOf(worldSize, MAX_PHASE_BARS);
    int bars = (worldSize + block - 1) / block;
    Map<String, double[]> byPhase = new LinkedHashMap<>();
    for (Phase p : Phase.values()) byPhase.put(p.fieldName(), new double[bars]);
    StringBuilder cols = new StringBuilder();
    for (Phase p : Phase.values()) {
      cols.append(", round(sum(").append(p.fieldName()).append(") / sum(calls), 2)");
    }
    query(
        "SELECT rank // "
            + block
            + " AS bar"
            + cols
            + " FROM report_rank_buckets WHERE calls > 0 AND k = "
            + literal(key)
            + " GROUP BY bar ORDER BY bar",
        r -> {
          int bar = r.getInt(1);
          if (bar < 0 || bar >= bars) return;
          int c = 2;
          for (Phase p : Phase.values()) byPhase.get(p.fieldName())[bar] = r.getDouble(c++);
        });
    return new Phases(block, rankLabels(worldSize, block), byPhase);
  }

  // ---- culprits and delay matrices ------------------------------------------------------------

  static List<String> kinds() {
    return List.of("SLOW_RANK", "SLOW_LINK", "SILENT_RANK", "UNIFORM_SLOWDOWN");
  }

  private Map<String, Culprits> culprits(List<String> keys) throws SQLException {
    Map<String, Map<String, Integer>> labels = new HashMap<>();
    Map<String, List<String>> causes = new HashMap<>();
    Map<String, List<double[]>> points = new HashMap<>();
    List<String> kinds = kinds();
    String sql =
        "SELECT k, t, kind, label, count(*) AS n, round(max(excess), 2), mode(cause)"
            + " FROM (SELECT k, (s // "
            + bucketMs
            + ") * "
            + bucketMs
            + " AS t, f.kind AS kind, "
            + FINDING_LABEL
            + " AS label, f.excess_wait_us AS excess, f.cause AS cause FROM report_findings WHERE "
            + keyIn(keys)
            + ") GROUP BY k, t, kind, label ORDER BY k, kind, label, t";
    query(
        sql,
        r -> {
          String k = r.getString(1);
          Map<String, Integer> ls = labels.computeIfAbsent(k, x -> new LinkedHashMap<>());
          String label = r.getString(4);
          Integer li = ls.get(label);
          if (li == null) {
            li = ls.size();
            ls.put(label, li);
            causes.computeIfAbsent(k, x -> new ArrayList<>()).add(r.getString(7));
          }
          int kind = kinds.indexOf(r.getString(3));
          points
              .computeIfAbsent(k, x -> new ArrayList<>())
              .add(new double[] {r.getLong(2), li, r.getLong(5), r.getDouble(6), kind});
        });
    Map<String, Culprits> out = new HashMap<>();
    for (var e : labels.entrySet()) {
      out.put(
          e.getKey(),
          new Culprits(
              kinds,
              new ArrayList<>(e.getValue().keySet()),
              causes.get(e.getKey()),
              points.get(e.getKey())));
    }
    return out;
  }

  /** One window whose delay matrix the report shows. */
  private record MatrixWindow(String key, long start, long end, String verdict, String findings) {}

  /**
   * The windows to show a delay matrix of: per communicator its findings' strongest windows (by
   * largest excess), or without findings the window with the largest wait.
   */
  private List<MatrixWindow> matrixWindows(List<Summary> detailed) throws SQLException {
    List<MatrixWindow> windows = new ArrayList<>();
    List<String> keys = detailed.stream().map(s -> s.key).toList();
    query(
        "SELECT k, s, e, any_value(verdict), string_agg(f.kind || '(' || CASE f.kind"
            + " WHEN 'SLOW_LINK' THEN f.from_rank || '->' || f.rank"
            + " WHEN 'SLOW_NODE' THEN node"
            + " WHEN 'UNIFORM_SLOWDOWN' THEN 'all' ELSE f.rank::VARCHAR END"
            + " || ', ' || f.cause || ', ' || round(f.excess_wait_us, 1) || ' µs)'"
            + HARDWARE_LABEL
            + ", ' '"
            + " ORDER BY f.excess_wait_us DESC) AS label FROM report_findings WHERE "
            + keyIn(keys)
            + " GROUP BY k, s, e QUALIFY row_number() OVER (PARTITION BY k ORDER BY"
            + " max(f.excess_wait_us) DESC, s DESC) <= "
            + MATRIX_WINDOWS
            + " ORDER BY k, max(f.excess_wait_us) DESC, s DESC",
        r ->
            windows.add(
                new MatrixWindow(
                    r.getString(1), r.getLong(2), r.getLong(3), r.getString(4), r.getString(5))));
    List<String> without =
        keys.stream().filter(k -> windows.stream().noneMatch(w -> w.key.equals(k))).toList();
    if (!without.isEmpty()) {
      query(
          "SELECT k, arg_max(worst_wait_start, max_wait), arg_max(worst_wait_end, max_wait)"
              + " FROM report_windows WHERE "
              + keyIn(without)
              + " GROUP BY k",
          r -> {
            long start = r.getLong(2);
            if (!r.wasNull()) {
              windows.add(new MatrixWindow(r.getString(1), start, r.getLong(3), "NONE", ""));
            }
          });
    }
    return windows;
  }

  /**
   * The delay matrices of each communicator's chosen windows, blocks of ranks taking their largest
   * cell. Rows are waiting ranks, columns peers; lateness where the window has it, per-peer wait
   * otherwise. The rank windows are read from the chosen windows' partitions only.
   */
  private Map<String, List<DelayMatrix>> matrices(List<Summary> detailed) throws SQLException {
    Map<String, Integer> worldSizes =
        detailed.stream().collect(Collectors.toMap(s -> s.key, s -> s.worldSize));
    List<MatrixWindow> windows = matrixWindows(detailed);
    Map<String, List<DelayMatrix>> out = new HashMap<>();
    if (windows.isEmpty()) return out;
    String chosen =
        windows.stream()
            .map(w -> "(" + literal(w.key) + ", " + w.start + ")")
            .collect(Collectors.joining(", "));
    // Per partition (the hour of a window's end, its event time) one read of the chosen windows'
    // span: constant filters the Parquet reader applies to its row groups.
    Map<String, List<MatrixWindow>> byPartition = new TreeMap<>();
    for (MatrixWindow w : windows) {
      byPartition.computeIfAbsent(partitionOf(w.end), p -> new ArrayList<>()).add(w);
    }
    // Compact rank windows (RankWindow v6, large communicators) list some peers; every other
    // peer has the others' value. A history written before v6 has no such column.
    boolean[] hasIndex = {false};
    query(
        "SELECT count(*) FROM (DESCRIBE rank_windows) WHERE column_name = 'peer_index'",
        r -> hasIndex[0] = r.getLong(1) > 0);
    String compactColumns =
        hasIndex[0]
            ? "world_size, peer_index, others_late_mean_us, others_wait_mean_us"
            : "world_size, CAST([] AS INTEGER[]) AS peer_index, 0.0 AS others_late_mean_us,"
                + " 0.0 AS others_wait_mean_us";
    String reads =
        byPartition.entrySet().stream()
            .map(
                e ->
                    "SELECT cluster, job, communicator, window_start, window_end, rank,"
                        + " peer_late_mean_us, peer_wait_mean_us, "
                        + compactColumns
                        + " FROM rank_windows WHERE "
                        + e.getKey()
                        + " AND communicator IN ("
                        + list(
                            e.getValue().stream()
                                .map(w -> w.key.substring(w.key.lastIndexOf('/') + 1))
                                .distinct()
                                .toList())
                        + ") AND window_start BETWEEN "
                        + TimeRange.timestamp(
                            Instant.ofEpochMilli(
                                e.getValue().stream().mapToLong(w -> w.start).min().orElseThrow()))
                        + " AND "
                        + TimeRange.timestamp(
                            Instant.ofEpochMilli(
                                e.getValue().stream().mapToLong(w -> w.start).max().orElseThrow())))
            .collect(Collectors.joining(" UNION ALL "));
    String blocks =
        worldSizes.entrySet().stream()
            .map(e -> "(" + literal(e.getKey()) + ", " + blockOf(e.getValue(), MAX_RANK_ROWS) + ")")
            .collect(Collectors.joining(", "));
    String sql =
        "WITH rw AS (SELECT "
            + KEY
            + " AS k, epoch_ms(window_start) AS s, epoch_ms(window_end) AS e, rank,"
            + " CASE WHEN coalesce(len(peer_index), 0) = 0 THEN lm ELSE list_transform("
            + "range(world_size), p -> coalesce(lm[list_position(peer_index, p)], om)) END AS m,"
            + " late FROM (SELECT *, CASE WHEN len(peer_late_mean_us) > 0 THEN peer_late_mean_us"
            + " ELSE peer_wait_mean_us END AS lm, CASE WHEN len(peer_late_mean_us) > 0 THEN"
            + " others_late_mean_us ELSE others_wait_mean_us END AS om,"
            + " len(peer_late_mean_us) > 0 AS late FROM ("
            + reads
            + "))), chosen AS (SELECT rw.* FROM rw JOIN (VALUES "
            + chosen
            + ") AS c(ck, cs) ON k = ck AND s = cs),"
            + " cells AS (SELECT k, s, rank, late, unnest(m) AS v,"
            + " generate_subscripts(m, 1) - 1 AS p FROM chosen)"
            + " SELECT k, s, bool_or(late), rank // b AS y, p // b AS x, round(max(v), 2)"
            + " FROM cells JOIN (VALUES "
            + blocks
            + ") AS bl(bk, b) ON k = bk WHERE rank <> p OR b > 1 GROUP BY k, s, y, x";
    Map<String, Integer> sizes = new HashMap<>();
    worldSizes.forEach(
        (k, ws) ->
            sizes.put(k, (ws + blockOf(ws, MAX_RANK_ROWS) - 1) / blockOf(ws, MAX_RANK_ROWS)));
    Map<String, Double[]> cells = new HashMap<>();
    Map<String, Boolean> lateness = new HashMap<>();
    query(
        sql,
        r -> {
          String id = r.getString(1) + "@" + r.getLong(2);
          int size = sizes.get(r.getString(1));
          int y = r.getInt(4);
          int x = r.getInt(5);
          if (x >= 0 && x < size && y >= 0 && y < size) {
            cells.computeIfAbsent(id, z -> new Double[size * size])[y * size + x] = r.getDouble(6);
          }
          lateness.merge(id, r.getBoolean(3), Boolean::logicalOr);
        });
    for (MatrixWindow w : windows) {
      String id = w.key + "@" + w.start;
      Double[] c = cells.get(id);
      if (c == null) continue;
      int ws = worldSizes.get(w.key);
      int block = blockOf(ws, MAX_RANK_ROWS);
      double max =
          java.util.Arrays.stream(c).filter(v -> v != null).mapToDouble(v -> v).max().orElse(0);
      out.computeIfAbsent(w.key, x -> new ArrayList<>())
          .add(
              new DelayMatrix(
                  w.start,
                  w.end,
                  w.verdict,
                  w.findings,
                  lateness.getOrDefault(id, false) ? "lateness" : "wait",
                  block,
                  (ws + block - 1) / block,
                  max,
                  c));
    }
    return out;
  }

  /** The partition holding events at {@code epochMs}, as a filter on the partition columns. */
  private static String partitionOf(long epochMs) {
    java.time.LocalDateTime t =
        java.time.LocalDateTime.ofInstant(Instant.ofEpochMilli(epochMs), java.time.ZoneOffset.UTC);
    return "("
        + HistoryLayout.DATE_COLUMN
        + " = DATE '"
        + t.toLocalDate()
        + "' AND "
        + HistoryLayout.HOUR_COLUMN
        + " = "
        + t.getHour()
        + ")";
  }

  // ---- JDBC helpers ---------------------------------------------------------------------------

  private interface RowHandler {
    void row(ResultSet r) throws SQLException;
  }

  private void execute(String sql) throws SQLException {
    try (Statement st = db.createStatement()) {
      st.execute(sql);
    } catch (SQLException e) {
      throw new SQLException(e.getMessage() + "\n  in: " + sql, e);
    }
  }

  private void query(String sql, RowHandler h) throws SQLException {
    try (Statement st = db.createStatement();
        ResultSet r = st.executeQuery(sql)) {
      while (r.next()) h.row(r);
    } catch (SQLException e) {
      throw new SQLException(e.getMessage() + "\n  in: " + sql, e);
    }
  }

  private static Double doubleOrNull(ResultSet r, int col) throws SQLException {
    double v = r.getDouble(col);
    return r.wasNull() || !Double.isFinite(v) ? null : v;
  }

  private static <T> Map<T, Integer> indexOf(List<T> list) {
    Map<T, Integer> m = new HashMap<>();
    for (int i = 0; i < list.size(); i++) m.put(list.get(i), i);
    return m;
  }
}
