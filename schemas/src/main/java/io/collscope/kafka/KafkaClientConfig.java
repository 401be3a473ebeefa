package io.collscope.kafka;

import java.io.IOException;
import java.io.Reader;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * The standard Kafka client properties of a {@code --kafka-config FILE} (TLS, SASL, timeouts: any
 * producer, consumer or admin setting), added to what every collscope client sets itself. The
 * connection's own keys stay collscope's ({@link #RESERVED}: the bootstrap servers come from {@code
 * --bootstrap}, the serialisers from the code). A file named by no option is taken from {@value
 * #ENV}.
 *
 * <p>Secrets are never shown: {@link #toString} names the file and its keys, values of keys that
 * can hold a secret replaced by {@code [hidden]}.
 */
public final class KafkaClientConfig implements Serializable {

  private static final long serialVersionUID = 1L;

  /** The environment variable naming a properties file when no option does. */
  public static final String ENV = "COLLSCOPE_KAFKA_CONFIG";

  /** Keys the file may not set: collscope's own wiring of each client. */
  public static final Set<String> RESERVED =
      Set.of(
          "bootstrap.servers",
          "key.serializer",
          "value.serializer",
          "key.deserializer",
          "value.deserializer");

  private static final KafkaClientConfig NONE = new KafkaClientConfig(null, Map.of());

  private final String source;
  private final Map<String, String> properties;

  private KafkaClientConfig(String source, Map<String, String> properties) {
    this.source = source;
    this.properties = Collections.unmodifiableMap(new TreeMap<>(properties));
  }

  /** No extra properties: a plaintext, anonymous connection. */
  public static KafkaClientConfig none() {
    return NONE;
  }

  /**
   * The properties of {@code file}.
   *
   * @throws IllegalArgumentException with a one-line reason when it cannot be read or sets a
   *     reserved key
   */
  public static KafkaClientConfig load(Path file) {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read Kafka client properties " + file + ": " + e.getMessage());
    }
    Map<String, String> m = new HashMap<>();
    for (String k : p.stringPropertyNames()) {
      if (RESERVED.contains(k)) {
        throw new IllegalArgumentException(
            file
                + " sets "
                + k
                + ", which collscope sets itself (use --bootstrap for the servers)");
      }
      m.put(k, p.getProperty(k).trim());
    }
    return new KafkaClientConfig(file.toString(), m);
  }

  /**
   * {@code option} when given, else the file named by {@value #ENV} when set, else {@link #none}.
   */
  public static KafkaClientConfig fromOptionOrEnv(Path option) {
    if (option != null) return load(option);
    String env = System.getenv(ENV);
    return env == null || env.isBlank() ? none() : load(Path.of(env));
  }

  /** Same as {@link #load}, or {@link #none} for a null or empty path (the job's option). */
  public static KafkaClientConfig loadOrNone(String path) {
    return path == null || path.isBlank() ? none() : load(Path.of(path));
  }

  /** The file the properties came from, or "" for {@link #none}: what the job's option takes. */
  public String file() {
    return source == null ? "" : source;
  }

  public boolean isEmpty() {
    return properties.isEmpty();
  }

  /** The file's properties (secrets included: hand them to a client, never to a log). */
  public Map<String, String> properties() {
    return properties;
  }

  /** {@code base} with this file's properties added (they win over base's, reserved keys aside). */
  public Map<String, Object> applyTo(Map<String, Object> base) {
    Map<String, Object> m = new HashMap<>(base);
    m.putAll(properties);
    return m;
  }

  /** The file's properties as {@link Properties}. */
  public Properties asProperties() {
    Properties p = new Properties();
    p.putAll(properties);
    return p;
  }

  /** Whether a key's value may be a secret (a password, a key, a JAAS line with credentials). */
  static boolean secret(String key) {
    String k = key.toLowerCase(java.util.Locale.ROOT);
    return k.contains("password")
        || k.contains("jaas")
        || k.contains("secret")
        || k.contains("token")
        || k.endsWith(".key")
        || k.contains("credentials")
        || k.contains("keystore.certificate.chain")
        || k.contains("keystore.key");
  }

  @Override
  public String toString() {
    if (source == null) return "no Kafka client properties";
    Map<String, String> shown = new TreeMap<>();
    properties.forEach((k, v) -> shown.put(k, secret(k) ? "[hidden]" : v));
    return source + " " + shown;
  }
}
