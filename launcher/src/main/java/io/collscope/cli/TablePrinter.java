package io.collscope.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.collscope.history.Table;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * How the history commands print a {@link Table}: columns aligned under a header (numbers to the
 * right), CSV (RFC 4180, a header line), or one JSON object per row (as the demo's {@code --json}).
 */
final class TablePrinter {

  /** The {@code --csv} / {@code --json} flags of every history command. */
  static final class Format {
    @Option(names = "--csv", description = "CSV with a header line instead of a table.")
    boolean csv;

    @Option(names = "--json", description = "One JSON object per row instead of a table.")
    boolean json;

    void check() {
      if (csv && json) throw new IllegalArgumentException("--csv and --json exclude each other");
    }

    boolean table() {
      return !csv && !json;
    }
  }

  private static final ObjectMapper JSON =
      new ObjectMapper().disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS);

  private TablePrinter() {}

  static void print(Table t, Format f, PrintWriter out) {
    if (f.json) json(t, out);
    else if (f.csv) csv(t, out);
    else aligned(t, out);
    out.flush();
  }

  static void aligned(Table t, PrintWriter out) {
    int n = t.columns().size();
    List<String[]> cells = new ArrayList<>();
    int[] width = new int[n];
    boolean[] numeric = new boolean[n];
    for (int i = 0; i < n; i++) {
      width[i] = t.columns().get(i).length();
      numeric[i] = !t.rows().isEmpty();
    }
    for (List<Object> row : t.rows()) {
      String[] c = new String[n];
      for (int i = 0; i < n; i++) {
        Object v = row.get(i);
        c[i] = text(v);
        width[i] = Math.max(width[i], c[i].length());
        if (v != null && !(v instanceof Number)) numeric[i] = false;
      }
      cells.add(c);
    }
    StringBuilder header = new StringBuilder();
    for (int i = 0; i < n; i++) pad(header, t.columns().get(i), width[i], numeric[i], i == n - 1);
    out.println(header.toString().stripTrailing());
    for (String[] c : cells) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < n; i++) pad(line, c[i], width[i], numeric[i], i == n - 1);
      out.println(line.toString().stripTrailing());
    }
    out.println("(" + t.rows().size() + (t.rows().size() == 1 ? " row)" : " rows)"));
  }

  private static void pad(StringBuilder sb, String s, int width, boolean right, boolean last) {
    if (right) sb.append(" ".repeat(width - s.length())).append(s);
    else sb.append(s).append(" ".repeat(width - s.length()));
    if (!last) sb.append("  ");
  }

  static void csv(Table t, PrintWriter out) {
    out.println(String.join(",", t.columns().stream().map(TablePrinter::csvField).toList()));
    for (List<Object> row : t.rows()) {
      List<String> fields = new ArrayList<>(row.size());
      for (Object v : row) fields.add(v == null ? "" : csvField(text(v)));
      out.println(String.join(",", fields));
    }
  }

  private static String csvField(String s) {
    if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
      return s;
    }
    return '"' + s.replace("\"", "\"\"") + '"';
  }

  static void json(Table t, PrintWriter out) {
    for (List<Object> row : t.rows()) {
      Map<String, Object> o = new LinkedHashMap<>();
      for (int i = 0; i < t.columns().size(); i++) o.put(t.columns().get(i), jsonValue(row.get(i)));
      try {
        out.println(JSON.writeValueAsString(o));
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  private static Object jsonValue(Object v) {
    if (v instanceof Instant i) return i.toString();
    if (v instanceof Double d && !Double.isFinite(d)) return d.toString();
    return v;
  }

  /** A value as the table and CSV show it: instants ISO-8601 UTC, numbers without exponents. */
  static String text(Object v) {
    if (v == null) return "";
    if (v instanceof Double d) {
      if (!Double.isFinite(d)) return d.toString();
      return BigDecimal.valueOf(d).stripTrailingZeros().toPlainString();
    }
    if (v instanceof Float f) return text(f.doubleValue());
    if (v instanceof BigDecimal b) return b.stripTrailingZeros().toPlainString();
    if (v instanceof List<?> || v instanceof Map<?, ?>) {
      try {
        return JSON.writeValueAsString(v);
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        return v.toString();
      }
    }
    return v.toString();
  }
}
