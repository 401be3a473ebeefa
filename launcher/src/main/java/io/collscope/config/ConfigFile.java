package io.collscope.config;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * collscope's configuration file, {@code conf/collscope.properties} (docs/CONFIG.md): flat keys,
 * one per option, {@code NAME} for every command that has the option {@code --NAME}, {@code
 * COMMAND.NAME} (e.g. {@code emit.ranks}, {@code history.latency.since}) for one command, and
 * {@code attribution.NAME} for the attribution job. Found at {@code $COLLSCOPE_CONFIG}, else at
 * {@code $COLLSCOPE_HOME/conf/collscope.properties} (bin/collscope sets COLLSCOPE_HOME), else there
 * is none and every option has its environment variable or its default.
 */
public final class ConfigFile {

  /** The environment variable naming the file. */
  public static final String ENV_CONFIG = "COLLSCOPE_CONFIG";

  /** The installation's folder; its conf/collscope.properties is the file by default. */
  public static final String ENV_HOME = "COLLSCOPE_HOME";

  public static final String DEFAULT_RELATIVE_PATH = "conf/collscope.properties";

  private static final ConfigFile NONE = new ConfigFile(null, Map.of());

  private final Path path;
  private final Map<String, String> entries;

  private ConfigFile(Path path, Map<String, String> entries) {
    this.path = path;
    this.entries = Collections.unmodifiableMap(entries);
  }

  /** No file: every option from its environment variable or default. */
  public static ConfigFile none() {
    return NONE;
  }

  /**
   * The file the environment names: {@code $COLLSCOPE_CONFIG} (which must exist), else {@code
   * $COLLSCOPE_HOME/conf/collscope.properties} if it exists, else none.
   */
  public static ConfigFile locate(Map<String, String> env) {
    String named = env.get(ENV_CONFIG);
    if (named != null && !named.isBlank()) {
      Path p = Path.of(named);
      if (!Files.isRegularFile(p)) {
        throw new ConfigFileException(ENV_CONFIG + "=" + named + ": no such file");
      }
      return load(p);
    }
    String home = env.get(ENV_HOME);
    if (home != null && !home.isBlank()) {
      Path p = Path.of(home).resolve(DEFAULT_RELATIVE_PATH);
      if (Files.isRegularFile(p)) return load(p);
    }
    return NONE;
  }

  /** Reads a file in {@link Properties} syntax; values are trimmed. */
  public static ConfigFile load(Path path) {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
    }
    Map<String, String> entries = new TreeMap<>();
    for (String k : p.stringPropertyNames()) entries.put(k.trim(), p.getProperty(k).trim());
    return new ConfigFile(path, entries);
  }

  /** From entries, for tests. */
  public static ConfigFile of(Path path, Map<String, String> entries) {
    return new ConfigFile(path, new TreeMap<>(entries));
  }

  public Optional<Path> path() {
    return Optional.ofNullable(path);
  }

  /** The file's name for messages ("conf/collscope.properties"), or "(no file)". */
  public String describe() {
    return path == null ? "(no configuration file)" : path.toString();
  }

  public Optional<String> get(String key) {
    return Optional.ofNullable(entries.get(key));
  }

  /** Every key and value, sorted by key. */
  public Map<String, String> entries() {
    return entries;
  }

  /** The file cannot be used: a one-line reason. */
  public static final class ConfigFileException extends IllegalArgumentException {
    public ConfigFileException(String message) {
      super(message);
    }
  }
}
