package io.collscope.history;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.flink.history.ParquetFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.io.LocalOutputFile;

/**
 * Rewrites each closed hour of the history into one file per table.
 *
 * <p>Why: the job's FileSinks commit one file per table, hour, subtask and checkpoint — at 5 s
 * checkpoints up to 720 small files an hour, each with its own footer, row group and dictionary
 * pages. DuckDB opens every file's footer for {@code union_by_name} and scans tiny row groups; one
 * file an hour reads like the generator's layout that docs/BENCHMARKS.md times.
 *
 * <p>How, so that a reader never sees a record twice or loses one: the hour's records are streamed
 * (in the current schema: older files are read through Avro's schema resolution, so an hour that
 * spans an upgrade becomes one schema) into a new hidden folder {@code dt=D/.hour=HH.new/}; then
 * {@code hour=HH} is renamed to {@code .hour=HH.old}, {@code .hour=HH.new} to {@code hour=HH}, and
 * the old folder deleted. Readers skip hidden folders. A compaction that dies half-way is finished
 * or undone by the next one ({@link #recover}): the only moment the hour is absent is between the
 * two renames.
 *
 * <p>Which hours: those that ended more than {@code olderThan} ago, have more than one committed
 * file and no hidden file (a FileSink's in-progress or pending part: that hour is still being
 * written, e.g. by a job catching up after an outage). The folder is listed again just before the
 * swap; a file that appeared meanwhile aborts that hour until the next run.
 */
public final class HistoryCompactor {

  /** Hours younger than this are left to the job: its lateness and a checkpoint, with margin. */
  public static final Duration DEFAULT_OLDER_THAN = Duration.ofHours(2);

  static final String NEW_SUFFIX = ".new";
  static final String OLD_SUFFIX = ".old";

  private static final Pattern HOUR_DIR =
      Pattern.compile(Pattern.quote(HistoryLayout.HOUR_COLUMN + "=") + "(\\d{2})");
  private static final Pattern DATE_DIR =
      Pattern.compile(Pattern.quote(HistoryLayout.DATE_COLUMN + "=") + "(\\d{4}-\\d{2}-\\d{2})");

  private static final Map<String, Class<? extends SpecificRecordBase>> TYPES =
      Map.of(
          HistoryLayout.RANK_WINDOWS, RankWindow.class,
          HistoryLayout.ATTRIBUTIONS, Attribution.class,
          HistoryLayout.FINDINGS, io.collscope.avro.WindowFinding.class,
          HistoryLayout.ALERTS, Alert.class);

  /** What one hour of one table came to. */
  public record Compacted(String table, String partition, int filesBefore, long records) {}

  /** An hour that was left as it is, and why. */
  public record Skipped(String table, String partition, String reason) {}

  /** Everything one run did. */
  public record Result(List<Compacted> compacted, List<Skipped> skipped, int recovered) {
    public long records() {
      return compacted.stream().mapToLong(Compacted::records).sum();
    }

    public int filesBefore() {
      return compacted.stream().mapToInt(Compacted::filesBefore).sum();
    }
  }

  private final Path base;
  private final Instant now;
  private final Duration olderThan;
  private final boolean dryRun;

  public HistoryCompactor(Path base, Instant now, Duration olderThan, boolean dryRun) {
    if (olderThan.isNegative()) throw new IllegalArgumentException("--older-than must be >= 0");
    this.base = base;
    this.now = now;
    this.olderThan = olderThan;
    this.dryRun = dryRun;
  }

  /** Compacts every table's eligible hours. */
  public Result run() throws IOException {
    List<Compacted> done = new ArrayList<>();
    List<Skipped> skipped = new ArrayList<>();
    int recovered = 0;
    for (String table : HistoryLayout.TABLES) {
      Path tableDir = base.resolve(table);
      if (!Files.isDirectory(tableDir)) continue;
      for (Path dateDir : list(tableDir)) {
        Matcher d = DATE_DIR.matcher(dateDir.getFileName().toString());
        if (!Files.isDirectory(dateDir) || !d.matches()) continue;
        if (!dryRun) recovered += recover(dateDir);
        for (Path hourDir : list(dateDir)) {
          Matcher h = HOUR_DIR.matcher(hourDir.getFileName().toString());
          if (!Files.isDirectory(hourDir) || !h.matches()) continue;
          String partition = dateDir.getFileName() + "/" + hourDir.getFileName();
          Instant hourEnd =
              LocalDate.parse(d.group(1))
                  .atTime(Integer.parseInt(h.group(1)), 0)
                  .toInstant(ZoneOffset.UTC)
                  .plus(Duration.ofHours(1));
          if (hourEnd.plus(olderThan).isAfter(now)) {
            skipped.add(new Skipped(table, partition, "younger than --older-than"));
            continue;
          }
          List<Path> files = list(hourDir);
          if (files.stream().anyMatch(HistoryCompactor::hidden)) {
            skipped.add(new Skipped(table, partition, "a file is being written (hidden part)"));
            continue;
          }
          List<Path> committed = files.stream().filter(HistoryCompactor::committed).toList();
          if (committed.size() < files.size()) {
            // Only the tables' Parquet parts are copied; whatever else is there would be deleted.
            skipped.add(new Skipped(table, partition, "holds a file that is not a Parquet part"));
            continue;
          }
          if (committed.size() < 2) continue; // already one file: nothing to do, nothing to say
          if (dryRun) {
            done.add(new Compacted(table, partition, committed.size(), -1));
            continue;
          }
          Compacted c = compact(table, dateDir, hourDir, partition, committed, skipped);
          if (c != null) done.add(c);
        }
      }
    }
    return new Result(done, skipped, recovered);
  }

