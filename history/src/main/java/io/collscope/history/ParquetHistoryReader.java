package io.collscope.history;

import io.collscope.flink.history.HistoryLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.apache.parquet.avro.AvroReadSupport;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.api.ReadSupport;
import org.apache.parquet.io.ColumnIOFactory;
import org.apache.parquet.io.LocalInputFile;
import org.apache.parquet.io.MessageColumnIO;
import org.apache.parquet.io.RecordReader;
import org.apache.parquet.io.api.RecordMaterializer;
import org.apache.parquet.schema.MessageType;

/**
 * Reads one table of the history back as the job's own Avro records (an {@code Attribution} is an
 * {@code Attribution} again), for code that needs what the job computed rather than SQL rows — e.g.
 * {@code collscope baselines --history}, which learns with the job's own rule. Partitions outside
 * the time range are not opened; records are filtered by event time inside the ones that are. Local
 * files only, through Parquet's own {@link LocalInputFile} (no Hadoop file system); hidden files
 * (FileSink's in-progress parts) are skipped, as DuckDB skips them.
 */
public final class ParquetHistoryReader {

  private ParquetHistoryReader() {}

  /**
   * Every record of {@code table} under {@code base} whose event time ({@code eventTime}) is in
   * {@code range}, in no particular order.
   */
  public static <T extends SpecificRecord> List<T> read(
      Path base, String table, Class<T> type, TimeRange range, Function<T, Long> eventTime)
      throws IOException {
    Path dir = base.resolve(table);
    List<T> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) return out;
    // Committed files only; a running job's in-progress files may vanish as this lists them.
    List<Path> files =
        HistoryLayout.filesUnder(dir).stream()
            .filter(p -> HistoryDb.visible(dir.relativize(p)))
            .filter(p -> p.getFileName().toString().endsWith(HistoryLayout.FILE_SUFFIX))
            .filter(p -> inRange(dir.relativize(p.getParent()).toString(), range))
            .toList();
    for (Path f : files) {
      forEach(
          f,
          type,
          rec -> {
            if (range.contains(Instant.ofEpochMilli(eventTime.apply(rec)))) out.add(rec);
          });
    }
    return out;
  }

  /** Every record of one history file, as {@code type} (older schema versions resolved to it). */
  public static <T extends SpecificRecord> void forEach(
      Path file, Class<T> type, java.util.function.Consumer<T> each) throws IOException {
    PlainParquetConfiguration conf = new PlainParquetConfiguration();
    // ParquetFileReader and the Avro read support directly: ParquetReader (and so
    // AvroParquetReader) needs Hadoop's MapReduce classes, which the launcher does not ship.
    try (ParquetFileReader r =
        ParquetFileReader.open(
            new LocalInputFile(file),
            org.apache.parquet.ParquetReadOptions.builder(conf).build())) {
      MessageType schema = r.getFooter().getFileMetaData().getSchema();
      Map<String, String> meta = r.getFooter().getFileMetaData().getKeyValueMetaData();
      AvroReadSupport<T> support = new AvroReadSupport<>(SpecificData.getForClass(type));
      ReadSupport.ReadContext ctx = support.init(conf, meta, schema);
      RecordMaterializer<T> materializer = support.prepareForRead(conf, meta, schema, ctx);
      MessageColumnIO io = new ColumnIOFactory().getColumnIO(ctx.getRequestedSchema(), schema);
      for (PageReadStore pages = r.readNextRowGroup();
          pages != null;
          pages = r.readNextRowGroup()) {
        RecordReader<T> rows = io.getRecordReader(pages, materializer);
        for (long i = 0; i < pages.getRowCount(); i++) each.accept(rows.read());
      }
    }
  }

  private static final java.util.regex.Pattern PARTITION =
      java.util.regex.Pattern.compile(
          HistoryLayout.DATE_COLUMN
              + "=(\\d{4}-\\d{2}-\\d{2})/"
              + HistoryLayout.HOUR_COLUMN
              + "=(\\d{2})");

  /** Whether partition {@code dt=YYYY-MM-DD/hour=HH} can hold records in the range. */
  static boolean inRange(String partition, TimeRange range) {
    java.util.regex.Matcher m = PARTITION.matcher(partition.replace('\\', '/'));
    if (!m.matches()) return true; // not a partition directory: read it, filter by record
    Instant start =
        java.time.LocalDate.parse(m.group(1))
            .atTime(Integer.parseInt(m.group(2)), 0)
            .toInstant(ZoneOffset.UTC);
    Instant end = start.plusSeconds(3600);
    return !end.isBefore(range.from()) && (range.to() == null || start.isBefore(range.to()));
  }
}
