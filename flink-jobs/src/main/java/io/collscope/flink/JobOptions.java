package io.collscope.flink;

import io.collscope.flink.attribution.Thresholds;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The attribution job's options: named constants with defaults, read from {@code --name value}
 * arguments. Unknown names are rejected so a typo never silently runs with a default.
 */
public final class JobOptions {

  public static final String BOOTSTRAP = "bootstrap";
  public static final String SNAPSHOT_TOPIC = "snapshot-topic";

  /** The emitters' GpuHealth records, read beside the snapshots (absent: no hardware evidence). */
  public static final String HEALTH_TOPIC = "health-topic";

  public static final String RANK_WINDOW_TOPIC = "rank-window-topic";
  public static final String ATTRIBUTION_TOPIC = "attribution-topic";
  public static final String DEADLETTER_TOPIC = "deadletter-topic";
  public static final String ALERT_TOPIC = "alert-topic";

  /** SLOWER windows (or windows with the same culprit) in a row that fire an alert. */
  public static final String ALERT_FIRE_AFTER = "alert-fire-after";

  /** PARITY windows (or windows without the culprit) in a row that resolve it. */
  public static final String ALERT_RESOLVE_AFTER = "alert-resolve-after";

  /** The smallest regression of the latency that counts, as a share (0.05: 5 %). */
  public static final String ALERT_MIN_EFFECT = "alert-min-effect";

  /**
   * How many standard deviations of the baseline's window-to-window spread a regression must exceed
   * (the band is the larger of this times the spread and the minimum effect).
   */
  public static final String ALERT_NOISE_FACTOR = "alert-noise-factor";

  /**
   * Latency baselines to start from (a file of {@code collscope baselines}, see BaselineFile);
   * empty: every communicator learns its own from its first clean windows.
   */
  public static final String BASELINE_FILE = "baseline-file";

  /**
   * Base path of the history (rank windows, attributions and alerts as Parquet, see
   * docs/HISTORY.md): a local directory, or any URI of a file system the cluster has ({@code
   * s3://...}, {@code hdfs://...}). Empty: no history is written.
   */
  public static final String HISTORY_PATH = "history-path";

  /**
   * A file of standard Kafka client properties (TLS, SASL; see docs/RELIABILITY.md) for the job's
   * source and sinks, read where the job is submitted and shipped with it. Files it names (trust
   * and key stores) must be at the same path on every TaskManager. Empty: plaintext, anonymous.
   */
  public static final String KAFKA_CONFIG = "kafka-config";

  public static final String GROUP_ID = "group-id";
  public static final String WINDOW = "window";
  public static final String OUT_OF_ORDERNESS = "out-of-orderness";
  public static final String IDLENESS = "idleness";

  /**
   * How long past a window's end (event time) a window that lacks some of its communicator's ranks
   * waits for them: a rank whose records reach the job after the watermark (a lagging reporter, a
   * spool draining after an outage) is attributed with its window instead of being read as missing.
   * Complete windows do not wait. Default 2 s, the out-of-orderness again: a rank may trail the
   * fastest by twice the bound the watermark allows for before it reads as missing.
   */
  public static final String LATE_RANK_GRACE = "late-rank-grace";

  public static final String CHECKPOINT_INTERVAL = "checkpoint-interval";
  public static final String MIN_EXCESS_US = "min-excess-us";

  /**
   * Where the job's checkpoints go: a directory every JobManager and TaskManager reaches ({@code
   * s3://...}, {@code hdfs://...}, a shared mount). Empty: the cluster's {@code
   * execution.checkpointing.dir}; a cluster with neither is refused (CheckpointStorageSettings).
   */
  public static final String CHECKPOINT_DIR = "checkpoint-dir";

  /**
   * The smallest excess lateness (µs per collective) a finding needs, for counters with per-peer
   * tails; the rule raises it with the collective's cost and the window's noise. Set it to half the
   * detection floor you want: see docs/ACCURACY.md.
   */
  public static final String ABS_FLOOR_US = "abs-floor-us";

  public static final String TRANSACTIONAL_ID_PREFIX = "transactional-id-prefix";

  /**
   * Event time after its last record at which a rank's or a communicator's state is dropped. Six
   * windows at the defaults: long enough that a rank whose reporter lags a few intervals keeps its
   * baseline, short enough that a cluster's finished jobs leave no state behind.
   */
  public static final String STATE_TTL = "state-ttl";