  private Compacted compact(
      String table,
      Path dateDir,
      Path hourDir,
      String partition,
      List<Path> committed,
      List<Skipped> skipped)
      throws IOException {
    String hourName = hourDir.getFileName().toString();
    Path newDir = dateDir.resolve("." + hourName + NEW_SUFFIX);
    Path oldDir = dateDir.resolve("." + hourName + OLD_SUFFIX);
    deleteTree(newDir);
    Files.createDirectories(newDir);
    Path out =
        newDir.resolve(
            HistoryLayout.FILE_PREFIX
                + "-compacted-"
                + UUID.randomUUID()
                + HistoryLayout.FILE_SUFFIX);
    long records = copy(TYPES.get(table), committed, out);
    // Listed again: anything that appeared since (a late commit, a new in-progress part) would be
    // lost with the old folder. Leave the hour for the next run.
    if (!list(hourDir).equals(committed)) {
      deleteTree(newDir);
      skipped.add(new Skipped(table, partition, "files changed while compacting; try again"));
      return null;
    }
    Files.move(hourDir, oldDir, StandardCopyOption.ATOMIC_MOVE);
    Files.move(newDir, hourDir, StandardCopyOption.ATOMIC_MOVE);
    deleteTree(oldDir);
    return new Compacted(table, partition, committed.size(), records);
  }

  /** Streams every record of {@code files} into one new file, in file order. */
  private static <T extends SpecificRecordBase> long copy(Class<T> type, List<Path> files, Path out)
      throws IOException {
    long[] n = {0};
    try (ParquetWriter<T> w = ParquetFormat.writer(type, new LocalOutputFile(out))) {
      for (Path f : files) {
        ParquetHistoryReader.forEach(
            f,
            type,
            rec -> {
              try {
                w.write(rec);
                n[0]++;
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return n[0];
  }

  /**
   * Finishes or undoes what a compaction of {@code dateDir}'s hours left when it died: a complete
   * new folder whose hour is gone is moved in (the crash fell between the renames); a new folder
   * beside its hour is dropped (the crash fell before them); an old folder beside its hour is
   * deleted (after them), or moved back if nothing replaced it. Returns how many it mended.
   */
  static int recover(Path dateDir) throws IOException {
    int mended = 0;
    for (Path p : list(dateDir)) {
      String name = p.getFileName().toString();
      if (!name.startsWith(".")) continue;
      boolean isNew = name.endsWith(NEW_SUFFIX);
      boolean isOld = name.endsWith(OLD_SUFFIX);
      if (!isNew && !isOld) continue;
      String hourName =
          name.substring(1, name.length() - (isNew ? NEW_SUFFIX : OLD_SUFFIX).length());
      if (!HOUR_DIR.matcher(hourName).matches()) continue;
      Path hourDir = dateDir.resolve(hourName);
      if (isNew) {
        // A new folder is only ever renamed once complete (its writer closed), and the hour is
        // only moved aside after that: hour gone + old present = between the renames.
        if (!Files.exists(hourDir)) {
          Files.move(p, hourDir, StandardCopyOption.ATOMIC_MOVE);
        } else {
          deleteTree(p);
        }
        mended++;
      }
    }
    for (Path p : list(dateDir)) {
      String name = p.getFileName().toString();
      if (!name.startsWith(".") || !name.endsWith(OLD_SUFFIX)) continue;
      String hourName = name.substring(1, name.length() - OLD_SUFFIX.length());
      if (!HOUR_DIR.matcher(hourName).matches()) continue;
      Path hourDir = dateDir.resolve(hourName);
      if (Files.exists(hourDir)) deleteTree(p);
      else Files.move(p, hourDir, StandardCopyOption.ATOMIC_MOVE);
      mended++;
    }
    return mended;
  }

  static boolean hidden(Path p) {
    return p.getFileName().toString().startsWith(".");
  }

  private static boolean committed(Path p) {
    String name = p.getFileName().toString();
    return !hidden(p) && name.endsWith(HistoryLayout.FILE_SUFFIX) && Files.isRegularFile(p);
  }

  private static List<Path> list(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }
}
