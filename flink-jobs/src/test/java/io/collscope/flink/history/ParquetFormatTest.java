package io.collscope.flink.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.AlertState;
import io.collscope.avro.RankWindow;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.io.LocalOutputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A file of each table as the sinks write it, read back by DuckDB without collscope code. */
class ParquetFormatTest {

  @TempDir Path dir;

  private static final Instant END = Instant.parse("2026-11-30T07:00:10Z");

  @Test
  void columnsAreTheAvroFieldsWithTheirTypes() throws Exception {
    Path f = write(RankWindow.class, List.of(HistoryRecords.rankWindow("c", 1, END)));
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      List<String> columns = new ArrayList<>();
      try (ResultSet r = s.executeQuery("DESCRIBE SELECT * FROM read_parquet('" + f + "')")) {
        while (r.next()) columns.add(r.getString(1) + " " + r.getString(2));
      }
      assertThat(columns)
          .contains(
              "cluster VARCHAR",
              "job VARCHAR",
              "communicator VARCHAR",
              "rank INTEGER",
              "window_end TIMESTAMP WITH TIME ZONE",
              "calls BIGINT",
              "wait_mean_us DOUBLE",
              "peer_late_mean_us DOUBLE[]",
              "peer_arrived_last BIGINT[]");
      try (ResultSet r =
          s.executeQuery(
              "SELECT communicator, rank, wait_mean_us, peer_late_mean_us[2],"
                  + " epoch_ms(window_end) FROM read_parquet('"
                  + f
                  + "')")) {
        assertThat(r.next()).isTrue();
        assertThat(r.getString(1)).isEqualTo("c");
        assertThat(r.getInt(2)).isEqualTo(1);
        assertThat(r.getDouble(3)).isEqualTo(5.0);
        assertThat(r.getDouble(4)).isEqualTo(4.5);
        assertThat(r.getLong(5)).isEqualTo(END.toEpochMilli());
      }
      try (ResultSet r =
          s.executeQuery(
              "SELECT compression FROM parquet_metadata('" + f + "') WHERE column_id = 0")) {
        assertThat(r.next()).isTrue();
        assertThat(r.getString(1)).isEqualTo("ZSTD");
      }
    }
  }

  @Test
  void nestedRecordsEnumsMapsAndNullableTimesReadAsSqlTypes() throws Exception {
    Path attributions =
        write(
            io.collscope.avro.Attribution.class, List.of(HistoryRecords.attribution("c", END, 1)));
    Path alerts =
        write(
            io.collscope.avro.Alert.class,
            List.of(HistoryRecords.alert("c", AlertState.FIRING, END, null)));
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
        Statement s = c.createStatement()) {
      try (ResultSet r =
          s.executeQuery(
              "SELECT verdict, findings[1].kind, findings[1].rank, findings[1].cause,"
                  + " ranks[2].wait_mean_us, len(missing_ranks) FROM read_parquet('"
                  + attributions
                  + "')")) {
        assertThat(r.next()).isTrue();
        assertThat(r.getString(1)).isEqualTo("SLOW_RANK");
        assertThat(r.getString(2)).isEqualTo("SLOW_RANK");
        assertThat(r.getInt(3)).isEqualTo(1);
        assertThat(r.getString(4)).isEqualTo("ARRIVED_LATE");
        assertThat(r.getDouble(5)).isEqualTo(5.0);
        assertThat(r.getInt(6)).isZero();
      }
      try (ResultSet r =
          s.executeQuery(
              "SELECT state, labels['rank'], ends_at IS NULL FROM read_parquet('"
                  + alerts
                  + "')")) {
        assertThat(r.next()).isTrue();
        assertThat(r.getString(1)).isEqualTo("FIRING");
        assertThat(r.getString(2)).isEqualTo("1");
        assertThat(r.getBoolean(3)).isTrue();
      }
    }
  }

  private <T extends SpecificRecordBase> Path write(Class<T> type, List<T> records)
      throws Exception {
    Path f = dir.resolve(type.getSimpleName() + ".parquet");
    try (ParquetWriter<T> w = ParquetFormat.writer(type, new LocalOutputFile(f))) {
      for (T r : records) w.write(r);
    }
    return f;
  }
}