  public static final Map<String, String> DEFAULTS =
      Map.ofEntries(
          Map.entry(BOOTSTRAP, "localhost:9092"),
          Map.entry(SNAPSHOT_TOPIC, "collscope.snapshots"),
          Map.entry(HEALTH_TOPIC, "collscope.gpu-health"),
          Map.entry(RANK_WINDOW_TOPIC, "collscope.rank-windows"),
          Map.entry(ATTRIBUTION_TOPIC, "collscope.attribution"),
          Map.entry(DEADLETTER_TOPIC, "collscope.deadletter"),
          Map.entry(ALERT_TOPIC, "collscope.alerts"),
          Map.entry(ALERT_FIRE_AFTER, "3"),
          Map.entry(ALERT_RESOLVE_AFTER, "3"),
          Map.entry(ALERT_MIN_EFFECT, "0.03"),
          Map.entry(ALERT_NOISE_FACTOR, "3"),
          Map.entry(BASELINE_FILE, ""),
          Map.entry(HISTORY_PATH, ""),
          Map.entry(KAFKA_CONFIG, ""),
          Map.entry(GROUP_ID, "collscope-attribution"),
          Map.entry(WINDOW, "10s"),
          Map.entry(OUT_OF_ORDERNESS, "2s"),
          Map.entry(IDLENESS, "5s"),
          Map.entry(LATE_RANK_GRACE, "2s"),
          Map.entry(CHECKPOINT_INTERVAL, "5s"),
          Map.entry(CHECKPOINT_DIR, ""),
          Map.entry(MIN_EXCESS_US, "20"),
          Map.entry(ABS_FLOOR_US, "5"),
          Map.entry(TRANSACTIONAL_ID_PREFIX, "collscope-attribution"),
          Map.entry(STATE_TTL, "60s"));

  private final Map<String, String> values;

  private JobOptions(Map<String, String> values) {
    this.values = values;
  }

  public static JobOptions defaults() {
    return new JobOptions(new TreeMap<>(DEFAULTS));
  }

  /**
   * The argument naming collscope's configuration file ({@code conf/collscope.properties}, see
   * docs/CONFIG.md): its {@code attribution.NAME} keys, and its unqualified {@code NAME} keys that
   * are options of this job, lie between the defaults and the arguments.
   */
  public static final String CONFIG = "config";

  /** The prefix of the job's own keys in collscope's configuration file. */
  public static final String CONFIG_PREFIX = "attribution.";

