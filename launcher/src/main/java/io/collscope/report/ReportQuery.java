package io.collscope.report;

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
          + " WHEN 'UNIFORM_SLOWDOWN' THEN 'uniform slowdown'"
          + " ELSE 'rank ' || f.rank END";

  static final String KEY = "concat_ws('/', cluster, job, communicator)";

  /** What to report on. {@code communicator}: a name or cluster/job/communicator; null: all. */
  public record Options(Instant since, Instant until, String communicator, int top) {}

  private final Connection db;
  private final Options options;
  private final long sinceMs;
  private final long untilMs;
  private final long bucketMs;

  private ReportQuery(Connection db, Options options) {
    this.db = db;
    this.options = options;
    this.sinceMs = options.since().toEpochMilli();
    this.untilMs = options.until().toEpochMilli();
    this.bucketMs = bucketMs(untilMs - sinceMs);
  }

  /** Runs every query of the report over the views of {@code db}. */
  public static Report run(Connection db, Options options, String historyName, Instant now)
      throws SQLException {
    if (!options.until().isAfter(options.since())) {
      throw new IllegalArgumentException("the report's range is empty: until <= since");
    }
    try (Statement s = db.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
    }
    return new ReportQuery(db, options).build(historyName, now);
  }

  /** The smallest bucket width that cuts {@code spanMs} into at most MAX_BUCKETS buckets. */
  static long bucketMs(long spanMs) {
    for (long b : BUCKET_CHOICES_MS) {
      if (spanMs / b <= MAX_BUCKETS) return b;
    }
    return BUCKET_CHOICES_MS[BUCKET_CHOICES_MS.length - 1];
  }

  private Report build(String historyName, Instant now) throws SQLException {
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

  /** The range on a timestamp column, as literals DuckDB can push into the Parquet scan. */
  private String inRange(String column) {
    return column + " >= epoch_ms(" + sinceMs + ") AND " + column + " < epoch_ms(" + untilMs + ")";
  }

  /** The --communicator filter (TRUE without one). */
  private String communicatorFilter() {
    String c = options.communicator();
    if (c == null || c.isEmpty()) return "TRUE";
    return c.contains("/") ? KEY + " = " + literal(c) : "communicator = " + literal(c);
  }

  /** Rows of exactly these communicators: on the raw columns, so the scan can skip row groups. */
  private static String oneOf(List<String> keys) {
    if (keys.isEmpty()) return "FALSE";
    Map<String, List<String>> byName = new TreeMap<>();
    for (String k : keys) {
      byName.computeIfAbsent(k.substring(k.lastIndexOf('/') + 1), n -> new ArrayList<>()).add(k);
    }
    String names = byName.keySet().stream().map(ReportQuery::literal).collect(joining());
    String full = keys.stream().map(ReportQuery::literal).collect(joining());
    return "communicator IN (" + names + ") AND " + KEY + " IN (" + full + ")";
  }

  private String bucket(String column) {
    return "(epoch_ms(" + column + ") // " + bucketMs + ") * " + bucketMs;
  }

  static String literal(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  private static java.util.stream.Collector<CharSequence, ?, String> joining() {
    return Collectors.joining(", ");
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
    String sql =
        "SELECT "
            + KEY
            + " AS k, max(world_size), count(*), count(*) FILTER (WHERE len(findings) > 0),"
            + " round(max(max_wait_mean_us), 2),"
            + " round(max(list_max(list_transform(findings, f -> f.excess_wait_us))), 2)"
            + " FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + communicatorFilter()
            + " GROUP BY k";
    query(
        sql,
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
    String culprits =
        "SELECT k, arg_max(label, n), max(n) FROM (SELECT "
            + KEY
            + " AS k, "
            + FINDING_LABEL
            + " AS label, count(DISTINCT window_start) AS n FROM (SELECT *, unnest(findings) AS f"
            + " FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + communicatorFilter()
            + ") GROUP BY ALL) GROUP BY k";
    query(
        culprits,
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
    query(
        "SELECT count(*) FROM rank_windows WHERE "
            + inRange("window_start")
            + " AND "
            + communicatorFilter(),
        r -> n[0] = r.getLong(1));
    return n[0];
  }

  // ---- alerts ---------------------------------------------------------------------------------

  /**
   * Alert episodes that overlap the range: one per (alert, start), FIRING until its RESOLVED
   * transition; one that resolved after the range's end still fires at its end.
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
            + " FROM alerts WHERE starts_at < epoch_ms("
            + untilMs
            + ") AND "
            + communicatorFilter()
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
    String sql =
        "SELECT "
            + KEY
            + " AS k, "
            + bucket("window_start")
            + " AS t, count(*) FILTER (WHERE len(findings) > 0) AS n FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + " GROUP BY ALL HAVING n > 0 ORDER BY t";
    query(sql, r -> cells.add(new long[] {r.getLong(2), index.get(r.getString(1)), r.getLong(3)}));
    return new Overview(keys, cells);
  }

  // ---- details --------------------------------------------------------------------------------

  /** Per detailed communicator: what one scan of its rank windows and its attributions give. */
  private Map<String, Detail> details(
      List<Summary> detailed, Map<String, List<AlertEpisode>> alertsByKey) throws SQLException {
    Map<String, Detail> out = new HashMap<>();
    if (detailed.isEmpty()) return out;
    List<String> keys = detailed.stream().map(s -> s.key).toList();
    scanRankBuckets(keys);
    Map<String, List<Integer>> featured = featuredRanks(keys);
    Map<String, AttributionBuckets> attributed = attributionBuckets(keys);
    Map<String, Culprits> culprits = culprits(keys);
    Map<String, List<DelayMatrix>> matrices = matrices(detailed);
    for (Summary s : detailed) {
      int block = blockOf(s.worldSize, MAX_RANK_ROWS);
      out.put(
          s.key,
          new Detail(
              s.key,
              s.worldSize,
              latency(s.key, featured.getOrDefault(s.key, List.of()), attributed.get(s.key)),
              p99ByRank(s.key, s.worldSize, block),
              phases(s.key, s.worldSize),
              culprits.getOrDefault(s.key, new Culprits(kinds(), List.of(), List.of(), List.of())),
              matrices.getOrDefault(s.key, List.of()),
              alertsByKey.getOrDefault(s.key, List.of())));
    }
    try (Statement st = db.createStatement()) {
      st.execute("DROP TABLE IF EXISTS report_rank_buckets");
    }
    return out;
  }

  /** Ranks per row or bar so that a communicator of {@code worldSize} fits in {@code max}. */
  static int blockOf(int worldSize, int max) {
    return Math.max(1, (worldSize + max - 1) / max);
  }

  /**
   * The one pass over the rank windows: per (communicator, rank, bucket) the median p50, the
   * largest p99 and, for the phase chart, each phase's µs times calls.
   */
  private void scanRankBuckets(List<String> keys) throws SQLException {
    StringBuilder phases = new StringBuilder();
    for (Phase p : Phase.values()) {
      phases.append(", sum(").append(p.meanUsField()).append(" * calls) AS ").append(p.fieldName());
    }
    String sql =
        "CREATE OR REPLACE TEMP TABLE report_rank_buckets AS SELECT "
            + KEY
            + " AS k, rank, "
            + bucket("window_start")
            + " AS t, median(p50_us) AS p50, max(p99_us) AS p99, sum(calls) AS calls"
            + phases
            + " FROM rank_windows WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + " GROUP BY ALL";
    try (Statement st = db.createStatement()) {
      st.execute(sql);
    }
  }

  /** The ranks the findings named in most windows (SLOW_RANK and both ends of a SLOW_LINK). */
  private Map<String, List<Integer>> featuredRanks(List<String> keys) throws SQLException {
    Map<String, List<Integer>> out = new HashMap<>();
    String sql =
        "SELECT k, r FROM (SELECT k, r, row_number() OVER (PARTITION BY k ORDER BY count(*) DESC,"
            + " r) AS i FROM (SELECT "
            + KEY
            + " AS k, unnest(CASE f.kind WHEN 'SLOW_RANK' THEN [f.rank]"
            + " WHEN 'SLOW_LINK' THEN [f.from_rank, f.rank] ELSE [] END) AS r"
            + " FROM (SELECT *, unnest(findings) AS f FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + ")) GROUP BY k, r) WHERE i <= "
            + FEATURED_RANKS
            + " ORDER BY k, i";
    query(sql, r -> out.computeIfAbsent(r.getString(1), k -> new ArrayList<>()).add(r.getInt(2)));
    return out;
  }

  /** The collective's cost and its baseline per bucket. */
  private record AttributionBuckets(Map<Long, Double> collective, Map<Long, Double> baseline) {}

  private Map<String, AttributionBuckets> attributionBuckets(List<String> keys)
      throws SQLException {
    Map<String, AttributionBuckets> out = new HashMap<>();
    String sql =
        "SELECT "
            + KEY
            + " AS k, "
            + bucket("window_start")
            + " AS t, round(median(collective_us), 2),"
            + " round(median(baseline_us) FILTER (WHERE baseline_us > 0), 2)"
            + " FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + " GROUP BY ALL";
    query(
        sql,
        r -> {
          AttributionBuckets a =
              out.computeIfAbsent(
                  r.getString(1), k -> new AttributionBuckets(new HashMap<>(), new HashMap<>()));
          a.collective.put(r.getLong(2), doubleOrNull(r, 3));
          a.baseline.put(r.getLong(2), doubleOrNull(r, 4));
        });
    return out;
  }

  private Latency latency(String key, List<Integer> featured, AttributionBuckets attributed)
      throws SQLException {
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
    if (attributed != null) {
      for (int i = 0; i < t.size(); i++) {
        collective[i] = attributed.collective.get(t.get(i));
        baseline[i] = attributed.baseline.get(t.get(i));
      }
    }
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
   * --alert-min-effect}, 5 %), the smallest change it ever calls SLOWER or FASTER.
   */
  static final double BAND_REL = 0.05;

  private RankHeatmap p99ByRank(String key, int worldSize, int block) throws SQLException {
    List<double[]> cells = new ArrayList<>();
    query(
        "SELECT t, rank // "
            + block
            + " AS row, round(max(p99), 2) FROM report_rank_buckets WHERE k = "
            + literal(key)
            + " GROUP BY ALL ORDER BY t, row",
        r -> cells.add(new double[] {r.getLong(1), r.getInt(2), r.getDouble(3)}));
    return new RankHeatmap(block, rankLabels(worldSize, block), cells);
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
            + " FROM (SELECT "
            + KEY
            + " AS k, "
            + bucket("window_start")
            + " AS t, f.kind AS kind, "
            + FINDING_LABEL
            + " AS label, f.excess_wait_us AS excess, f.cause AS cause"
            + " FROM (SELECT *, unnest(findings) AS f FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + ")) GROUP BY k, t, kind, label ORDER BY k, kind, label, t";
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

  /**
   * The delay matrices of each communicator's worst windows (largest finding excess; without
   * findings, the largest wait), blocks of ranks taking their largest cell. Rows are waiting ranks,
   * columns peers; lateness where the window has it, per-peer wait otherwise.
   */
  private Map<String, List<DelayMatrix>> matrices(List<Summary> detailed) throws SQLException {
    List<String> keys = detailed.stream().map(s -> s.key).toList();
    Map<String, Integer> worldSizes =
        detailed.stream().collect(Collectors.toMap(s -> s.key, s -> s.worldSize));
    record Window(String key, long start, long end, String verdict, String findings) {}
    List<Window> windows = new ArrayList<>();
    String pick =
        "SELECT k, s, e, verdict, f FROM (SELECT "
            + KEY
            + " AS k, epoch_ms(window_start) AS s, epoch_ms(window_end) AS e, verdict,"
            + " array_to_string(list_transform(findings, f -> f.kind || '(' || CASE f.kind"
            + " WHEN 'SLOW_LINK' THEN f.from_rank || '->' || f.rank ELSE f.rank::VARCHAR END"
            + " || ',' || f.cause || ', ' || round(f.excess_wait_us, 1) || ' µs)'), ' ') AS f,"
            + " row_number() OVER (PARTITION BY k ORDER BY coalesce(list_max(list_transform("
            + "findings, f -> f.excess_wait_us)), -1) DESC, max_wait_mean_us DESC,"
            + " window_start DESC) AS i FROM attributions WHERE "
            + inRange("window_start")
            + " AND "
            + oneOf(keys)
            + ") WHERE i <= "
            + MATRIX_WINDOWS
            + " ORDER BY k, i";
    query(
        pick,
        r ->
            windows.add(
                new Window(
                    r.getString(1), r.getLong(2), r.getLong(3), r.getString(4), r.getString(5))));
    Map<String, List<DelayMatrix>> out = new HashMap<>();
    if (windows.isEmpty()) return out;
    // One query for all of them: the cells of the chosen (communicator, window) rows.
    String chosen =
        windows.stream()
            .map(w -> "(" + literal(w.key) + ", " + w.start + ")")
            .collect(Collectors.joining(", "));
    String starts =
        windows.stream()
            .map(w -> "epoch_ms(" + w.start + ")")
            .distinct()
            .collect(Collectors.joining(", "));
    String blocks =
        keys.stream()
            .map(k -> "(" + literal(k) + ", " + blockOf(worldSizes.get(k), MAX_RANK_ROWS) + ")")
            .collect(Collectors.joining(", "));
    String sql =
        "WITH rw AS (SELECT "
            + KEY
            + " AS k, epoch_ms(window_start) AS s, rank, CASE WHEN len(peer_late_mean_us) > 0"
            + " THEN peer_late_mean_us ELSE peer_wait_mean_us END AS m,"
            + " len(peer_late_mean_us) > 0 AS late FROM rank_windows WHERE window_start IN ("
            + starts
            + ") AND "
            + oneOf(keys)
            + "), cells AS (SELECT k, s, rank, late, unnest(m) AS v, generate_subscripts(m, 1) - 1"
            + " AS p FROM rw JOIN (VALUES "
            + chosen
            + ") AS c(ck, cs) ON k = ck AND s = cs)"
            + " SELECT k, s, bool_or(late), rank // b AS y, p // b AS x, round(max(v), 2)"
            + " FROM cells JOIN (VALUES "
            + blocks
            + ") AS bl(bk, b) ON k = bk WHERE rank <> p OR b > 1 GROUP BY k, s, y, x";
    Map<String, List<double[]>> cells = new HashMap<>();
    Map<String, Boolean> lateness = new HashMap<>();
    query(
        sql,
        r -> {
          String id = r.getString(1) + "@" + r.getLong(2);
          cells
              .computeIfAbsent(id, x -> new ArrayList<>())
              .add(new double[] {r.getInt(5), r.getInt(4), r.getDouble(6)});
          lateness.merge(id, r.getBoolean(3), Boolean::logicalOr);
        });
    for (Window w : windows) {
      String id = w.key + "@" + w.start;
      List<double[]> c = cells.getOrDefault(id, List.of());
      int ws = worldSizes.get(w.key);
      int block = blockOf(ws, MAX_RANK_ROWS);
      double max = c.stream().mapToDouble(x -> x[2]).max().orElse(0);
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

  // ---- JDBC helpers ---------------------------------------------------------------------------

  private interface RowHandler {
    void row(ResultSet r) throws SQLException;
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
