package io.collscope.flink.alert;

import io.collscope.avro.Attribution;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Latency baselines in a file, so a job deployed afresh judges its communicators from the first
 * window instead of relearning for a minute. One line per baseline, after a header line:
 *
 * <pre>scope,cluster,job,communicator,collective,world_size,bytes_per_call,median_us,mad_us,windows
 * </pre>
 *
 * <ul>
 *   <li>{@code scope=communicator}: one communicator at one message size (its own history).
 *   <li>{@code scope=class}: pooled over every communicator of a cluster that ran the same
 *       collective (its name carries the dtype, e.g. {@code allreduce_oneshot_bf16}) with the same
 *       world size and message size; job and communicator are empty. A communicator without a row
 *       of its own — a new job, a new communicator — starts from its class's, so it is judged from
 *       its first window like the rest of the cluster. Pooled per exact message size, not per size
 *       bucket: within a factor-of-two bucket latency still differs by up to 2×, too much to judge
 *       by; the alerts' {@code size_bucket} label is for routing, not for this.
 * </ul>
 *
 * The pooled median is the median of the communicators' medians, and its deviation the larger of
 * their typical deviation and the deviation of their medians (communicators on different hosts
 * differ; a seed must not be tighter than that). {@link #learn} makes both kinds from attributed
 * windows with the job's rule (windows without findings or missing ranks), e.g. a recorded run
 * replayed, or the history; the job reads the file with {@code --baseline-file}. Files of the first
 * format ({@code cluster,job,communicator,bytes_per_call,median_us,mad_us,windows}) are still read,
 * as communicator rows.
 */
public final class BaselineFile implements Serializable {

  public static final String HEADER =
      "scope,cluster,job,communicator,collective,world_size,bytes_per_call,median_us,mad_us,windows";

  /** The header of the first format (communicator rows only, no collective or world size). */
  static final String HEADER_V1 =
      "cluster,job,communicator,bytes_per_call,median_us,mad_us,windows";

  public static final String SCOPE_COMMUNICATOR = "communicator";
  public static final String SCOPE_CLASS = "class";

  /** One line. For a class row, {@code key} has an empty job and communicator. */
  public record Row(
      String scope,
      CommunicatorKey key,
      String collective,
      int worldSize,
      long bytesPerCall,
      double medianUs,
      double madUs,
      int windows)
      implements Serializable {

    public boolean pooled() {
      return SCOPE_CLASS.equals(scope);
    }
  }

  private final Map<String, Row> rows;

  private BaselineFile(Map<String, Row> rows) {
    this.rows = rows;
  }

  public static BaselineFile empty() {
    return new BaselineFile(new HashMap<>());
  }

  public static BaselineFile of(List<Row> rows) {
    Map<String, Row> m = new HashMap<>();
    for (Row r : rows) m.put(id(r), r);
    return new BaselineFile(m);
  }

  public static BaselineFile read(Path file) throws IOException {
    List<Row> rows = new ArrayList<>();
    int no = 0;
    boolean v1 = false;
    for (String line : Files.readAllLines(file)) {
      no++;
      if (line.isBlank() || line.startsWith("#")) continue;
      if (line.equals(HEADER)) continue;
      if (line.equals(HEADER_V1)) {
        v1 = true;
        continue;
      }
      String[] f = line.split(",", -1);
      try {
        rows.add(v1 ? rowV1(f) : row(f));
      } catch (RuntimeException e) {
        throw new IOException(
            file + ":" + no + ": expected " + (v1 ? HEADER_V1 : HEADER) + ", got: " + line);
      }
    }
    return of(rows);
  }

  private static Row row(String[] f) {
    if (f.length != 10) throw new IllegalArgumentException("10 fields");
    String scope = f[0];
    if (!scope.equals(SCOPE_COMMUNICATOR) && !scope.equals(SCOPE_CLASS)) {
      throw new IllegalArgumentException("scope");
    }
    return new Row(
        scope,
        new CommunicatorKey(f[1], f[2], f[3]),
        f[4],
        Integer.parseInt(f[5]),
        Long.parseLong(f[6]),
        Double.parseDouble(f[7]),
        Double.parseDouble(f[8]),
        Integer.parseInt(f[9]));
  }

  private static Row rowV1(String[] f) {
    if (f.length != 7) throw new IllegalArgumentException("7 fields");
    return new Row(
        SCOPE_COMMUNICATOR,
        new CommunicatorKey(f[0], f[1], f[2]),
        "",
        0,
        Long.parseLong(f[3]),
        Double.parseDouble(f[4]),
        Double.parseDouble(f[5]),
        Integer.parseInt(f[6]));
  }

  /**
   * The seeded baseline of a communicator at a message size: its own row, else its class's
   * (cluster, collective, world size, message size), else null.
   */
  public WindowBaseline seed(
      CommunicatorKey key, String collective, int worldSize, long bytesPerCall, int capacity) {
    Row r = rows.get(communicatorId(key, bytesPerCall));
    if (r == null) r = rows.get(classId(key.cluster(), collective, worldSize, bytesPerCall));
    if (r == null) return null;
    return WindowBaseline.seeded(capacity, bytesPerCall, r.medianUs(), r.madUs(), r.windows());
  }

  public int size() {
    return rows.size();
  }

  /**
   * Baselines from attributed windows, as the job learns them: the last {@code capacity} windows of
   * each communicator and message size that had no finding and no missing rank, after its first
   * {@link AlertFunction#WARMUP_WINDOWS}; then, for every class with at least one such
   * communicator, the pooled row.
   */
  public static List<Row> learn(List<Attribution> windows, int capacity) {
    return learning(windows, capacity).rows();
  }

  /**
   * What {@link #learn} made of the windows: its rows, and how many windows it passed over and why,
   * so that a user who gets no baseline is told the reason (a history of faulty windows only, or
   * too short a one) rather than handed an empty file.
   */
  public record Learning(
      List<Row> rows, int windows, int warmingUp, int withFindings, int withoutLatency) {
    /** The windows a baseline was learnt from. */
    public int used() {
      return windows - warmingUp - withFindings - withoutLatency;
    }
  }

  /** {@link #learn}, with its account of the windows it passed over. */
  public static Learning learning(List<Attribution> windows, int capacity) {
    Map<String, WindowBaseline> learnt = new LinkedHashMap<>();
    Map<String, Attribution> firstOf = new HashMap<>();
    List<Attribution> sorted = new ArrayList<>(windows);
    sorted.sort(Comparator.comparing(Attribution::getWindowEnd));
    Map<CommunicatorKey, Integer> seen = new HashMap<>();
    int warmingUp = 0, withFindings = 0, withoutLatency = 0;
    for (Attribution a : sorted) {
      int before = seen.merge(CommunicatorKey.of(a), 1, Integer::sum) - 1;
      if (before < AlertFunction.WARMUP_WINDOWS) {
        warmingUp++;
        continue;
      }
      if (!a.getFindings().isEmpty() || !a.getMissingRanks().isEmpty()) {
        withFindings++;
        continue;
      }
      double latency = AlertFunction.latencyUs(a);
      if (latency <= 0) {
        withoutLatency++;
        continue;
      }
      String id = communicatorId(CommunicatorKey.of(a), a.getBytesPerCall());
      firstOf.putIfAbsent(id, a);
      learnt
          .computeIfAbsent(id, k -> WindowBaseline.of(capacity))
          .add(a.getBytesPerCall(), latency, AlertFunction.phaseMedians(a));
    }
    List<Row> rows = new ArrayList<>();
    Map<String, List<Row>> byClass = new LinkedHashMap<>();
    for (Map.Entry<String, WindowBaseline> e : learnt.entrySet()) {
      WindowBaseline b = e.getValue();
      Attribution a = firstOf.get(e.getKey());
      Row r =
          new Row(
              SCOPE_COMMUNICATOR,
              CommunicatorKey.of(a),
              AlertFunction.collective(a),
              a.getWorldSize(),
              b.bytesPerCall,
              b.median(),
              b.spread() / 1.4826,
              b.size);
      rows.add(r);
      byClass
          .computeIfAbsent(
              classId(r.key().cluster(), r.collective(), r.worldSize(), r.bytesPerCall()),
              k -> new ArrayList<>())
          .add(r);
    }
    for (List<Row> members : byClass.values()) rows.add(pool(members));
    return new Learning(rows, sorted.size(), warmingUp, withFindings, withoutLatency);
  }

  /** The class row of communicator rows of one class. */
  static Row pool(List<Row> members) {
    double[] medians = members.stream().mapToDouble(Row::medianUs).toArray();
    double[] mads = members.stream().mapToDouble(Row::madUs).toArray();
    double median = AlertFunction.median(medians);
    double[] dev = Arrays.stream(medians).map(m -> Math.abs(m - median)).toArray();
    Row first = members.get(0);
    return new Row(
        SCOPE_CLASS,
        new CommunicatorKey(first.key().cluster(), "", ""),
        first.collective(),
        first.worldSize(),
        first.bytesPerCall(),
        median,
        Math.max(AlertFunction.median(mads), AlertFunction.median(dev)),
        members.stream().mapToInt(Row::windows).sum());
  }

  public static String format(List<Row> rows) {
    StringBuilder sb = new StringBuilder(HEADER).append('\n');
    for (Row r : rows) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%s,%s,%s,%s,%s,%d,%d,%.3f,%.3f,%d%n",
              r.scope(),
              r.key().cluster(),
              r.key().job(),
              r.key().communicator(),
              r.collective(),
              r.worldSize(),
              r.bytesPerCall(),
              r.medianUs(),
              r.madUs(),
              r.windows()));
    }
    return sb.toString();
  }

  private static String id(Row r) {
    return r.pooled()
        ? classId(r.key().cluster(), r.collective(), r.worldSize(), r.bytesPerCall())
        : communicatorId(r.key(), r.bytesPerCall());
  }

  private static String communicatorId(CommunicatorKey key, long bytesPerCall) {
    return "communicator|" + key + "@" + bytesPerCall;
  }

  private static String classId(String cluster, String collective, int worldSize, long bytes) {
    return "class|" + cluster + "|" + collective + "|" + worldSize + "@" + bytes;
  }
}
