package io.collscope.config;

import java.lang.reflect.AnnotatedElement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The configuration file as picocli's source of default values, so that every option of every
 * command resolves as flag &gt; environment variable &gt; file &gt; built-in default. Options name
 * their environment variable in their default, {@code ${env:COLLSCOPE_RANKS:-4}}: when that
 * variable is set, its value is the default; otherwise the file's most specific key for the option
 * wins ({@code history.latency.since}, then {@code history.since}, then {@code since}).
 */
public final class ConfigDefaultProvider implements CommandLine.IDefaultValueProvider {

  /** Where an option's value came from. */
  public enum Source {
    FLAG,
    ENVIRONMENT,
    FILE,
    DEFAULT
  }

  /**
   * An option's value and its origin.
   *
   * @param detail the environment variable or the file's key; empty for flags and defaults
   */
  public record Resolved(String value, Source source, String detail) {}

  private static final Pattern ENV_DEFAULT =
      Pattern.compile("\\$\\{env:([A-Za-z0-9_]+):-(.*)}", Pattern.DOTALL);

  private final ConfigFile file;
  private final Map<String, String> env;

  /** The file keys whose values this provider handed to picocli, for error messages. */
  private final Map<ArgSpec, String> handedOut =
      Collections.synchronizedMap(new IdentityHashMap<>());

  private final String unreadableFile;

  public ConfigDefaultProvider(ConfigFile file, Map<String, String> env, String unreadableFile) {
    this.file = file;
    this.env = env;
    this.unreadableFile = unreadableFile;
  }

  /** Why the file the environment named could not be read, if it could not. */
  public Optional<String> unreadableFile() {
    return Optional.ofNullable(unreadableFile);
  }

  public ConfigFile file() {
    return file;
  }

  /** The environment it reads. */
  public Map<String, String> env() {
    return env;
  }

  @Override
  public String defaultValue(ArgSpec arg) {
    if (!(arg instanceof OptionSpec o)) return null;
    Resolved r = resolve(o);
    // The environment's value too: the same one picocli's ${env:...} would read, from the
    // environment this provider was given.
    if (r.source() == Source.DEFAULT) return null;
    if (r.source() == Source.FILE) handedOut.put(o, r.detail());
    return r.value();
  }

  /** The key of the file whose value {@code arg} got, if it got one. */
  public Optional<String> fileKeyOf(ArgSpec arg) {
    return Optional.ofNullable(handedOut.get(arg));
  }

  /** The value an option has when its flag is not given, and where it comes from. */
  public Resolved resolve(OptionSpec o) {
    String raw = annotatedDefault(o);
    Matcher m = raw == null ? null : ENV_DEFAULT.matcher(raw);
    boolean hasEnv = m != null && m.matches();
    if (hasEnv) {
      String v = env.get(m.group(1));
      if (v != null && !v.isEmpty()) return new Resolved(v, Source.ENVIRONMENT, m.group(1));
    }
    for (String key : keys(o)) {
      Optional<String> v = file.get(key);
      if (v.isPresent()) return new Resolved(v.get(), Source.FILE, key);
    }
    String d = hasEnv ? m.group(2) : raw;
    return new Resolved(d, Source.DEFAULT, "");
  }

  /** The environment variable an option reads, if it has one. */
  public static Optional<String> environmentVariable(OptionSpec o) {
    String raw = annotatedDefault(o);
    Matcher m = raw == null ? null : ENV_DEFAULT.matcher(raw);
    return m != null && m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  /**
   * The file's keys for an option, most specific first: {@code history.latency.since}, {@code
   * history.since}, {@code since}. None for options without a long name.
   */
  public static List<String> keys(OptionSpec o) {
    String name = keyName(o);
    if (name == null) return List.of();
    List<String> path = commandPath(o.command());
    List<String> keys = new ArrayList<>();
    for (int n = path.size(); n >= 0; n--) {
      String prefix = String.join(".", path.subList(0, n));
      keys.add(prefix.isEmpty() ? name : prefix + "." + name);
    }
    return keys;
  }

  /** The option's name in the file: its long name without the dashes ({@code --ranks}: ranks). */
  public static String keyName(OptionSpec o) {
    String longest = o.longestName();
    if (!longest.startsWith("--") || o.usageHelp() || o.versionHelp()) return null;
    return longest.substring(2);
  }

  /** The command's names below the root: {@code [history, latency]}. */
  public static List<String> commandPath(CommandSpec c) {
    List<String> path = new ArrayList<>();
    for (CommandSpec s = c; s != null && s.parent() != null; s = s.parent()) path.add(0, s.name());
    return path;
  }

  /** What picocli's annotations hold when an option has no default. */
  private static final String NO_DEFAULT = "__no_default_value__";

  /** The default as written in the option's annotation, before picocli interpolates it. */
  private static String annotatedDefault(OptionSpec o) {
    Object element = o.userObject();
    String d = o.defaultValue();
    if (element instanceof AnnotatedElement ae) {
      CommandLine.Option a = ae.getAnnotation(CommandLine.Option.class);
      if (a != null) d = a.defaultValue();
    }
    return d == null || d.equals(NO_DEFAULT) || d.equals(CommandLine.Option.NULL_VALUE) ? null : d;
  }
}
