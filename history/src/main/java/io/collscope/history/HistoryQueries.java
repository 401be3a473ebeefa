package io.collscope.history;

import io.collscope.avro.Classification;
import io.collscope.flink.alert.RegressionRule;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The canned questions of {@code collscope history}, each one query over a {@link HistoryDb}: who
 * was blamed ({@link #culprits}), what a communicator's collectives took window by window ({@link
 * #latency}), and whether a communicator got slower from one period to another ({@link #compare}).
 */
public final class HistoryQueries {

  private HistoryQueries() {}

  /**
   * Every culprit the attribution named in {@code range}, per communicator: its kind and rank (or
   * link {@code from->to}; {@code all} for a uniform slowdown), the commonest cause, in how many
   * windows and in what share of the communicator's windows, when first and last, its mean excess
   * wait, and what it cost: the excess per collective × the collectives of the window × the ranks
   * that waited (every other present rank for a slow or silent rank, the receiver for a link, every
   * rank for a slowdown), in rank-seconds. Most costly first.
   */
  public static Table culprits(HistoryDb db, TimeRange range, int limit) throws SQLException {
    // Two reads: the findings table (a row per culprit per window: few) for what was blamed, and
    // the attributions' window counts per communicator for the share. Reading the culprits out of
    // the attributions instead decodes every window's findings and phase table: over a 1,024-rank
    // week, 3.3 s against 1.9 s for the whole command (docs/BENCHMARKS.md, "History").
    String sql =
        """
        WITH blamed AS (
          SELECT * FROM findings WHERE %1$s
        ), totals AS (
          -- only the blamed communicators' windows are counted: the semi join's keys reach the
          -- scan, and far fewer rows are grouped
          SELECT a.cluster, a.job, a.communicator, count(*) AS all_windows
          FROM attributions a
          SEMI JOIN (SELECT DISTINCT cluster, job, communicator FROM blamed) k
            ON a.cluster = k.cluster AND a.job = k.job AND a.communicator = k.communicator
          WHERE %1$s GROUP BY a.cluster, a.job, a.communicator
        )
        SELECT b.cluster, b.job, b.communicator,
               b.kind AS kind,
               CASE b.kind
                 WHEN 'SLOW_LINK' THEN b.from_rank || '->' || b.rank
                 WHEN 'SLOW_NODE' THEN 'node ' || coalesce(b.node, '?')
                 WHEN 'UNIFORM_SLOWDOWN' THEN 'all'
                 ELSE CAST(b.rank AS VARCHAR) END AS culprit,
               mode(b.cause) AS cause,
               count(*) AS windows,
               round(100.0 * count(*) / any_value(t.all_windows), 1) AS pct_windows,
               min(b.window_end) AS first_seen,
               max(b.window_end) AS last_seen,
               round(avg(b.excess_wait_us), 1) AS mean_excess_us,
               round(sum(b.excess_wait_us * b.calls * CASE b.kind
                   WHEN 'SLOW_LINK' THEN 1
                   WHEN 'UNIFORM_SLOWDOWN' THEN b.present_ranks
                   ELSE greatest(b.present_ranks - 1, 1) END) / 1e6, 2) AS wait_cost_rank_s
        FROM blamed b JOIN totals t
          ON b.cluster = t.cluster AND b.job = t.job AND b.communicator = t.communicator
        GROUP BY b.cluster, b.job, b.communicator, kind, culprit
        ORDER BY wait_cost_rank_s DESC, windows DESC, b.communicator, culprit
        LIMIT %2$d
        """
            .formatted(range.where("window_end"), limit);
    try (PreparedStatement s = db.connection().prepareStatement(sql);
        ResultSet rs = s.executeQuery()) {
      return Table.of(rs);
    }
  }

  /** How {@link #latency} groups a communicator's rank windows. */
  public enum LatencyBy {
    /** One row per window and rank: that rank's p50 and p99. */
    RANK,
    /** One row per window: the median of the ranks' p50 and the largest p99 (the slowest rank). */
    COMMUNICATOR
  }

  /**
   * Window by window, the whole-collective latency of one communicator ({@code name}, or {@code
   * cluster/job/name}) in {@code range}: p50 and p99 (the upper edges of their factor-of-two
   * histogram buckets), with the mean wait and the calls.
   */
  public static Table latency(HistoryDb db, String communicator, LatencyBy by, TimeRange range)
      throws SQLException {
    Scope scope = Scope.of(communicator);
    String sql =
        switch (by) {
          case RANK ->
              """
              SELECT window_end, rank, p50_us, p99_us, round(wait_mean_us, 1) AS wait_mean_us,
                     calls
              FROM rank_windows WHERE %s AND %s
              ORDER BY window_end, rank
              """
                  .formatted(range.where("window_end"), scope.where());
          case COMMUNICATOR ->
              """
              SELECT window_end, count(*) AS ranks, median(p50_us) AS p50_us,
                     max(p99_us) AS p99_us, arg_max(rank, p99_us) AS p99_rank,
                     round(max(wait_mean_us), 1) AS max_wait_us
              FROM rank_windows WHERE %s AND %s
              GROUP BY window_end ORDER BY window_end
              """
                  .formatted(range.where("window_end"), scope.where());
        };
    try (PreparedStatement s = db.connection().prepareStatement(sql)) {
      scope.bind(s, 1);
      try (ResultSet rs = s.executeQuery()) {
        return Table.of(rs);
      }
    }
  }

  /**
   * The alerts' regression rule ({@link RegressionRule}: what {@code collscope demo} alerts on)
   * applied to two periods instead of a baseline and one window: per communicator and message size,
   * the collective's cost in each window of {@code before} is the baseline (its median and median
   * absolute deviation), and the median cost over the windows of {@code after} is compared with it.
   * FASTER / PARITY / SLOWER as the rule says; INCONCLUSIVE where either period has fewer windows
   * than the rule needs, the ranks measured too few collectives (their sample, as the alerts count
   * it: {@code sampled_calls}, the calls in history written before it), or the baseline is too
   * noisy. Regressions first.
   */
  public static Table compare(
      HistoryDb db, TimeRange before, TimeRange after, String communicator, RegressionRule rule)
      throws SQLException {
    Scope scope = communicator == null ? Scope.ALL : Scope.of(communicator);
    String sql =
        """
        WITH w AS (
          SELECT cluster, job, communicator, bytes_per_call, collective_us,
                 list_min(list_transform(ranks, r -> coalesce(r.sampled_calls, r.calls)))
                   AS min_calls,
                 CASE WHEN %s THEN 'before' ELSE 'after' END AS period
          FROM attributions
          WHERE (%s OR %s) AND collective_us > 0 AND %s
        )
        SELECT cluster, job, communicator, bytes_per_call, period, count(*) AS windows,
               median(collective_us) AS median_us, mad(collective_us) AS mad_us,
               median(min_calls) AS calls
        FROM w GROUP BY ALL
        ORDER BY cluster, job, communicator, bytes_per_call, period
        """
            .formatted(
                before.where("window_end"),
                before.where("window_end"),
                after.where("window_end"),
                scope.where());
    Map<List<Object>, Map<String, double[]>> groups = new java.util.LinkedHashMap<>();
    try (PreparedStatement s = db.connection().prepareStatement(sql)) {
      scope.bind(s, 1);
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          List<Object> key =
              List.of(
                  rs.getString("cluster"),
                  rs.getString("job"),
                  rs.getString("communicator"),
                  rs.getLong("bytes_per_call"));
          groups
              .computeIfAbsent(key, k -> new HashMap<>())
              .put(
                  rs.getString("period"),
                  new double[] {
                    rs.getLong("windows"),
                    rs.getDouble("median_us"),
                    rs.getDouble("mad_us"),
                    rs.getDouble("calls")
                  });
        }
      }
    }
    List<List<Object>> rows = new ArrayList<>();
    for (Map.Entry<List<Object>, Map<String, double[]>> g : groups.entrySet()) {
      double[] b = g.getValue().get("before");
      double[] a = g.getValue().get("after");
      List<Object> k = g.getKey();
      long bytes = (Long) k.get(3);
      Classification c;
      Double band = null;
      if (b == null || a == null || a[0] < rule.minWindows()) {
        c = Classification.INCONCLUSIVE;
      } else {
        WindowBaseline baseline = baselineOf(bytes, b);
        c = rule.classify(a[1], (long) a[3], baseline);
        band = round(rule.band(baseline));
      }
      List<Object> row = new ArrayList<>();
      row.add(k.get(0));
      row.add(k.get(1));
      row.add(k.get(2));
      row.add(RegressionRule.sizeBucket(bytes));
      row.add(b == null ? 0L : (long) b[0]);
      row.add(b == null ? null : round(b[1]));
      row.add(a == null ? 0L : (long) a[0]);
      row.add(a == null ? null : round(a[1]));
      row.add(a == null || b == null || b[1] == 0 ? null : round(100 * (a[1] - b[1]) / b[1]));
      row.add(band);
      row.add(c.name());
      rows.add(row);
    }
    rows.sort(
        Comparator.<List<Object>>comparingInt(
                r -> order(Classification.valueOf((String) r.get(10))))
            .thenComparing(
                r -> r.get(8) == null ? 0 : -Math.abs((Double) r.get(8)),
                Comparator.naturalOrder()));
    return new Table(
        List.of(
            "cluster",
            "job",
            "communicator",
            "size",
            "before_windows",
            "before_median_us",
            "after_windows",
            "after_median_us",
            "change_pct",
            "band_us",
            "classification"),
        rows);
  }

  /**
   * A baseline with the period's median and median absolute deviation over as many windows (the
   * rule looks at nothing else), without holding every window.
   */
  static WindowBaseline baselineOf(long bytesPerCall, double[] period) {
    int windows = (int) Math.min(period[0], 1 << 16);
    return WindowBaseline.seeded(windows, bytesPerCall, period[1], period[2], windows);
  }

  private static int order(Classification c) {
    return switch (c) {
      case SLOWER -> 0;
      case FASTER -> 1;
      case INCONCLUSIVE -> 2;
      case PARITY -> 3;
      default -> 4;
    };
  }

  private static double round(double v) {
    return Math.rint(v * 10) / 10;
  }

  /** A communicator named alone, or as {@code cluster/job/communicator}. */
  record Scope(String cluster, String job, String communicator) {
    static final Scope ALL = new Scope(null, null, null);

    static Scope of(String s) {
      String[] parts = s.split("/", -1);
      if (parts.length == 1 && !s.isBlank()) return new Scope(null, null, s);
      if (parts.length == 3 && !parts[2].isEmpty()) {
        CommunicatorKey k = new CommunicatorKey(parts[0], parts[1], parts[2]);
        return new Scope(k.cluster(), k.job(), k.communicator());
      }
      throw new IllegalArgumentException(
          "--communicator '" + s + "' is neither NAME nor CLUSTER/JOB/NAME");
    }

    String where() {
      if (communicator == null) return "true";
      return cluster == null ? "communicator = ?" : "cluster = ? AND job = ? AND communicator = ?";
    }

    void bind(PreparedStatement s, int first) throws SQLException {
      if (communicator == null) return;
      int i = first;
      if (cluster != null) {
        s.setString(i++, cluster);
        s.setString(i++, job);
      }
      s.setString(i, communicator);
    }
  }
}
