package io.collscope.report;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How the report keeps what it ships small: time buckets and rank blocks. */
class ReportQueryTest {

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
