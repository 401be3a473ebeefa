package io.collscope.cli;

import io.collscope.config.AttributionConfig;
import io.collscope.config.Config;
import io.collscope.config.ConfigDefaultProvider;
import io.collscope.config.ConfigDefaultProvider.Resolved;
import io.collscope.config.ConfigDefaultProvider.Source;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Parameters;

/**
 * {@code collscope config show|check}: the effective value of every option and where it came from
 * (flag, environment, {@code conf/collscope.properties}, default), secrets masked (docs/CONFIG.md).
 */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = "The configuration: conf/collscope.properties, environment, defaults.",
    subcommands = {ConfigCommand.Show.class, ConfigCommand.Check.class})
final class ConfigCommand implements Runnable {

  @picocli.CommandLine.Spec CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      description = {
        "Print every option's effective value and its source: flag, environment (and the"
            + " variable), file (and the key) or default. Secrets are masked.",
        "With COMMAND [ARGS...] (e.g. `config show emit --ranks 8`): that command's options"
            + " as that command line would set them; `config show attribution` is the job's."
      })
  static final class Show implements Callable<Integer> {

    @picocli.CommandLine.Spec CommandSpec spec;

    @Parameters(arity = "0..*", paramLabel = "COMMAND [ARGS]", description = "A command line.")
    List<String> commandLine = new ArrayList<>();

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      ConfigDefaultProvider provider = provider(spec);
      out.println("# configuration file: " + provider.file().describe());
      List<String[]> rows = new ArrayList<>();
      String only = commandLine.isEmpty() ? null : commandLine.get(0);
      if (only == null || !only.equals(AttributionConfig.NAME)) {
        CommandLine fresh = Collscope.commandLine();
        fresh.setDefaultValueProvider(provider);
        CommandLine.ParseResult parsed =
            commandLine.isEmpty() ? null : fresh.parseArgs(commandLine.toArray(String[]::new));
        for (CommandSpec c : Config.commands(fresh)) {
          if (c.parent() == null || c.name().equals("config")) continue;
          List<String> path = ConfigDefaultProvider.commandPath(c);
          if (parsed != null && !path.equals(matchedPath(parsed))) continue;
          for (OptionSpec o : c.options()) {
            String name = ConfigDefaultProvider.keyName(o);
            if (name == null) continue;
            String key = String.join(".", path) + "." + name;
            Resolved r =
                parsed != null && matchedLast(parsed).hasMatchedOption(o)
                    ? new Resolved(
                        String.join(
                            ",", matchedLast(parsed).matchedOption(o.longestName()).stringValues()),
                        Source.FLAG,
                        o.longestName())
                    : provider.resolve(o);
            rows.add(row(key, r));
          }
        }
      }
      if (only == null || only.equals(AttributionConfig.NAME)) {
        Map<String, Resolved> job =
            AttributionConfig.resolve(provider.file(), provider.env(), Map.of());
        job.forEach((name, r) -> rows.add(row(AttributionConfig.NAME + "." + name, r)));
      }
      int w = rows.stream().mapToInt(r -> r[0].length()).max().orElse(10);
      int v = Math.min(40, rows.stream().mapToInt(r -> r[1].length()).max().orElse(10));
      for (String[] r : rows) {
        out.println(String.format("%-" + w + "s  %-" + v + "s  %s", r[0], r[1], r[2]));
      }
      out.flush();
      return Defaults.EXIT_OK;
    }

    private static String[] row(String key, Resolved r) {
      String source =
          switch (r.source()) {
            case FLAG -> "flag " + r.detail();
            case ENVIRONMENT -> "environment " + r.detail();
            case FILE -> "file " + r.detail();
            case DEFAULT -> "default";
          };
      return new String[] {key, Config.display(key, r.value() == null ? "" : r.value()), source};
    }

    private static CommandLine.ParseResult matchedLast(CommandLine.ParseResult p) {
      while (p.hasSubcommand()) p = p.subcommand();
      return p;
    }

    private static List<String> matchedPath(CommandLine.ParseResult p) {
      return ConfigDefaultProvider.commandPath(matchedLast(p).commandSpec());
    }
  }

  @Command(
      name = "check",
      mixinStandardHelpOptions = true,
      description =
          "Check the configuration file (every command does at start): exit 0 and print its path"
              + " when it is valid, else one line per problem and exit 2.")
  static final class Check implements Callable<Integer> {

    @picocli.CommandLine.Spec CommandSpec spec;

    @Override
    public Integer call() {
      // Problems stop every command before it runs (Collscope.execute); reaching here means none.
      spec.commandLine().getOut().println("valid: " + provider(spec).file().describe());
      spec.commandLine().getOut().flush();
      return Defaults.EXIT_OK;
    }
  }

  /** {@code config show emit --ranks 8}: everything after COMMAND is that command's line. */
  static void configure(CommandLine root) {
    root.getSubcommands().get("config").getSubcommands().get("show").setStopAtPositional(true);
  }

  static ConfigDefaultProvider provider(CommandSpec spec) {
    CommandLine.IDefaultValueProvider p = spec.root().commandLine().getDefaultValueProvider();
    if (p instanceof ConfigDefaultProvider c) return c;
    return Config.install(Collscope.commandLine(), System.getenv());
  }
}
