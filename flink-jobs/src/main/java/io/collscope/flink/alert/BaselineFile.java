package io.collscope.flink.alert;

import io.collscope.avro.Attribution;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Latency baselines in a file, so a job deployed afresh judges its communicators from the first
 * window instead of relearning for a minute: one line per communicator and message size,
 *
 * <pre>cluster,job,communicator,bytes_per_call,median_us,mad_us,windows</pre>
 *
 * with a header line. {@link #learn} makes one from attributed windows (e.g. a recorded run
 * replayed by {@code collscope baselines}), with the same rule as the job: windows without findings
 * or missing ranks; the job reads it with {@code --baseline-file}.
 */
public final class BaselineFile implements Serializable {

  public static final String HEADER =
      "cluster,job,communicator,bytes_per_call,median_us,mad_us,windows";

  /** One line. */
  public record Row(
      CommunicatorKey key, long bytesPerCall, double medianUs, double madUs, int windows)
      implements Serializable {}

  private final Map<String, Row> rows;

  private BaselineFile(Map<String, Row> rows) {
    this.rows = rows;
  }

  public static BaselineFile empty() {
    return new BaselineFile(new HashMap<>());
  }

  public static BaselineFile read(Path file) throws IOException {
    Map<String, Row> rows = new HashMap<>();
    int no = 0;
    for (String line : Files.readAllLines(file)) {
      no++;
      if (line.isBlank() || line.equals(HEADER) || line.startsWith("#")) continue;
      String[] f = line.split(",", -1);
      try {
        Row r =
            new Row(
                new CommunicatorKey(f[0], f[1], f[2]),
                Long.parseLong(f[3]),
                Double.parseDouble(f[4]),
                Double.parseDouble(f[5]),
                Integer.parseInt(f[6]));
        rows.put(id(r.key(), r.bytesPerCall()), r);
      } catch (RuntimeException e) {
        throw new IOException(file + ":" + no + ": expected " + HEADER + ", got: " + line);
      }
    }
    return new BaselineFile(rows);
  }

  /** The seeded baseline of a communicator at a message size, or null when the file has none. */
  public WindowBaseline seed(CommunicatorKey key, long bytesPerCall, int capacity) {
    Row r = rows.get(id(key, bytesPerCall));
    if (r == null) return null;
    return WindowBaseline.seeded(capacity, bytesPerCall, r.medianUs(), r.madUs(), r.windows());
  }

  public int size() {
    return rows.size();
  }

  /**
   * Baselines from attributed windows, as the job learns them: the last {@code capacity} windows of
   * each communicator and message size that had no finding and no missing rank.
   */
  public static List<Row> learn(List<Attribution> windows, int capacity) {
    Map<String, WindowBaseline> learnt = new LinkedHashMap<>();
    Map<String, CommunicatorKey> keys = new HashMap<>();
    List<Attribution> sorted = new ArrayList<>(windows);
    sorted.sort(java.util.Comparator.comparing(Attribution::getWindowEnd));
    for (Attribution a : sorted) {
      if (!a.getFindings().isEmpty() || !a.getMissingRanks().isEmpty()) continue;
      double latency = AlertFunction.latencyUs(a);
      if (latency <= 0) continue;
      CommunicatorKey key = CommunicatorKey.of(a);
      String id = id(key, a.getBytesPerCall());
      keys.put(id, key);
      learnt
          .computeIfAbsent(id, k -> WindowBaseline.of(capacity))
          .add(a.getBytesPerCall(), latency, AlertFunction.phaseMedians(a));
    }
    List<Row> rows = new ArrayList<>();
    for (Map.Entry<String, WindowBaseline> e : learnt.entrySet()) {
      WindowBaseline b = e.getValue();
      rows.add(
          new Row(keys.get(e.getKey()), b.bytesPerCall, b.median(), b.spread() / 1.4826, b.size));
    }
    return rows;
  }

  public static String format(List<Row> rows) {
    StringBuilder sb = new StringBuilder(HEADER).append('\n');
    for (Row r : rows) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%s,%s,%s,%d,%.3f,%.3f,%d%n",
              r.key().cluster(),
              r.key().job(),
              r.key().communicator(),
              r.bytesPerCall(),
              r.medianUs(),
              r.madUs(),
              r.windows()));
    }
    return sb.toString();
  }

  private static String id(CommunicatorKey key, long bytesPerCall) {
    return key + "@" + bytesPerCall;
  }
}
