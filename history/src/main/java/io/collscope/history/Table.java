package io.collscope.history;

import java.sql.Array;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Struct;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A query's answer held in memory: column names and rows of plain Java values (String, Number,
 * Boolean, Instant, List, Map, or null), whatever produced it.
 */
public record Table(List<String> columns, List<List<Object>> rows) {

  /** Reads every row of {@code rs}, turning DuckDB's values into plain ones. */
  public static Table of(ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    List<String> columns = new ArrayList<>();
    for (int i = 1; i <= md.getColumnCount(); i++) columns.add(md.getColumnLabel(i));
    List<List<Object>> rows = new ArrayList<>();
    while (rs.next()) {
      List<Object> row = new ArrayList<>(columns.size());
      for (int i = 1; i <= columns.size(); i++) row.add(plain(rs.getObject(i)));
      rows.add(row);
    }
    return new Table(List.copyOf(columns), rows);
  }

  public int column(String name) {
    int i = columns.indexOf(name);
    if (i < 0) throw new IllegalArgumentException("no column " + name + " in " + columns);
    return i;
  }

  static Object plain(Object v) throws SQLException {
    if (v instanceof OffsetDateTime t) return t.toInstant();
    if (v instanceof java.sql.Timestamp t) return t.toInstant();
    if (v instanceof Instant
        || v instanceof String
        || v instanceof Number
        || v instanceof Boolean
        || v == null) {
      return v;
    }
    if (v instanceof Array a) {
      Object[] items = (Object[]) a.getArray();
      List<Object> out = new ArrayList<>(items.length);
      for (Object o : items) out.add(plain(o));
      return out;
    }
    if (v instanceof Struct s) {
      Map<String, Object> out = new LinkedHashMap<>();
      if (s instanceof org.duckdb.DuckDBStruct ds) {
        for (Map.Entry<String, Object> e : ds.getMap().entrySet()) {
          out.put(e.getKey(), plain(e.getValue()));
        }
      } else {
        Object[] attrs = s.getAttributes();
        for (int i = 0; i < attrs.length; i++) out.put(Integer.toString(i), plain(attrs[i]));
      }
      return out;
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : m.entrySet())
        out.put(String.valueOf(e.getKey()), plain(e.getValue()));
      return out;
    }
    if (v instanceof Object[] arr) return plain(Arrays.asList(arr));
    if (v instanceof List<?> l) {
      List<Object> out = new ArrayList<>(l.size());
      for (Object o : l) out.add(plain(o));
      return out;
    }
    return v.toString();
  }
}
