package io.collscope.flink.history;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Where the history lives under its base path: one folder per table ({@value #RANK_WINDOWS},
 * {@value #ATTRIBUTIONS}, {@value #FINDINGS}, {@value #ALERTS}), Hive-style partitions {@code
 * dt=YYYY-MM-DD/hour=HH} of each record's event time in UTC, and Parquet files named {@code
 * part-*.parquet} whose columns are the fields of the current Avro schema. The writers (the job's
 * FileSinks, the generator) and the readers (DuckDB views) all go by this class; docs/HISTORY.md
 * describes it for readers without collscope code.
 */
public final class HistoryLayout {

  public static final String RANK_WINDOWS = "rank_windows";
  public static final String ATTRIBUTIONS = "attributions";
  public static final String ALERTS = "alerts";

  /**
   * One row per finding of an attribution ({@link WindowFindings}): what culprit questions read.
   */
  public static final String FINDINGS = "findings";

  /** Every table, in the order the docs list them. */
  public static final java.util.List<String> TABLES =
      java.util.List.of(RANK_WINDOWS, ATTRIBUTIONS, FINDINGS, ALERTS);

  /** Partition columns that the path adds to every table. */
  public static final String DATE_COLUMN = "dt";

  public static final String HOUR_COLUMN = "hour";

  /** Committed files: FileSink's in-progress files are hidden ({@code .part-...inprogress...}). */
  public static final String FILE_PREFIX = "part";

  public static final String FILE_SUFFIX = ".parquet";

  /** Glob of a table's committed files relative to the base path. */
  public static String glob(String table) {
    return table + "/" + DATE_COLUMN + "=*/" + HOUR_COLUMN + "=*/*" + FILE_SUFFIX;
  }

  private static final DateTimeFormatter PARTITION =
      DateTimeFormatter.ofPattern("'" + DATE_COLUMN + "='yyyy-MM-dd'/" + HOUR_COLUMN + "='HH")
          .withZone(ZoneOffset.UTC);

  private HistoryLayout() {}

  /**
   * The regular files under {@code dir} (links followed), sorted, as a reader sees them while a job
   * writes the history: the FileSink renames its in-progress files as it commits, and an entry
   * listed and gone when its attributes are read is passed over, not an error ({@code Files.walk}
   * throws {@code NoSuchFileException} for it and fails the whole listing).
   */
  public static java.util.List<java.nio.file.Path> filesUnder(java.nio.file.Path dir)
      throws java.io.IOException {
    java.util.List<java.nio.file.Path> files = new java.util.ArrayList<>();
    java.nio.file.Files.walkFileTree(
        dir,
        java.util.EnumSet.of(java.nio.file.FileVisitOption.FOLLOW_LINKS),
        Integer.MAX_VALUE,
        new java.nio.file.SimpleFileVisitor<>() {
          @Override
          public java.nio.file.FileVisitResult visitFile(
              java.nio.file.Path p, java.nio.file.attribute.BasicFileAttributes attrs) {
            if (attrs.isRegularFile()) files.add(p);
            return java.nio.file.FileVisitResult.CONTINUE;
          }

          @Override
          public java.nio.file.FileVisitResult visitFileFailed(
              java.nio.file.Path p, java.io.IOException e) throws java.io.IOException {
            if (e instanceof java.nio.file.NoSuchFileException) {
              return java.nio.file.FileVisitResult.CONTINUE;
            }
            throw e;
          }
        });
    files.sort(null);
    return files;
  }

  /** The partition of an event at {@code epochMillis}: {@code dt=2026-11-30/hour=07}. */
  public static String partition(long epochMillis) {
    return PARTITION.format(Instant.ofEpochMilli(epochMillis));
  }

  /** A rank window's event time: its end (exclusive), as in the attribution of that window. */
  public static long eventTime(RankWindow w) {
    return w.getWindowEnd().toEpochMilli();
  }

  public static long eventTime(Attribution a) {
    return a.getWindowEnd().toEpochMilli();
  }

  /** A finding's event time: its window's end, the same partition as its attribution. */
  public static long eventTime(io.collscope.avro.WindowFinding f) {
    return f.getWindowEnd().toEpochMilli();
  }

  /**
   * An alert transition's event time: when it resolved for RESOLVED, when it started firing for
   * FIRING; the end of the window that made the transition where those are unset (version-1
   * records).
   */
  public static long eventTime(Alert a) {
    if (a.getState() == AlertState.RESOLVED && a.getEndsAt() != null) {
      return a.getEndsAt().toEpochMilli();
    }
    if (a.getStartsAt() != null && a.getStartsAt().toEpochMilli() > 0) {
      return a.getStartsAt().toEpochMilli();
    }
    return a.getWindowEnd().toEpochMilli();
  }
}
