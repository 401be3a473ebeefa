package io.collscope.history;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.flink.history.HistoryLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.avro.Schema;

/**
 * DuckDB (in memory, through JDBC) over a history base path, with one view per table of {@link
 * HistoryLayout}: {@code rank_windows}, {@code attributions}, {@code findings}, {@code alerts}.
 * Each view reads the table's committed Parquet files with Hive partitioning ({@code dt} DATE and
 * {@code hour} INTEGER columns from the path, so a filter on them skips whole folders) and {@code
 * union_by_name} (files of older schema versions lack newer columns: those read as NULL).
 *
 * <p>A table with no file yet (no alert ever fired) is still a view, with the columns of the
 * current Avro schema and no rows: DuckDB cannot read an empty glob, and a query must not fail
 * because nothing happened. Such a view is fixed when the database opens; reopen to see files
 * written since. Times are TIMESTAMP WITH TIME ZONE, shown in UTC.
 */
public final class HistoryDb implements AutoCloseable {

  /** The Avro schema of each table's records: the columns of its files. */
  public static final Map<String, Schema> SCHEMAS =
      Map.of(
          HistoryLayout.RANK_WINDOWS, RankWindow.getClassSchema(),
          HistoryLayout.ATTRIBUTIONS, Attribution.getClassSchema(),
          HistoryLayout.FINDINGS, io.collscope.avro.WindowFinding.getClassSchema(),
          HistoryLayout.ALERTS, Alert.getClassSchema());

  private final Path base;
  private final Connection connection;

  private HistoryDb(Path base, Connection connection) {
    this.base = base;
    this.connection = connection;
  }

  /**
   * Opens DuckDB over {@code base} (a folder written by the job's history sinks or by {@code
   * collscope history generate}); the folder need not exist yet.
   */
  public static HistoryDb open(Path base) throws SQLException {
    Connection c = DriverManager.getConnection("jdbc:duckdb:");
    try (Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      for (String table : HistoryLayout.TABLES) {
        s.execute("CREATE VIEW " + table + " AS " + viewQuery(base, table));
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return new HistoryDb(base, c);
  }

  /** The SELECT a table's view is defined as. */
  static String viewQuery(Path base, String table) {
    if (table.equals(HistoryLayout.FINDINGS)
        && !hasFiles(base, table)
        && hasFiles(base, HistoryLayout.ATTRIBUTIONS)) {
      return FINDINGS_OF_ATTRIBUTIONS;
    }
    if (!hasFiles(base, table)) return DuckDbTypes.emptySelect(SCHEMAS.get(table));
    String glob = base.toAbsolutePath().resolve(HistoryLayout.glob(table)).toString();
    String files =
        "SELECT * FROM read_parquet("
            + DuckDbTypes.literal(glob)
            + ", hive_partitioning = true, union_by_name = true,"
            + " hive_types = {'"
            + HistoryLayout.DATE_COLUMN
            + "': DATE, '"
            + HistoryLayout.HOUR_COLUMN
            + "': INTEGER})";
    if (!table.equals(HistoryLayout.FINDINGS)) return files;
    // Findings rows are flat: united by name with the current schema's empty view, a column newer
    // than every file in range (node, in version 2) reads as NULL instead of failing the query.
    return DuckDbTypes.emptySelect(SCHEMAS.get(table)) + " UNION ALL BY NAME " + files;
  }

  /**
   * The findings view of a history written before the job wrote a findings table (it has
   * attributions but no {@code findings} folder): the same rows, unnested from the attributions —
   * the same answers, at the cost the findings table exists to save. A history with a findings
   * folder reads only that folder: findings of hours written before the upgrade are not in it
   * (docs/HISTORY.md). The columns added since (node, the hardware cause and evidence) are
   * constants here: histories from before the findings table have neither.
   */
  static final String FINDINGS_OF_ATTRIBUTIONS =
      """
      SELECT cluster, job, communicator, collective, window_start, window_end, world_size,
             present_ranks, calls, CAST(verdict AS VARCHAR) AS verdict, finding_index,
             CAST(f.kind AS VARCHAR) AS kind, f.rank AS rank, f.from_rank AS from_rank,
             CAST(f.cause AS VARCHAR) AS cause, f.confidence AS confidence,
             f.excess_wait_us AS excess_wait_us, f.evidence AS evidence, '' AS node,
             'NONE' AS hardware_cause, '' AS hardware_evidence, dt, hour
      FROM (SELECT *, len(ranks) AS present_ranks,
                   coalesce(list_max(list_transform(ranks, r -> r.calls)), 0) AS calls,
                   generate_subscripts(findings, 1) - 1 AS finding_index,
                   unnest(findings) AS f
            FROM attributions WHERE len(findings) > 0)
      """;

  /** Whether a table has a committed file (one matching its glob). */
  static boolean hasFiles(Path base, String table) {
    Path dir = base.resolve(table);
    if (!Files.isDirectory(dir)) return false;
    try (Stream<Path> files =
        // links followed, as DuckDB's glob follows them: a table folder may live elsewhere
        Files.find(
            dir,
            3,
            (p, a) -> isCommitted(dir, p, a.isRegularFile()),
            java.nio.file.FileVisitOption.FOLLOW_LINKS)) {
      return files.findAny().isPresent();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean isCommitted(Path tableDir, Path p, boolean regular) {
    Path relative = tableDir.relativize(p);
    if (!regular || relative.getNameCount() != 3 || !visible(relative)) return false;
    return p.getFileName().toString().endsWith(HistoryLayout.FILE_SUFFIX);
  }

  /**
   * Whether a path under a table folder is part of the history: no hidden name on the way, neither
   * a file (FileSink's in-progress parts) nor a folder (a compaction's new or old copy of an hour,
   * {@link HistoryCompactor}). DuckDB's glob, pyarrow and Spark skip the same.
   */
  static boolean visible(Path relative) {
    for (Path name : relative) if (name.toString().startsWith(".")) return false;
    return true;
  }

  public Path base() {
    return base;
  }

  /** The connection, views defined; closed with this. */
  public Connection connection() {
    return connection;
  }

  @Override
  public void close() throws SQLException {
    connection.close();
  }
}
