package io.collscope.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.history.HistoryLayout;
import io.collscope.load.HistoryGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.parquet.avro.AvroParquetWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.io.LocalOutputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistoryDbTest {

  @TempDir Path dir;

  private static final Instant END = Instant.parse("2026-11-30T06:00:00Z");

  @Test
  void aTableWithoutFilesIsAnEmptyViewWithTheColumnsAFileWouldHave() throws Exception {
    Path written = dir.resolve("written");
    HistoryFixtures.generate(written, 16, Duration.ofHours(1), END);
    Path empty = dir.resolve("nothing-yet");
    try (HistoryDb full = HistoryDb.open(written);
        HistoryDb none = HistoryDb.open(empty)) {
      for (String table : HistoryLayout.TABLES) {
        assertThat(describe(none, table)).as(table).isEqualTo(describe(full, table));
        assertThat(count(none, "SELECT count(*) FROM " + table)).isZero();
        assertThat(count(full, "SELECT count(*) FROM " + table)).as(table).isPositive();
      }
    }
  }

  @Test
  void inProgressFilesOfTheSinkAreNotRead() throws Exception {
    HistoryFixtures.generate(dir, 16, Duration.ofHours(1), END);
    long rows;
    try (HistoryDb db = HistoryDb.open(dir)) {
      rows = count(db, "SELECT count(*) FROM rank_windows");
    }
    // What FileSink leaves while it writes, and after a failure: hidden, not named *.parquet.
    Path partition =
        dir.resolve(HistoryLayout.RANK_WINDOWS)
            .resolve(HistoryLayout.partition(END.toEpochMilli() - 1));
    Path committed = Files.list(partition).findFirst().orElseThrow();
    Files.copy(committed, partition.resolve(".part-1234-0.parquet.inprogress.5678"));
    Files.write(partition.resolve(".part-1234-1.parquet.inprogress.9abc"), new byte[] {1, 2, 3});
    try (HistoryDb db = HistoryDb.open(dir)) {
      assertThat(count(db, "SELECT count(*) FROM rank_windows")).isEqualTo(rows);
    }
  }

  @Test
  void filesOfAnOlderSchemaReadWithNullsInTheColumnsTheyLack() throws Exception {
    HistoryFixtures.generate(dir, 16, Duration.ofHours(1), END);
    // A rank window as an emitter of schema version 2 made it: no per-peer lateness or tails.
    Schema current = io.collscope.avro.RankWindow.getClassSchema();
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : current.getFields()) {
      if (f.name().startsWith("peer_late")) continue;
      fields.add(new Schema.Field(f, f.schema()));
    }
    Schema older = Schema.createRecord("RankWindow", null, "io.collscope.avro", false, fields);
    GenericRecord r = new GenericData.Record(older);
    io.collscope.avro.RankWindow template =
        new HistoryGenerator(HistoryFixtures.config(16, Duration.ofHours(1), END))
            .window(0, END.toEpochMilli())
            .rankWindows()
            .get(0);
    for (Schema.Field f : fields) r.put(f.name(), template.get(f.name()));
    r.put("communicator", "old");
    Path partition = dir.resolve(HistoryLayout.RANK_WINDOWS).resolve("dt=2026-11-30/hour=05");
    try (ParquetWriter<GenericRecord> w =
        AvroParquetWriter.<GenericRecord>builder(
                new LocalOutputFile(partition.resolve("part-old-0.parquet")))
            .withSchema(older)
            .withDataModel(withTimeConversions())
            .build()) {
      w.write(r);
    }
    try (HistoryDb db = HistoryDb.open(dir)) {
      assertThat(
              count(
                  db,
                  "SELECT count(*) FROM rank_windows WHERE communicator = 'old'"
                      + " AND peer_late_mean_us IS NULL AND wait_mean_us > 0"))
          .isEqualTo(1);
      assertThat(
              count(
                  db,
                  "SELECT count(*) FROM rank_windows WHERE communicator <> 'old'"
                      + " AND peer_late_mean_us IS NOT NULL"))
          .isPositive();
    }
  }

  @Test
  void attributionsOfTheVersionBeforeTheSampleReadBesideTheirSuccessors() throws Exception {
    HistoryFixtures.generate(dir, 16, Duration.ofHours(1), END);
    // An attribution as the job wrote it before version 6: its rows have no sampled_calls (a
    // field of a struct in a list, which DuckDB must unite by name across the files too).
    Schema v5;
    try (var in =
        io.collscope.avro.Attribution.class.getResourceAsStream(
            "/collscope/avro/history/Attribution.v5.avsc")) {
      v5 = new Schema.Parser().parse(in);
    }
    io.collscope.avro.Attribution current =
        new HistoryGenerator(HistoryFixtures.config(16, Duration.ofHours(1), END))
            .window(0, END.toEpochMilli())
            .attribution();
    current.setCommunicator("old");
    var bytes = new java.io.ByteArrayOutputStream();
    var enc = org.apache.avro.io.EncoderFactory.get().binaryEncoder(bytes, null);
    new org.apache.avro.specific.SpecificDatumWriter<>(io.collscope.avro.Attribution.class)
        .write(current, enc);
    enc.flush();
    GenericRecord old =
        new org.apache.avro.generic.GenericDatumReader<GenericRecord>(
                io.collscope.avro.Attribution.getClassSchema(), v5, withTimeConversions())
            .read(
                null,
                org.apache.avro.io.DecoderFactory.get().binaryDecoder(bytes.toByteArray(), null));
    Path partition = dir.resolve(HistoryLayout.ATTRIBUTIONS).resolve("dt=2026-11-30/hour=05");
    try (ParquetWriter<GenericRecord> w =
        AvroParquetWriter.<GenericRecord>builder(
                new LocalOutputFile(partition.resolve("part-old-0.parquet")))
            .withSchema(v5)
            .withDataModel(withTimeConversions())
            .build()) {
      w.write(old);
    }
    try (HistoryDb db = HistoryDb.open(dir)) {
      String sample = "list_min(list_transform(ranks, r -> coalesce(r.sampled_calls, r.calls)))";
      assertThat(
              count(
                  db,
                  "SELECT count(*) FROM attributions WHERE communicator = 'old' AND "
                      + sample
                      + " > 0"))
          .isEqualTo(1);
      assertThat(
              count(
                  db,
                  "SELECT count(*) FROM attributions WHERE communicator <> 'old' AND "
                      + sample
                      + " > 0"))
          .isPositive();
    }
  }

  @Test
  void findingsOfTheVersionBeforeTheNodeReadWithANullNodeAndASlowNodeIsACulprit() throws Exception {
    HistoryFixtures.generate(dir, 16, Duration.ofHours(1), END);
    String[] key = new String[3];
    try (HistoryDb db = HistoryDb.open(dir);
        Statement st = db.connection().createStatement();
        ResultSet rs =
            st.executeQuery("SELECT cluster, job, communicator FROM attributions LIMIT 1")) {
      rs.next();
      for (int i = 0; i < 3; i++) key[i] = rs.getString(i + 1);
    }
    Path findings = dir.resolve(HistoryLayout.FINDINGS);
    try (var files = Files.walk(findings)) {
      for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        if (!p.equals(findings)) Files.delete(p);
      }
    }
    // Every findings file in range written by version 1 (no node column): still readable.
    Schema v1;
    try (var in =
        io.collscope.avro.WindowFinding.class.getResourceAsStream(
            "/collscope/avro/history/WindowFinding.v1.avsc")) {
      v1 = new Schema.Parser().parse(in);
    }
    io.collscope.avro.WindowFinding node =
        io.collscope.avro.WindowFinding.newBuilder()
            .setCluster(key[0])
            .setJob(key[1])
            .setCommunicator(key[2])
            .setWindowStart(END.minusSeconds(20))
            .setWindowEnd(END.minusSeconds(10))
            .setWorldSize(4)
            .setPresentRanks(4)
            .setCalls(100)
            .setVerdict("SLOW_NODE")
            .setFindingIndex(0)
            .setKind("SLOW_NODE")
            .setRank(2)
            .setFromRank(-1)
            .setCause("ARRIVED_LATE")
            .setConfidence(0.9)
            .setExcessWaitUs(2000)
            .setNode("node-1")
            .build();
    Path partition = Files.createDirectories(findings.resolve("dt=2026-11-30/hour=05"));
    GenericRecord old = new GenericData.Record(v1);
    for (Schema.Field f : v1.getFields()) old.put(f.name(), node.get(f.name()));
    try (ParquetWriter<GenericRecord> w =
        AvroParquetWriter.<GenericRecord>builder(
                new LocalOutputFile(partition.resolve("part-v1-0.parquet")))
            .withSchema(v1)
            .withDataModel(withTimeConversions())
            .build()) {
      w.write(old);
    }
    try (HistoryDb db = HistoryDb.open(dir)) {
      assertThat(count(db, "SELECT count(*) FROM findings WHERE node IS NULL")).isEqualTo(1);
    }
    // The same finding as the job writes it now: the culprits question names the node.
    try (ParquetWriter<io.collscope.avro.WindowFinding> w =
        io.collscope.flink.history.ParquetFormat.writer(
            io.collscope.avro.WindowFinding.class,
            new LocalOutputFile(partition.resolve("part-v2-0.parquet")),
            1 << 20)) {
      w.write(node);
    }
    try (HistoryDb db = HistoryDb.open(dir)) {
      Table t =
          HistoryQueries.culprits(
              db, new TimeRange(END.minusSeconds(3600), END.plusSeconds(1)), 50);
      List<String> culprits = new ArrayList<>();
      for (List<Object> row : t.rows()) culprits.add(String.valueOf(row.get(t.column("culprit"))));
      assertThat(culprits).contains("node node-1", "node ?");
    }
  }

  private static GenericData withTimeConversions() {
    GenericData d = new GenericData();
    d.addLogicalTypeConversion(
        new org.apache.avro.data.TimeConversions.TimestampMillisConversion());
    return d;
  }

  static List<String> describe(HistoryDb db, String table) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Statement s = db.connection().createStatement();
        ResultSet rs = s.executeQuery("DESCRIBE " + table)) {
      while (rs.next()) out.add(rs.getString("column_name") + " " + rs.getString("column_type"));
    }
    return out;
  }

  static long count(HistoryDb db, String sql) throws SQLException {
    try (Statement s = db.connection().createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
