package io.collscope.config;

import io.collscope.config.ConfigDefaultProvider.Resolved;
import io.collscope.config.ConfigDefaultProvider.Source;
import io.collscope.flink.JobOptions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The attribution job's options from the configuration: a flag of {@code collscope job submit}
 * ({@code --set NAME=VALUE}) over the environment ({@code COLLSCOPE_ATTRIBUTION_NAME}, and for the
 * shared ones the CLI's own variable: {@code COLLSCOPE_BOOTSTRAP}, the topics) over the file
 * ({@code attribution.NAME}, then {@code NAME}) over {@link JobOptions#DEFAULTS}. The job reads the
 * same file itself with {@code --config} (JobOptions).
 */
public final class AttributionConfig {

  /** The pseudo-command name the job's keys go by in the file and in {@code config show}. */
  public static final String NAME = "attribution";

  /** The CLI's environment variables that mean the same as a job option. */
  private static final Map<String, String> SHARED_ENV =
      Map.of(
          JobOptions.BOOTSTRAP, "COLLSCOPE_BOOTSTRAP",
          JobOptions.SNAPSHOT_TOPIC, "COLLSCOPE_TOPIC",
          JobOptions.RANK_WINDOW_TOPIC, "COLLSCOPE_RANK_WINDOW_TOPIC",
          JobOptions.ATTRIBUTION_TOPIC, "COLLSCOPE_ATTRIBUTION_TOPIC",
          JobOptions.DEADLETTER_TOPIC, "COLLSCOPE_DEADLETTER_TOPIC",
          JobOptions.ALERT_TOPIC, "COLLSCOPE_ALERT_TOPIC");

  private AttributionConfig() {}

  /** The keys of the file that the job reads: attribution.NAME and NAME for each option. */
  public static Set<String> keys() {
    Set<String> keys = new TreeSet<>();
    for (String n : JobOptions.DEFAULTS.keySet()) {
      keys.add(JobOptions.CONFIG_PREFIX + n);
      keys.add(n);
    }
    return keys;
  }

  /** The environment variable of a job option. */
  public static List<String> environmentVariables(String name) {
    List<String> vars = new ArrayList<>();
    vars.add("COLLSCOPE_ATTRIBUTION_" + name.toUpperCase(Locale.ROOT).replace('-', '_'));
    if (SHARED_ENV.containsKey(name)) vars.add(SHARED_ENV.get(name));
    return vars;
  }

  /** Every job option's value and where it came from, in the order of {@link JobOptions}. */
  public static Map<String, Resolved> resolve(
      ConfigFile file, Map<String, String> env, Map<String, String> flags) {
    Map<String, Resolved> out = new LinkedHashMap<>();
    for (String name : new TreeSet<>(JobOptions.DEFAULTS.keySet())) {
      out.put(name, resolveOne(name, file, env, flags));
    }
    for (String f : flags.keySet()) {
      if (!JobOptions.DEFAULTS.containsKey(f)) {
        throw new IllegalArgumentException(
            "--set " + f + ": not an option of the attribution job (" + out.keySet() + ")");
      }
    }
    return out;
  }

  private static Resolved resolveOne(
      String name, ConfigFile file, Map<String, String> env, Map<String, String> flags) {
    if (flags.containsKey(name)) return new Resolved(flags.get(name), Source.FLAG, "--set");
    for (String var : environmentVariables(name)) {
      String v = env.get(var);
      if (v != null && !v.isEmpty()) return new Resolved(v, Source.ENVIRONMENT, var);
    }
    for (String key : List.of(JobOptions.CONFIG_PREFIX + name, name)) {
      var v = file.get(key);
      if (v.isPresent()) return new Resolved(v.get(), Source.FILE, key);
    }
    return new Resolved(JobOptions.DEFAULTS.get(name), Source.DEFAULT, "");
  }

  /** The job's arguments for these values; they are checked as the job checks them. */
  public static List<String> arguments(Map<String, Resolved> values) {
    List<String> args = new ArrayList<>();
    values.forEach(
        (name, r) -> {
          args.add("--" + name);
          args.add(r.value());
        });
    JobOptions.parse(args.toArray(String[]::new));
    return args;
  }

  /** The file's values for the job that the job would reject, one line each. */
  public static List<String> problems(ConfigFile file) {
    List<String> problems = new ArrayList<>();
    for (Map.Entry<String, String> e : file.entries().entrySet()) {
      String key = e.getKey();
      String name =
          key.startsWith(JobOptions.CONFIG_PREFIX)
              ? key.substring(JobOptions.CONFIG_PREFIX.length())
              : key;
      if (!JobOptions.DEFAULTS.containsKey(name)) continue;
      try {
        JobOptions.parse("--" + name, e.getValue());
      } catch (IllegalArgumentException ex) {
        problems.add(file.describe() + ": key '" + key + "': " + ex.getMessage());
      }
    }
    return problems;
  }
}
