package io.collscope.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Puts the configuration file under a command line and checks it before the command runs: every key
 * must name an option of some command (or of the attribution job), and every value must convert to
 * that option's type. A problem is one line naming the file and the key; the command line exits
 * with 2 (docs/CONFIG.md).
 */
public final class Config {

  /** Keys whose values {@code config show} masks (credentials of Kafka, Alertmanager, ...). */
  private static final Pattern SECRET =
      Pattern.compile("(password|passwd|secret|token|credential|jaas|private-key)");

  private static final String MASK = "********";

  private Config() {}

  /**
   * The configuration the environment names ({@link ConfigFile#locate}) as the default provider of
   * {@code cl} and all its subcommands. A file that cannot be read is reported by {@link
   * #problems}.
   */
  public static ConfigDefaultProvider install(CommandLine cl, Map<String, String> env) {
    ConfigFile file;
    String problem = null;
    try {
      file = ConfigFile.locate(env);
    } catch (RuntimeException e) {
      file = ConfigFile.none();
      problem = e.getMessage();
    }
    ConfigDefaultProvider p = new ConfigDefaultProvider(file, env, problem);
    cl.setDefaultValueProvider(p);
    return p;
  }

  /** Installs a given file (tests, {@code config show --file}). */
  public static ConfigDefaultProvider install(
      CommandLine cl, ConfigFile file, Map<String, String> env) {
    ConfigDefaultProvider p = new ConfigDefaultProvider(file, env, null);
    cl.setDefaultValueProvider(p);
    return p;
  }

  /**
   * What is wrong with the file, one line each: unknown keys (when {@code rejectUnknown}; {@code
   * otherKeys} are keys of the attribution job that the command line does not have) and values that
   * do not convert to their option's type.
   */
  public static List<String> problems(
      CommandLine root,
      ConfigDefaultProvider provider,
      Set<String> otherKeys,
      boolean rejectUnknown) {
    List<String> problems = new ArrayList<>();
    provider.unreadableFile().ifPresent(problems::add);
    ConfigFile file = provider.file();
    Map<String, List<OptionSpec>> byKey = optionsByKey(root);
    for (Map.Entry<String, String> e : file.entries().entrySet()) {
      String key = e.getKey();
      List<OptionSpec> options = byKey.get(key);
      if (options == null) {
        if (rejectUnknown && !otherKeys.contains(key)) {
          problems.add(file.describe() + ": unknown key '" + key + "'" + suggestion(key, byKey));
        }
        continue;
      }
      for (OptionSpec o : options) {
        String why = conversionProblem(o, e.getValue());
        if (why != null) {
          problems.add(file.describe() + ": key '" + key + "': " + why);
          break;
        }
      }
    }
    return problems;
  }

  /** Every key of the file's syntax that names an option, with the options it sets. */
  public static Map<String, List<OptionSpec>> optionsByKey(CommandLine root) {
    Map<String, List<OptionSpec>> byKey = new java.util.TreeMap<>();
    for (CommandSpec c : commands(root)) {
      for (OptionSpec o : c.options()) {
        for (String k : ConfigDefaultProvider.keys(o)) {
          byKey.computeIfAbsent(k, x -> new ArrayList<>()).add(o);
        }
      }
    }
    return byKey;
  }

  /** The command and all its subcommands, depth first. */
  public static List<CommandSpec> commands(CommandLine root) {
    List<CommandSpec> all = new ArrayList<>();
    all.add(root.getCommandSpec());
    for (CommandLine sub : root.getSubcommands().values()) {
      if (sub.getCommandSpec().parent() == root.getCommandSpec()
          && !all.contains(sub.getCommandSpec())) {
        all.addAll(commands(sub));
      }
    }
    return all;
  }

  /** The value as {@code config show} prints it: secrets masked. */
  public static String display(String key, String value) {
    if (value == null) return "";
    return SECRET.matcher(key.toLowerCase(Locale.ROOT)).find() && !value.isEmpty() ? MASK : value;
  }

  /** Why {@code value} is no value of the option, or null when it is one. */
  static String conversionProblem(OptionSpec o, String value) {
    Class<?> type = o.typeInfo().getType();
    if (type == boolean.class || type == Boolean.class) {
      return value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false")
          ? null
          : "'" + value + "' is not true or false";
    }
    Holder holder = new Holder();
    OptionSpec copy = OptionSpec.builder(o).required(false).getter(holder).setter(holder).build();
    CommandSpec spec = CommandSpec.create().addOption(copy);
    try {
      new CommandLine(spec).parseArgs(o.longestName() + "=" + value);
      return null;
    } catch (CommandLine.ParameterException ex) {
      String m = ex.getMessage() == null ? "bad value" : ex.getMessage();
      return m.replaceFirst("^Invalid value for option '[^']*': ", "");
    }
  }

  private static String suggestion(String key, Map<String, List<OptionSpec>> byKey) {
    String last = key.substring(key.lastIndexOf('.') + 1);
    Set<String> near = new TreeSet<>();
    for (String k : byKey.keySet()) {
      if (!k.contains(".") && (k.contains(last) || last.contains(k)) && k.length() > 2) near.add(k);
    }
    return near.isEmpty() ? "" : " (did you mean " + String.join(", ", near) + "?)";
  }

  /** Where a value parsed only to check it goes: nowhere else. */
  private static final class Holder
      implements CommandLine.Model.IGetter, CommandLine.Model.ISetter {
    private Object value;

    @SuppressWarnings("unchecked")
    @Override
    public <T> T get() {
      return (T) value;
    }

    @SuppressWarnings("unchecked")
    @Override
    public <T> T set(T v) {
      T old = (T) value;
      value = v;
      return old;
    }
  }
}
