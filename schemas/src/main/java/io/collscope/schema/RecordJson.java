package io.collscope.schema;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Base64;
import java.util.Collection;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;

/**
 * One-line JSON for any Avro record, with field names as in the schema. Timestamps become epoch
 * milliseconds and bytes become base64, so every line is valid JSON (Avro's own toString is not,
 * for logical types).
 */
public final class RecordJson {

  private RecordJson() {}

  public static String toJson(IndexedRecord r) {
    StringBuilder sb = new StringBuilder(256);
    write(r, sb);
    return sb.toString();
  }

  public static void write(Object v, StringBuilder sb) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof IndexedRecord r) {
      sb.append('{');
      boolean first = true;
      for (Schema.Field f : r.getSchema().getFields()) {
        if (!first) sb.append(',');
        first = false;
        string(f.name(), sb);
        sb.append(':');
        write(r.get(f.pos()), sb);
      }
      sb.append('}');
    } else if (v instanceof Collection<?> c) {
      sb.append('[');
      boolean first = true;
      for (Object o : c) {
        if (!first) sb.append(',');
        first = false;
        write(o, sb);
      }
      sb.append(']');
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) sb.append(',');
        first = false;
        string(String.valueOf(e.getKey()), sb);
        sb.append(':');
        write(e.getValue(), sb);
      }
      sb.append('}');
    } else if (v instanceof Instant i) {
      sb.append(i.toEpochMilli());
    } else if (v instanceof ByteBuffer b) {
      ByteBuffer d = b.duplicate();
      byte[] bytes = new byte[d.remaining()];
      d.get(bytes);
      string(Base64.getEncoder().encodeToString(bytes), sb);
    } else if (v instanceof Double d) {
      sb.append(
          d.isNaN() || d.isInfinite() ? "null" : String.format(java.util.Locale.ROOT, "%.3f", d));
    } else if (v instanceof Float f) {
      write(f.doubleValue(), sb);
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else {
      string(v.toString(), sb);
    }
  }

  public static void string(String s, StringBuilder sb) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
