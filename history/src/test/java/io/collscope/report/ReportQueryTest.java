package io.collscope.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.history.HistoryDb;
import io.collscope.history.HistoryFixtures;
import io.collscope.load.HistoryGenerator;
import io.collscope.report.Report.CommunicatorSummary;
import io.collscope.report.Report.DelayMatrix;
import io.collscope.report.Report.Detail;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the report aggregates, over six hours of a generated 32-rank cluster (communicators
 * tp000..tp003) whose episodes give known answers: rank 5 of tp003 slow from 20 % to 24 % of the
 * span (it alerts), rank 1 of tp003 slow in a tenth of all windows, link 3->6 of tp001 (alerts), a
 * silent rank 2 of tp000 (alerts); and how it keeps what it ships small: buckets and rank blocks.
 */
class ReportQueryTest {

  static final Instant END = Instant.parse("2026-11-30T06:00:00Z");
  static final Duration SPAN = Duration.ofHours(6);

  @TempDir static Path history;
  static HistoryGenerator.Summary generated;
  static Report all;

  @BeforeAll
  static void generateAndReport() throws Exception {
    generated = HistoryFixtures.generate(history, 32, SPAN, END);
    all = report(null, 6);
  }

  static Report report(String communicator, int top) throws Exception {
    try (HistoryDb db = HistoryDb.open(history)) {
      return ReportQuery.run(
          db, new ReportQuery.Options(END.minus(SPAN), END, communicator, top), END);
    }
  }

  static Detail detail(Report r, String key) {
    return r.details().stream().filter(d -> d.key().equals(key)).findFirst().orElseThrow();
  }

  @Test
  void communicatorsWithAlertsComeFirstEveryOneIsListed() {
    assertThat(all.totals().communicators()).isEqualTo(4);
    assertThat(all.totals().rankWindows()).isEqualTo(generated.rankWindows());
    assertThat(all.totals().windows()).isEqualTo(generated.attributions());
    List<CommunicatorSummary> rows = all.communicators();
    assertThat(rows).extracting(CommunicatorSummary::key).doesNotHaveDuplicates().hasSize(4);
    assertThat(rows).isSortedAccordingTo(Comparator.comparingInt(c -> -c.alerts()));
    assertThat(rows.get(0).alerts()).isPositive();
    CommunicatorSummary tp003 =
        rows.stream().filter(c -> c.key().equals("gen/train/tp003")).findFirst().orElseThrow();
    // the flaky rank is named in more windows than the six-hour episode of rank 5
    assertThat(tp003.topCulprit()).isEqualTo("rank 1");
    assertThat(tp003.findingWindows()).isGreaterThan(tp003.topCulpritWindows());
  }

  @Test
  void theDelayMatrixOfTheStrongestWindowShowsTheSlowRanksColumn() {
    DelayMatrix m = detail(all, "gen/train/tp003").matrices().get(0);
    assertThat(m.findings()).startsWith("SLOW_RANK(5,");
    assertThat(m.unit()).isEqualTo("lateness");
    assertThat(m.block()).isEqualTo(1);
    assertThat(m.size()).isEqualTo(8);
    assertThat(m.values()).hasSize(64);
    // every waiting row's largest cell is column 5, except rank 5's own row
    for (int row = 0; row < 8; row++) {
      assertThat(m.values()[row * 8 + row]).as("diagonal").isNull();
      if (row == 5) continue;
      int hottest = -1;
      for (int col = 0; col < 8; col++) {
        Double v = m.values()[row * 8 + col];
        if (v != null && (hottest < 0 || v > m.values()[row * 8 + hottest])) hottest = col;
      }
      assertThat(hottest).as("row %d", row).isEqualTo(5);
    }
  }

  @Test
  void theCulpritTimelineAndTheLatencyFeatureTheNamedRanks() {
    Detail d = detail(all, "gen/train/tp003");
    assertThat(d.culprits().labels()).contains("rank 5", "rank 1");
    assertThat(d.latency().ranks()).extracting(Report.RankSeries::rank).contains(5, 1);
    assertThat(d.alerts()).extracting(Report.AlertEpisode::kind).contains("SLOW_RANK");
    Detail link = detail(all, "gen/train/tp001");
    assertThat(link.culprits().labels()).contains("link 3→6");
    // ten-second windows over six hours: one-minute buckets, at most MAX_BUCKETS of them
    assertThat(all.bucketMs()).isEqualTo(60_000);
    assertThat(d.latency().t()).hasSizeLessThanOrEqualTo(ReportQuery.MAX_BUCKETS);
    assertThat(d.p99ByRank().rows()).hasSize(8);
    assertThat(d.p99ByRank().values()).hasSize(8 * d.p99ByRank().buckets());
    assertThat(d.p99ByRank().buckets()).isEqualTo(360);
    assertThat(d.phases().phaseUs().get("wait")).hasSize(8);
  }

  @Test
  void theCommunicatorFilterReportsOnThatOneOnly() throws Exception {
    Report one = report("tp001", 6);
    assertThat(one.communicators())
        .extracting(CommunicatorSummary::key)
        .containsExactly("gen/train/tp001");
    assertThat(one.details()).extracting(Detail::key).containsExactly("gen/train/tp001");
    assertThat(one.alerts()).allMatch(a -> a.communicator().equals("gen/train/tp001"));
    Report none = report("gen/other/tp001", 6);
    assertThat(none.communicators()).isEmpty();
    assertThat(none.details()).isEmpty();
  }

  @Test
  void aDayIsCutIntoFiveMinuteBucketsAnHourIntoTenSecondOnes() {
    assertThat(ReportQuery.bucketMs(86_400_000)).isEqualTo(300_000);
    assertThat(ReportQuery.bucketMs(3_600_000)).isEqualTo(10_000);
    assertThat(ReportQuery.bucketMs(7L * 86_400_000)).isEqualTo(1_800_000);
    for (long span : new long[] {1_000, 59_000, 3_600_000, 86_400_000, 30L * 86_400_000}) {
      assertThat(span / ReportQuery.bucketMs(span)).isLessThanOrEqualTo(ReportQuery.MAX_BUCKETS);
    }
  }

  @Test
  void largeCommunicatorsGetBlocksOfRanksSmallOnesOneRowPerRank() {
    assertThat(ReportQuery.blockOf(8, ReportQuery.MAX_RANK_ROWS)).isEqualTo(1);
    assertThat(ReportQuery.blockOf(64, ReportQuery.MAX_RANK_ROWS)).isEqualTo(1);
    assertThat(ReportQuery.blockOf(65, ReportQuery.MAX_RANK_ROWS)).isEqualTo(2);
    assertThat(ReportQuery.blockOf(1024, ReportQuery.MAX_RANK_ROWS)).isEqualTo(16);
    assertThat(ReportQuery.rankLabels(8, 1))
        .containsExactly("0", "1", "2", "3", "4", "5", "6", "7");
    assertThat(ReportQuery.rankLabels(1024, 16))
        .hasSize(64)
        .startsWith("0–15")
        .endsWith("1008–1023");
    assertThat(ReportQuery.rankLabels(65, 2)).hasSize(33).endsWith("64");
  }
}
