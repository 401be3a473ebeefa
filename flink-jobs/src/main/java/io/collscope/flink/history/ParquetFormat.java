package io.collscope.flink.history;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.flink.formats.parquet.ParquetBuilder;
import org.apache.flink.formats.parquet.ParquetWriterFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.avro.AvroParquetWriter;
import org.apache.parquet.avro.AvroWriteSupport;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;

/**
 * How a history file is written: Avro SpecificRecords through parquet-avro, columns named as the
 * Avro fields, ZSTD pages, standard three-level lists. The job's FileSinks ({@link #factory}) and
 * the history generator ({@link #writer}) write through the same builder, so their files are the
 * same format.
 *
 * <p>Flink's {@code AvroParquetWriters.forSpecificRecord} builds the same writer but leaves the
 * codec and the list layout at parquet-avro's defaults (uncompressed; the two-level lists of old
 * Hive/Spark versions), hence this builder.
 */
public final class ParquetFormat {

  public static final CompressionCodecName CODEC = CompressionCodecName.ZSTD;

  private ParquetFormat() {}

  /** A BulkWriter factory for a FileSink of {@code type}. */
  public static <T extends SpecificRecordBase> ParquetWriterFactory<T> factory(Class<T> type) {
    return new ParquetWriterFactory<>(builder(type));
  }

  /** A writer of {@code type} records into {@code out} (the generator's local files). */
  public static <T extends SpecificRecordBase> ParquetWriter<T> writer(
      Class<T> type, OutputFile out) throws IOException {
    return builder(type, ParquetWriter.DEFAULT_BLOCK_SIZE).createWriter(out);
  }

  /** As above, with row groups of about {@code rowGroupBytes}. */
  public static <T extends SpecificRecordBase> ParquetWriter<T> writer(
      Class<T> type, OutputFile out, long rowGroupBytes) throws IOException {
    return builder(type, rowGroupBytes).createWriter(out);
  }

  private static <T extends SpecificRecordBase> ParquetBuilder<T> builder(Class<T> type) {
    return builder(type, ParquetWriter.DEFAULT_BLOCK_SIZE);
  }

  private static <T extends SpecificRecordBase> ParquetBuilder<T> builder(
      Class<T> type, long rowGroupBytes) {
    // A lambda capturing only the class: Flink ships the factory to the task managers.
    String className = type.getName();
    return out -> {
      Class<T> cls = recordClass(className);
      Configuration conf = new Configuration(false);
      conf.setBoolean(AvroWriteSupport.WRITE_OLD_LIST_STRUCTURE, false);
      Schema schema = SpecificData.get().getSchema(cls);
      AvroParquetWriter.Builder<T> b =
          AvroParquetWriter.<T>builder(out)
              .withSchema(schema)
              .withDataModel(SpecificData.getForClass(cls))
              .withConf(conf)
              .withCompressionCodec(CODEC)
              .withRowGroupSize(rowGroupBytes);
      for (String column : meanColumns(schema, "")) b = b.withDictionaryEncoding(column, false);
      return b.build();
    };
  }

  /**
   * Parquet paths of the columns of means ({@code *_mean_us}, also inside lists and list elements):
   * continuous values that never repeat, so a dictionary only costs time before it falls back to
   * plain pages. Bucket edges (p50, p99) and names keep theirs: few distinct values.
   */
  static List<String> meanColumns(Schema s, String path) {
    List<String> out = new ArrayList<>();
    switch (s.getType()) {
      case RECORD -> {
        for (Schema.Field f : s.getFields()) {
          String p = path.isEmpty() ? f.name() : path + "." + f.name();
          if (f.name().endsWith("_mean_us")) out.addAll(leaves(f.schema(), p));
          else out.addAll(meanColumns(f.schema(), p));
        }
      }
      case ARRAY -> out.addAll(meanColumns(s.getElementType(), path + ".list.element"));
      default -> {}
    }
    return out;
  }

  private static List<String> leaves(Schema s, String path) {
    return s.getType() == Schema.Type.ARRAY
        ? leaves(s.getElementType(), path + ".list.element")
        : List.of(path);
  }

  @SuppressWarnings("unchecked")
  private static <T> Class<T> recordClass(String name) throws IOException {
    try {
      return (Class<T>) Class.forName(name, true, ParquetFormat.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IOException(e);
    }
  }
}
