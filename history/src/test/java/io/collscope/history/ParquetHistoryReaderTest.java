package io.collscope.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.flink.alert.AlertFunction;
import io.collscope.flink.alert.BaselineFile;
import io.collscope.flink.history.HistoryLayout;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ParquetHistoryReaderTest {

  private static final Instant END = Instant.parse("2026-11-30T06:00:00Z");

  @TempDir Path base;

  @Test
  void readsTheJobsRecordsBackWithinATimeRangeAsDuckDbCountsThem() throws Exception {
    HistoryFixtures.generate(base, 32, Duration.ofHours(3), END);
    TimeRange lastHour = new TimeRange(END.minus(Duration.ofHours(1)), END);
    List<Attribution> read =
        ParquetHistoryReader.read(
            base,
            HistoryLayout.ATTRIBUTIONS,
            Attribution.class,
            lastHour,
            HistoryLayout::eventTime);
    long duck;
    try (HistoryDb db = HistoryDb.open(base);
        ResultSet rs =
            db.connection()
                .createStatement()
                .executeQuery(
                    "SELECT count(*) FROM attributions WHERE " + lastHour.where("window_end"))) {
      rs.next();
      duck = rs.getLong(1);
    }
    assertThat(read).hasSize((int) duck).isNotEmpty();
    assertThat(read).allSatisfy(a -> assertThat(lastHour.contains(a.getWindowEnd())).isTrue());
    assertThat(read.get(0).getRanks()).as("nested records come back").isNotEmpty();

    // ... and the job's own rule learns baselines from them, pooled per class too.
    List<BaselineFile.Row> rows = BaselineFile.learn(read, AlertFunction.BASELINE_WINDOWS);
    assertThat(rows).filteredOn(r -> !r.pooled()).hasSize(32 / 8);
    assertThat(rows).filteredOn(BaselineFile.Row::pooled).isNotEmpty();
  }

  @Test
  void partitionsOutsideTheRangeAreSkipped() {
    TimeRange r = new TimeRange(Instant.parse("2026-11-30T05:30:00Z"), END);
    assertThat(ParquetHistoryReader.inRange("dt=2026-11-30/hour=05", r)).isTrue();
    assertThat(ParquetHistoryReader.inRange("dt=2026-11-30/hour=04", r)).isFalse();
    assertThat(ParquetHistoryReader.inRange("dt=2026-11-30/hour=06", r)).isFalse();
    assertThat(ParquetHistoryReader.inRange("dt=2026-11-29/hour=23", r)).isFalse();
  }
}