  /** Parses {@code --name value} pairs over the configuration file's values and the defaults. */
  public static JobOptions parse(String... args) {
    Map<String, String> v = new TreeMap<>(DEFAULTS);
    Set<String> known = DEFAULTS.keySet();
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--" + CONFIG)) v.putAll(fromConfigFile(java.nio.file.Path.of(args[++i])));
    }
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument '" + a + "'");
      }
      String name = a.substring(2);
      if (name.equals(CONFIG) && i + 1 < args.length) {
        i++;
        continue;
      }
      if (!known.contains(name)) {
        throw new IllegalArgumentException("unknown option '" + a + "' (known: " + known + ")");
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("option '" + a + "' needs a value");
      }
      v.put(name, args[++i]);
    }
    JobOptions o = new JobOptions(v);
    o.duration(WINDOW);
    o.duration(OUT_OF_ORDERNESS);
    o.duration(IDLENESS);
    o.duration(LATE_RANK_GRACE);
    o.duration(CHECKPOINT_INTERVAL);
    o.minExcessUs();
    o.stateTtl();
    o.kafkaClient();
    return o;
  }

  /**
   * The job's values in a collscope configuration file: {@code attribution.NAME} (an unknown NAME
   * is an error) over the unqualified {@code NAME} keys this job has (the others are other
   * commands').
   */
  public static Map<String, String> fromConfigFile(java.nio.file.Path file) {
    java.util.Properties p = new java.util.Properties();
    try (java.io.Reader r =
        java.nio.file.Files.newBufferedReader(file, java.nio.charset.StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("--" + CONFIG + " " + file + ": " + e.getMessage());
    }
    Map<String, String> v = new TreeMap<>();
    for (String key : p.stringPropertyNames()) {
      if (!key.contains(".") && DEFAULTS.containsKey(key)) v.put(key, p.getProperty(key).trim());
    }
    for (String key : p.stringPropertyNames()) {
      if (!key.startsWith(CONFIG_PREFIX)) continue;
      String name = key.substring(CONFIG_PREFIX.length());
      if (!DEFAULTS.containsKey(name)) {
        throw new IllegalArgumentException(
            file + ": unknown key '" + key + "' (known: " + DEFAULTS.keySet() + ")");
      }
      v.put(name, p.getProperty(key).trim());
    }
    return v;
  }

  public JobOptions with(String name, String value) {
    if (!DEFAULTS.containsKey(name)) throw new IllegalArgumentException("unknown option " + name);
    Map<String, String> v = new TreeMap<>(values);
    v.put(name, value);
    return new JobOptions(v);
  }

  public String get(String name) {
    return values.get(name);
  }

  public Duration duration(String name) {
    String s = values.get(name).trim();
    try {
      if (s.endsWith("ms"))
        return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
      if (s.endsWith("s"))
        return Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
      if (s.endsWith("m"))
        return Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1)));
    } catch (NumberFormatException e) {
      // fall through
    }
    throw new IllegalArgumentException(
        "--" + name + " '" + s + "' is not a duration (e.g. 500ms, 10s, 1m)");
  }

  /**
   * {@link #STATE_TTL}, at least one window plus the out-of-orderness and the late-rank grace (else
   * windows lose ranks).
   */
  public Duration stateTtl() {
    Duration ttl = duration(STATE_TTL);
    Duration min =
        duration(WINDOW).plus(duration(OUT_OF_ORDERNESS)).plus(duration(LATE_RANK_GRACE));
    if (ttl.compareTo(min) < 0) {
      throw new IllegalArgumentException(
          "--"
              + STATE_TTL
              + " "
              + values.get(STATE_TTL)
              + " must be at least --window plus --out-of-orderness plus --late-rank-grace ("
              + min.toMillis()
              + "ms)");
    }
    return ttl;
  }

  /** The client properties of {@link #KAFKA_CONFIG}, read now. */
  public io.collscope.kafka.KafkaClientConfig kafkaClient() {
    try {
      return io.collscope.kafka.KafkaClientConfig.loadOrNone(values.get(KAFKA_CONFIG));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--" + KAFKA_CONFIG + ": " + e.getMessage());
    }
  }

  public double minExcessUs() {
    return positive(MIN_EXCESS_US);
  }

  /** The baselines of --baseline-file, read now (the job ships them with its operators). */
  public io.collscope.flink.alert.BaselineFile baselines() {
    String f = values.get(BASELINE_FILE);
    if (f == null || f.isEmpty()) return io.collscope.flink.alert.BaselineFile.empty();
    try {
      return io.collscope.flink.alert.BaselineFile.read(java.nio.file.Path.of(f));
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("--" + BASELINE_FILE + ": " + e.getMessage());
    }
  }

  /** The regression rule with this job's minimum effect and noise factor. */
  public io.collscope.flink.alert.RegressionRule regressionRule() {
    io.collscope.flink.alert.RegressionRule d = io.collscope.flink.alert.RegressionRule.DEFAULT;
    return new io.collscope.flink.alert.RegressionRule(
        d.minWindows(),
        d.minCalls(),
        positive(ALERT_MIN_EFFECT),
        positive(ALERT_NOISE_FACTOR),
        d.maxNoise());
  }

  public int count(String name) {
    double d = positive(name);
    if (d != Math.rint(d))
      throw new IllegalArgumentException("--" + name + " must be a whole number");
    return (int) d;
  }

  public double absFloorUs() {
    return positive(ABS_FLOOR_US);
  }

  /** The attribution rule's thresholds with this job's floors. */
  public Thresholds thresholds() {
    return Thresholds.DEFAULT.withMinExcessUs(minExcessUs()).withAbsFloorUs(absFloorUs());
  }

  private double positive(String name) {
    try {
      double d = Double.parseDouble(values.get(name));
      if (d <= 0) throw new NumberFormatException();
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + " must be a positive number");
    }
  }

  @Override
  public String toString() {
    return values.toString();
  }
}
