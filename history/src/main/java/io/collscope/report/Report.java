package io.collscope.report;

import java.util.List;
import java.util.Map;

/**
 * Everything one HTML report shows, already aggregated: the page's script draws it as it is. It is
 * serialised to JSON (record component names are the keys), so every series is short: times are
 * bucketed ({@link #bucketMs()}) and ranks of large communicators grouped into blocks.
 *
 * <p>Times are epoch milliseconds. {@code null} in a series is "no data in that bucket".
 */
public record Report(
    String history,
    String generatedAt,
    long sinceMs,
    long untilMs,
    String communicatorFilter,
    long bucketMs,
    Totals totals,
    List<CommunicatorSummary> communicators,
    int communicatorsNotListed,
    Overview overview,
    List<AlertEpisode> alerts,
    int alertsNotListed,
    List<Detail> details) {

  /** Counts over the whole range, every matching communicator. */
  public record Totals(
      int communicators, long rankWindows, long windows, long findingWindows, int alerts) {}

  /**
   * One communicator's line of the summary table. {@code topCulprit} is the finding named in most
   * windows, e.g. {@code SLOW_RANK 5}; {@code detailed} says whether it has a detail section.
   */
  public record CommunicatorSummary(
      String key,
      int worldSize,
      long windows,
      long findingWindows,
      int alerts,
      int alertsFiring,
      String topCulprit,
      long topCulpritWindows,
      Double maxWaitUs,
      Double maxExcessUs,
      boolean detailed) {}

  /**
   * Windows with findings per time bucket for the communicators of the summary's top: {@code cells}
   * are {@code [bucket start ms, communicator index, windows with findings]}.
   */
  public record Overview(List<String> communicators, List<long[]> cells) {}

  /**
   * One alert from FIRING to RESOLVED ({@code endMs} null while it still fires at the range's end).
   * {@code subject} is the rank, link or size bucket the alert is about.
   */
  public record AlertEpisode(
      String communicator,
      String kind,
      String subject,
      String severity,
      long startMs,
      Long endMs,
      String message) {}

  /** One communicator's charts. */
  public record Detail(
      String key,
      int worldSize,
      Latency latency,
      RankHeatmap p99ByRank,
      Phases phases,
      Culprits culprits,
      List<DelayMatrix> matrices,
      List<AlertEpisode> alerts) {}

  /**
   * Latency per time bucket: the median over ranks of their p50, the largest p99 and the rank that
   * had it, the collective's own cost and its baseline (from the attributions), and the p50/p99 of
   * the ranks the findings named most ({@code ranks}). {@code bandRel} is the relative half-width
   * of the baseline band drawn around the baseline (the alert rule's minimum effect).
   */
  public record Latency(
      long[] t,
      Double[] p50Median,
      Double[] p99Max,
      Integer[] p99MaxRank,
      Double[] collective,
      Double[] baseline,
      double bandRel,
      List<RankSeries> ranks) {}

  /** One rank's p50 and p99 per bucket, aligned with {@link Latency#t()}. */
  public record RankSeries(int rank, Double[] p50, Double[] p99) {}

  /**
   * The largest p99 per (rank block, time bucket), dense and row-major: {@code values[row * buckets
   * + i]} for the i-th bucket from {@code firstBucketMs} (null: no data); {@code block} ranks per
   * row (1 up to {@link ReportQuery#MAX_RANK_ROWS} ranks).
   */
  public record RankHeatmap(
      int block, List<String> rows, long firstBucketMs, int buckets, Double[] values) {}

  /**
   * Mean µs per collective of each phase per rank over the range (weighted by calls), in the order
   * of {@code io.collscope.model.Phase}; {@code block} ranks per bar.
   */
  public record Phases(int block, List<String> ranks, Map<String, double[]> phaseUs) {}

  /**
   * The findings over time: {@code points} are {@code [bucket start ms, label index, windows, max
   * excess µs, kind index]}, labels such as {@code rank 5} or {@code link 3→6}.
   */
  public record Culprits(
      List<String> kinds, List<String> labels, List<String> causes, List<double[]> points) {}

  /**
   * The delay matrix of one window, dense and row-major: {@code values[row * size + column]} µs,
   * rows waiting ranks, columns peers (null: the diagonal, or no data), {@code block} ranks per row
   * and column; {@code unit} is {@code lateness} (the attribution's L[r][p]) or {@code wait}
   * (windows of emitters without lateness counters).
   */
  public record DelayMatrix(
      long windowStartMs,
      long windowEndMs,
      String verdict,
      String findings,
      String unit,
      int block,
      int size,
      double maxUs,
      Double[] values) {}
}
