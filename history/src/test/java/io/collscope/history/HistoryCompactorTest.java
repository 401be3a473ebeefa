package io.collscope.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.load.HistoryGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistoryCompactorTest {

  @TempDir Path dir;

  private static final Instant END = Instant.parse("2026-11-30T06:00:00Z");

  /**
   * Three hours of two jobs, each hour of each table in two files (as two sink subtasks). The
   * partitions are the windows' ends: hours 03, 04, 05 and 06 (the last window ends at 06:00).
   */
  @BeforeEach
  void twoFilesAnHour() throws Exception {
    Path other = dir.resolve("other");
    new HistoryGenerator(HistoryFixtures.config(16, Duration.ofHours(3), END)).write(dir);
    new HistoryGenerator(
            new HistoryGenerator.Config(
                16, 8, Duration.ofHours(3), Duration.ofSeconds(10), END, 7, "gen", "eval", 2))
        .write(other);
    for (String table : HistoryLayout.TABLES) {
      for (Path f : files(other.resolve(table))) {
        Path to = dir.resolve(table).resolve(other.resolve(table).relativize(f));
        Files.createDirectories(to.getParent());
        Files.move(f, to.resolveSibling("part-other-" + f.getFileName()));
      }
    }
    deleteTree(other);
  }

  @Test
  void everyClosedHourBecomesOneFileWithEveryRecordOnce() throws Exception {
    List<String> before = contents();
    assertThat(filesPerHour(HistoryLayout.ATTRIBUTIONS)).allMatch(n -> n == 2);

    HistoryCompactor.Result r =
        new HistoryCompactor(dir, END.plus(Duration.ofHours(3)), Duration.ofHours(2), false).run();

    assertThat(contents()).isEqualTo(before);
    for (String table : List.of(HistoryLayout.RANK_WINDOWS, HistoryLayout.ATTRIBUTIONS)) {
      assertThat(filesPerHour(table)).as(table).hasSize(4).allMatch(n -> n == 1);
    }
    assertThat(r.compacted()).isNotEmpty();
    assertThat(r.records()).isEqualTo(before.size());
    assertThat(hiddenFolders()).isEmpty();
    // The job's records read back as the job's records (the reader used by baselines).
    assertThat(
            ParquetHistoryReader.read(
                    dir,
                    HistoryLayout.ATTRIBUTIONS,
                    Attribution.class,
                    TimeRange.since(Duration.ofDays(1), END),
                    HistoryLayout::eventTime)
                .size())
        .isEqualTo(attributionRows());
  }

  @Test
  void hoursTheJobMayStillWriteAreLeftAlone() throws Exception {
    Path busy =
        dir.resolve(HistoryLayout.ATTRIBUTIONS)
            .resolve(HistoryLayout.partition(END.minus(Duration.ofHours(2)).toEpochMilli()));
    Files.write(busy.resolve(".part-7-3.parquet.inprogress.0d1e"), new byte[] {1});
    List<String> before = contents();

    // now = END + 1h with --older-than 2h: hours 05 and 06 are too young, 04 is being written.
    HistoryCompactor.Result r =
        new HistoryCompactor(dir, END.plus(Duration.ofHours(1)), Duration.ofHours(2), false).run();

    assertThat(contents()).isEqualTo(before);
    assertThat(filesPerHour(HistoryLayout.ATTRIBUTIONS)).containsExactly(1, 2, 2, 2);
    assertThat(r.skipped())
        .anySatisfy(s -> assertThat(s.reason()).contains("being written"))
        .anySatisfy(s -> assertThat(s.reason()).contains("younger"));
  }

  @Test
  void aDryRunChangesNothing() throws Exception {
    List<String> before = contents();
    HistoryCompactor.Result r =
        new HistoryCompactor(dir, END.plus(Duration.ofDays(1)), Duration.ZERO, true).run();
    assertThat(r.compacted())
        .filteredOn(c -> c.table().equals(HistoryLayout.ATTRIBUTIONS))
        .hasSize(4)
        .allMatch(c -> c.filesBefore() == 2);
    assertThat(filesPerHour(HistoryLayout.ATTRIBUTIONS)).allMatch(n -> n == 2);
    assertThat(contents()).isEqualTo(before);
  }

  @Test
  void aCompactionThatDiedBetweenItsRenamesIsFinishedAndReadersNeverCountTwice() throws Exception {
    List<String> before = contents();
    Path hour =
        dir.resolve(HistoryLayout.ATTRIBUTIONS)
            .resolve(HistoryLayout.partition(END.minus(Duration.ofHours(1)).toEpochMilli()));
    Path newDir = hour.resolveSibling("." + hour.getFileName() + HistoryCompactor.NEW_SUFFIX);
    Path oldDir = hour.resolveSibling("." + hour.getFileName() + HistoryCompactor.OLD_SUFFIX);
    // The new copy complete, the hour moved aside, the second rename never made.
    copyTree(hour, newDir);
    Files.move(hour, oldDir);
    // While it lies like this, the hour is missing (the moment between the renames), not doubled.
    assertThat(contents()).hasSizeLessThan(before.size());

    HistoryCompactor.Result r =
        new HistoryCompactor(dir, END, Duration.ofDays(1), false).run(); // nothing old enough
    assertThat(r.recovered()).isEqualTo(2); // the new copy moved in, the old one deleted
    assertThat(contents()).isEqualTo(before);
    assertThat(hiddenFolders()).isEmpty();
  }

  @Test
  void aCompactionThatDiedWhileWritingIsDropped() throws Exception {
    List<String> before = contents();
    Path hour =
        dir.resolve(HistoryLayout.ATTRIBUTIONS)
            .resolve(HistoryLayout.partition(END.minus(Duration.ofHours(1)).toEpochMilli()));
    Path newDir = hour.resolveSibling("." + hour.getFileName() + HistoryCompactor.NEW_SUFFIX);
    copyTree(hour, newDir); // a full copy beside the hour: DuckDB must not read it
    Files.write(newDir.resolve("part-compacted-torn.parquet"), new byte[] {'P', 'A', 'R'});
    assertThat(contents()).isEqualTo(before);

    new HistoryCompactor(dir, END, Duration.ofDays(1), false).run();
    assertThat(hiddenFolders()).isEmpty();
    assertThat(contents()).isEqualTo(before);
  }

  /** Every record's identity, sorted: what a reader of the whole history sees. */
  private List<String> contents() throws Exception {
    List<String> out = new ArrayList<>();
    try (HistoryDb db = HistoryDb.open(dir);
        Statement s = db.connection().createStatement()) {
      for (String sql :
          List.of(
              "SELECT 'w ' || job || ' ' || communicator || ' ' || rank || ' ' || window_end"
                  + " || ' ' || wait_mean_us FROM rank_windows",
              "SELECT 'a ' || job || ' ' || communicator || ' ' || window_end || ' ' || verdict"
                  + " FROM attributions",
              "SELECT 'f ' || job || ' ' || communicator || ' ' || window_end || ' '"
                  + " || finding_index || ' ' || kind FROM findings",
              "SELECT 'l ' || job || ' ' || communicator || ' ' || window_end || ' ' || state"
                  + " FROM alerts")) {
        try (ResultSet rs = s.executeQuery(sql)) {
          while (rs.next()) out.add(rs.getString(1));
        }
      }
    }
    out.sort(Comparator.naturalOrder());
    return out;
  }

  private long attributionRows() throws Exception {
    try (HistoryDb db = HistoryDb.open(dir);
        Statement s = db.connection().createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM attributions")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Committed files per hour of a table, hours in order. */
  private List<Integer> filesPerHour(String table) throws IOException {
    List<Integer> out = new ArrayList<>();
    try (Stream<Path> dates = Files.list(dir.resolve(table))) {
      for (Path d : dates.sorted().toList()) {
        try (Stream<Path> hours = Files.list(d)) {
          for (Path h : hours.filter(p -> !HistoryCompactor.hidden(p)).sorted().toList()) {
            try (Stream<Path> f = Files.list(h)) {
              out.add((int) f.filter(p -> !HistoryCompactor.hidden(p)).count());
            }
          }
        }
      }
    }
    return out;
  }

  private List<Path> hiddenFolders() throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isDirectory).filter(HistoryCompactor::hidden).toList();
    }
  }

  private static List<Path> files(Path root) throws IOException {
    try (Stream<Path> s = Files.walk(root)) {
      return s.filter(Files::isRegularFile).toList();
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    Files.createDirectories(to);
    for (Path f : files(from)) {
      Files.copy(f, to.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
    }
  }

  private static void deleteTree(Path root) throws IOException {
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }
}
