package io.collscope.history;

import io.collscope.flink.history.HistoryLayout;
import java.util.StringJoiner;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;

/**
 * The DuckDB type that parquet-avro's file of an Avro type reads as, for views of tables that have
 * no file yet: strings and enums VARCHAR, timestamp-millis TIMESTAMPTZ, arrays LISTs, maps MAPs,
 * records STRUCTs, a union with null its other branch.
 */
final class DuckDbTypes {

  private DuckDbTypes() {}

  /** A SELECT of no rows with a record's columns, plus the partition columns. */
  static String emptySelect(Schema record) {
    StringJoiner columns = new StringJoiner(", ");
    for (Schema.Field f : record.getFields()) {
      columns.add("CAST(NULL AS " + of(f.schema()) + ") AS " + identifier(f.name()));
    }
    columns.add("CAST(NULL AS DATE) AS " + HistoryLayout.DATE_COLUMN);
    columns.add("CAST(NULL AS INTEGER) AS " + HistoryLayout.HOUR_COLUMN);
    return "SELECT " + columns + " WHERE false";
  }

  static String of(Schema s) {
    if (s.getLogicalType() instanceof LogicalTypes.TimestampMillis) return "TIMESTAMPTZ";
    return switch (s.getType()) {
      case STRING, ENUM -> "VARCHAR";
      case BYTES, FIXED -> "BLOB";
      case INT -> "INTEGER";
      case LONG -> "BIGINT";
      case FLOAT -> "FLOAT";
      case DOUBLE -> "DOUBLE";
      case BOOLEAN -> "BOOLEAN";
      case ARRAY -> of(s.getElementType()) + "[]";
      case MAP -> "MAP(VARCHAR, " + of(s.getValueType()) + ")";
      case RECORD -> {
        StringJoiner fields = new StringJoiner(", ", "STRUCT(", ")");
        for (Schema.Field f : s.getFields())
          fields.add(identifier(f.name()) + " " + of(f.schema()));
        yield fields.toString();
      }
      case UNION -> {
        Schema nonNull = null;
        for (Schema branch : s.getTypes()) {
          if (branch.getType() == Schema.Type.NULL) continue;
          if (nonNull != null) throw new IllegalArgumentException("no SQL type for " + s);
          nonNull = branch;
        }
        if (nonNull == null) throw new IllegalArgumentException("no SQL type for " + s);
        yield of(nonNull);
      }
      case NULL -> throw new IllegalArgumentException("no SQL type for " + s);
    };
  }

  static String identifier(String name) {
    return "\"" + name.replace("\"", "\"\"") + "\"";
  }

  static String literal(String s) {
    return "'" + s.replace("'", "''") + "'";
  }
}
