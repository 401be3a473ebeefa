package io.collscope.flink.history;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.flink.sink.CollectingSink;
import io.collscope.flink.source.RawRecord;
import io.collscope.flink.source.RecordedSource;
import io.collscope.flink.testing.MiniClusters;
import io.collscope.schema.RecordedFrame;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job with history on, failing once after some checkpoints completed and restarting from the
 * last one (fixed-delay restart strategy): every rank window, attribution and alert it produced is
 * in the history exactly once, with the values it had, and while it ran a reader (DuckDB over the
 * layout's glob) never saw an in-progress or pending file, though such files were on disk.
 */
class HistoryExactlyOnceITCase {

  @RegisterExtension
  static final MiniClusterExtension FLINK = MiniClusters.oneTaskManagerTwoSlots();

  private static final Path RECORDING =
      Path.of("..", "recordings", "cpu", "cpu-slow-rank-2.snapshots");

  /**
   * Whether the source already failed: once per test JVM, so the restarted attempt runs through.
   */
  private static final AtomicBoolean FAILED = new AtomicBoolean();

  @TempDir Path history;

  @Test
  void everyRecordIsInTheHistoryExactlyOnceAfterARestartAndReadersSeeOnlyCommittedFiles()
      throws Exception {
    List<RecordedFrame> frames = SnapshotRecording.frames(List.of(RECORDING));
    JobOptions options =
        JobOptions.defaults()
            .with(JobOptions.WINDOW, "2s")
            .with(JobOptions.OUT_OF_ORDERNESS, "500ms")
            .with(JobOptions.CHECKPOINT_INTERVAL, "100ms")
            .with(JobOptions.HISTORY_PATH, history.toUri().toString());

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    Configuration restart = new Configuration();
    restart.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    restart.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
    restart.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
    env.configure(restart);
    env.setParallelism(1); // RecordedSource's frames stay in order
    AttributionJob.configure(env, options);

    // A tenth of the recording per checkpoint, so the job checkpoints all along; the frame at the
    // middle fails the job once, after at least four checkpoints.
    int perCheckpoint = Math.max(1, frames.size() / 10);
    DataGeneratorSource<RawRecord> source =
        new DataGeneratorSource<>(
            new FailingOnce(frames, frames.size() / 2),
            frames.size(),
            RateLimiterStrategy.perCheckpoint(perCheckpoint),
            TypeInformation.of(RawRecord.class));
    CollectingSink<RankWindow> windows = new CollectingSink<>();
    CollectingSink<Attribution> attributions = new CollectingSink<>();
    CollectingSink<Alert> alerts = new CollectingSink<>();
    AttributionJob.topology(
        env,
        source,
        new AttributionJob.Sinks(windows, attributions, new CollectingSink<>(), alerts)
            .withHistory(AttributionJob.historySinks(options)),
        options);

    Readers readers = new Readers(history);
    JobClient job = env.executeAsync("history exactly once");
    while (!job.getJobStatus().get().isGloballyTerminalState()) {
      readers.look();
      Thread.sleep(20);
    }
    job.getJobExecutionResult().get();
    readers.look();

    assertThat(FAILED).as("the job failed once and recovered").isTrue();
    assertThat(readers.inProgressSeen)
        .as("FileSink's in-progress files were on disk while the job ran")
        .isNotEmpty();
    assertThat(readers.errors).as("reads while the job ran").isEmpty();
    assertThat(readers.visible)
        .as("files a reader's glob matched")
        .isNotEmpty()
        .allMatch(f -> f.getFileName().toString().matches("part-[0-9a-f-]+-\\d+\\.parquet"));

    // The collecting sinks are at-least-once: what the restart replayed, they got twice. Their
    // distinct records are what the job produced; the history must hold each of them once.
    assertThat(windows.received()).isNotEmpty();
    try (Connection c = DriverManager.getConnection("jdbc:duckdb:")) {
      assertExactlyOnce(
          c,
          history,
          HistoryLayout.RANK_WINDOWS,
          "communicator || '/' || rank || '@' || epoch_ms(window_end)",
          "wait_mean_us",
          windows.received(),
          w -> w.getCommunicator() + "/" + w.getRank() + "@" + w.getWindowEnd().toEpochMilli(),
          RankWindow::getWaitMeanUs);
      assertExactlyOnce(
          c,
          history,
          HistoryLayout.ATTRIBUTIONS,
          "communicator || '@' || epoch_ms(window_end)",
          "max_wait_mean_us",
          attributions.received(),
          a -> a.getCommunicator() + "@" + a.getWindowEnd().toEpochMilli(),
          Attribution::getMaxWaitMeanUs);
      // Each finding of each attribution once, as WindowFindings derives it.
      List<io.collscope.avro.WindowFinding> findings = new java.util.ArrayList<>();
      for (Attribution a : attributions.received()) findings.addAll(WindowFindings.of(a));
      assertThat(findings).as("the slow rank is found").isNotEmpty();
      assertExactlyOnce(
          c,
          history,
          HistoryLayout.FINDINGS,
          "communicator || '@' || epoch_ms(window_end) || '#' || finding_index",
          "excess_wait_us",
          findings,
          f ->
              f.getCommunicator()
                  + "@"
                  + f.getWindowEnd().toEpochMilli()
                  + "#"
                  + f.getFindingIndex(),
          io.collscope.avro.WindowFinding::getExcessWaitUs);
      assertThat(alerts.received()).as("the slow rank alerts").isNotEmpty();
      assertExactlyOnce(
          c,
          history,
          HistoryLayout.ALERTS,
          "alert_id || '/' || state || '@' || epoch_ms(window_end)",
          "current",
          alerts.received(),
          a -> a.getAlertId() + "/" + a.getState() + "@" + a.getWindowEnd().toEpochMilli(),
          Alert::getCurrent);
    }
  }

  private static <T> void assertExactlyOnce(
      Connection c,
      Path base,
      String table,
      String keySql,
      String valueColumn,
      List<T> received,
      Function<T, String> key,
      Function<T, Double> value)
      throws SQLException {
    Map<String, Double> expected = new HashMap<>();
    for (T r : received) expected.put(key.apply(r), value.apply(r));
    Map<String, Long> copies = new HashMap<>();
    Map<String, Double> values = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT " + keySql + ", " + valueColumn + " FROM " + readParquet(base, table))) {
      while (rs.next()) {
        copies.merge(rs.getString(1), 1L, Long::sum);
        values.put(rs.getString(1), rs.getDouble(2));
      }
    }
    assertThat(copies.keySet()).as(table + ": records in the history").isEqualTo(expected.keySet());
    assertThat(copies.values()).as(table + ": copies of each").allMatch(n -> n == 1);
    assertThat(values).as(table + ": their values").isEqualTo(expected);
  }

  /** What a reader without collscope code would run: the layout's glob, committed files only. */
  private static String glob(Path base, String table) {
    return base.toAbsolutePath() + "/" + HistoryLayout.glob(table);
  }

  private static String readParquet(Path base, String table) {
    return "read_parquet('" + glob(base, table) + "')";
  }

  /** A reader polling the history while the job writes it. */
  private static final class Readers {
    final Path base;
    final Set<String> inProgressSeen = ConcurrentHashMap.newKeySet();
    final List<String> errors = new CopyOnWriteArrayList<>();
    final Set<Path> visible = ConcurrentHashMap.newKeySet();

    Readers(Path base) {
      this.base = base;
    }

    void look() throws Exception {
      for (Path file : HistoryLayout.filesUnder(base)) {
        String n = file.getFileName().toString();
        if (n.startsWith(".") && n.contains("inprogress")) inProgressSeen.add(n);
      }
      try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
          Statement s = c.createStatement()) {
        for (String table : HistoryLayout.TABLES) {
          String g = glob(base, table);
          List<Path> matched = new ArrayList<>();
          try (ResultSet rs = s.executeQuery("SELECT file FROM glob('" + g + "')")) {
            while (rs.next()) matched.add(Path.of(rs.getString(1)));
          }
          visible.addAll(matched);
          if (matched.isEmpty()) continue;
          try (ResultSet rs = s.executeQuery("SELECT count(*) FROM read_parquet('" + g + "')")) {
            rs.next();
          } catch (SQLException e) {
            errors.add(table + ": " + e.getMessage());
          }
        }
      }
    }
  }

  /** The recording's frames, throwing once at one index (the first attempt's failure). */
  private static final class FailingOnce implements GeneratorFunction<Long, RawRecord> {
    private final ArrayList<RecordedFrame> frames;
    private final long failAt;

    FailingOnce(List<RecordedFrame> frames, long failAt) {
      this.frames = new ArrayList<>(frames);
      this.failAt = failAt;
    }

    @Override
    public RawRecord map(Long index) {
      if (index == failAt && FAILED.compareAndSet(false, true)) {
        throw new IllegalStateException("injected failure at frame " + index);
      }
      return RecordedSource.record(frames.get(index.intValue()));
    }
  }
}
