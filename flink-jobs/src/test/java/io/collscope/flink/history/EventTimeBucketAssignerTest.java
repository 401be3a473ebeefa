package io.collscope.flink.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.RankWindow;
import java.time.Instant;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.junit.jupiter.api.Test;

class EventTimeBucketAssignerTest {

  private static final EventTimeBucketAssigner<RankWindow> WINDOWS =
      new EventTimeBucketAssigner<>(HistoryLayout::eventTime);
  private static final EventTimeBucketAssigner<Alert> ALERTS =
      new EventTimeBucketAssigner<>(HistoryLayout::eventTime);

  @Test
  void aWindowGoesToTheUtcHourOfItsEnd() {
    RankWindow w = HistoryRecords.rankWindow("c", 0, Instant.parse("2026-11-30T07:59:50Z"));
    assertThat(WINDOWS.getBucketId(w, null)).isEqualTo("dt=2026-11-30/hour=07");
  }

  @Test
  void aWindowEndingOnTheHourBelongsToTheNextHour() {
    // The end is exclusive, but it is the window's event time: 07:59:50..08:00:00 is at 08:00.
    RankWindow w = HistoryRecords.rankWindow("c", 0, Instant.parse("2026-11-30T08:00:00Z"));
    assertThat(WINDOWS.getBucketId(w, null)).isEqualTo("dt=2026-11-30/hour=08");
  }

  @Test
  void midnightStartsTheNextDate() {
    RankWindow w = HistoryRecords.rankWindow("c", 0, Instant.parse("2026-12-31T23:59:59.999Z"));
    RankWindow next = HistoryRecords.rankWindow("c", 0, Instant.parse("2027-01-01T00:00:00Z"));
    assertThat(WINDOWS.getBucketId(w, null)).isEqualTo("dt=2026-12-31/hour=23");
    assertThat(WINDOWS.getBucketId(next, null)).isEqualTo("dt=2027-01-01/hour=00");
  }

  @Test
  void theBucketIsTheRecordsTimeNotTheWritersClock() {
    RankWindow old = HistoryRecords.rankWindow("c", 0, Instant.parse("2020-02-29T13:00:10Z"));
    assertThat(WINDOWS.getBucketId(old, null)).isEqualTo("dt=2020-02-29/hour=13");
  }

  @Test
  void aFiringAlertGoesToWhenItStartedAResolvedOneToWhenItEnded() {
    Instant start = Instant.parse("2026-11-30T10:59:00Z");
    Instant end = Instant.parse("2026-11-30T12:00:30Z");
    assertThat(ALERTS.getBucketId(HistoryRecords.alert("c", AlertState.FIRING, start, null), null))
        .isEqualTo("dt=2026-11-30/hour=10");
    assertThat(ALERTS.getBucketId(HistoryRecords.alert("c", AlertState.RESOLVED, start, end), null))
        .isEqualTo("dt=2026-11-30/hour=12");
  }

  @Test
  void bucketIdsSurviveTheSinksStateSerializer() throws Exception {
    String id = "dt=2026-11-30/hour=07";
    byte[] bytes =
        SimpleVersionedSerialization.writeVersionAndSerialize(WINDOWS.getSerializer(), id);
    assertThat(
            SimpleVersionedSerialization.readVersionAndDeSerialize(WINDOWS.getSerializer(), bytes))
        .isEqualTo(id);
  }
}
