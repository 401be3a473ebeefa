package io.collscope.flink.history;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.avro.WindowFinding;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;

/**
 * The job's history outputs: one sink per table of {@link HistoryLayout}. Files are written under
 * the base path through Flink's file systems (a local path, or {@code s3://}, {@code hdfs://} where
 * the cluster has that file system), and become visible only when a checkpoint completes: FileSink
 * writes hidden in-progress files ({@code .part-*.inprogress.*}), and commits them by renaming to
 * {@code part-*.parquet} after the checkpoint that covers them, so a restart neither duplicates nor
 * truncates a visible file.
 */
public record HistorySinks(
    Sink<RankWindow> rankWindows,
    Sink<Attribution> attributions,
    Sink<WindowFinding> findings,
    Sink<Alert> alerts) {

  /** FileSinks under {@code basePath} (a path or URI). */
  public static HistorySinks files(String basePath) {
    Path base = new Path(basePath);
    return new HistorySinks(
        fileSink(
            base, HistoryLayout.RANK_WINDOWS, RankWindow.class, w -> HistoryLayout.eventTime(w)),
        fileSink(
            base, HistoryLayout.ATTRIBUTIONS, Attribution.class, a -> HistoryLayout.eventTime(a)),
        fileSink(
            base, HistoryLayout.FINDINGS, WindowFinding.class, f -> HistoryLayout.eventTime(f)),
        fileSink(base, HistoryLayout.ALERTS, Alert.class, a -> HistoryLayout.eventTime(a)));
  }

  /** One table's sink: Parquet, bucketed by event time, rolled on every checkpoint. */
  public static <T extends SpecificRecordBase> FileSink<T> fileSink(
      Path base, String table, Class<T> type, KeySelector<T, Long> eventTimeMillis) {
    return FileSink.forBulkFormat(new Path(base, table), ParquetFormat.factory(type))
        .withBucketAssigner(new EventTimeBucketAssigner<>(eventTimeMillis))
        .withRollingPolicy(OnCheckpointRollingPolicy.build())
        .withOutputFileConfig(
            OutputFileConfig.builder()
                .withPartPrefix(HistoryLayout.FILE_PREFIX)
                .withPartSuffix(HistoryLayout.FILE_SUFFIX)
                .build())
        .build();
  }
}
