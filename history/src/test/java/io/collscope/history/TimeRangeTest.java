package io.collscope.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TimeRangeTest {

  private static final Instant NOW = Instant.parse("2026-11-30T06:00:00Z");

  @Test
  void parsesInstantsDatesAndTimesBeforeNow() {
    assertThat(TimeRange.instant("2026-11-29T10:15:00Z", NOW))
        .isEqualTo(Instant.parse("2026-11-29T10:15:00Z"));
    assertThat(TimeRange.instant("2026-11-29T10:15", NOW))
        .isEqualTo(Instant.parse("2026-11-29T10:15:00Z"));
    assertThat(TimeRange.instant("2026-11-29", NOW))
        .isEqualTo(Instant.parse("2026-11-29T00:00:00Z"));
    assertThat(TimeRange.instant("-36h", NOW)).isEqualTo(Instant.parse("2026-11-28T18:00:00Z"));
    assertThat(TimeRange.parse("-2d/now", NOW))
        .isEqualTo(new TimeRange(Instant.parse("2026-11-28T06:00:00Z"), NOW));
    assertThat(TimeRange.parse("2026-11-29", NOW))
        .isEqualTo(
            new TimeRange(
                Instant.parse("2026-11-29T00:00:00Z"), Instant.parse("2026-11-30T00:00:00Z")));
    assertThat(TimeRange.durationOf("2w")).isEqualTo(Duration.ofDays(14));
  }

  @Test
  void rejectsWhatIsNotARange() {
    assertThatThrownBy(() -> TimeRange.parse("yesterday", NOW)).hasMessageContaining("not a range");
    assertThatThrownBy(() -> TimeRange.parse("-1h/-2h", NOW)).hasMessageContaining("not after");
    assertThatThrownBy(() -> TimeRange.durationOf("7x")).hasMessageContaining("not a duration");
  }

  @Test
  void selectsExactlyTheWindowsEndingInTheRangeAcrossMidnight(@TempDir Path dir) throws Exception {
    Instant end = Instant.parse("2026-11-30T01:00:00Z");
    HistoryFixtures.generate(dir, 16, Duration.ofHours(2), end);
    // 23:59:50 .. 00:00:30 end-exclusive: windows ending 23:59:50, 00:00:00, 00:00:10, 00:00:20.
    TimeRange r =
        new TimeRange(Instant.parse("2026-11-29T23:59:50Z"), Instant.parse("2026-11-30T00:00:30Z"));
    try (HistoryDb db = HistoryDb.open(dir)) {
      assertThat(
              HistoryDbTest.count(
                  db,
                  "SELECT count(DISTINCT window_end) FROM attributions WHERE "
                      + r.where("window_end")))
          .isEqualTo(4);
      assertThat(
              HistoryDbTest.count(
                  db,
                  "SELECT count(*) FROM attributions WHERE "
                      + TimeRange.since(Duration.ofHours(1), end).where("window_end")))
          .isEqualTo(2 * 361); // 00:00:00 through 01:00:00
    }
  }
}
