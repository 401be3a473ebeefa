package io.collscope.cli;

import io.collscope.collective.BackendUnavailableException;
import io.collscope.collective.ConfigException;
import io.collscope.config.AttributionConfig;
import io.collscope.config.Config;
import io.collscope.config.ConfigDefaultProvider;
import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code collscope} command. Usage errors print one line and exit with 2. */
@Command(
    name = "collscope",
    mixinStandardHelpOptions = true,
    version = "collscope 0.1.0",
    description =
        "Where the time inside collective operations goes, and which rank or link is to blame.",
    subcommands = {
      DemoCommand.class,
      EmitCommand.class,
      KafkaCommand.class,
      TailCommand.class,
      ReplayCommand.class,
      BenchCommand.class,
      LoadCommand.class,
      EvalCommand.class,
      AlertsCommand.class,
      BaselinesCommand.class,
      FuzzCommand.class,
      QueryCommand.class,
      HistoryCommand.class,
      ExporterCommand.class,
      ReportCommand.class,
      ConfigCommand.class,
      ClusterCommand.class,
      JobCommand.class
    })
public final class Collscope implements Runnable {

  /** The flag that sets each library parameter the command line sets. */
  private static final Map<String, String> FLAG_OF_PARAMETER =
      Map.of(
          "worldSize", "--ranks",
          "elements", "--elements",
          "waitBudgetNanos", "--wait-budget",
          "fault", "--inject",
          "backend", "--backend",
          "rank", "--rank",
          "device", "--device",
          "rendezvous", "--rendezvous");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(args));
  }

  /** Runs the command line and returns its exit code (tests call this directly). */
  public static int execute(String... args) {
    CommandLine cl = commandLine();
    int rc = checkConfig(cl, true);
    return rc != Defaults.EXIT_OK ? rc : cl.execute(args);
  }

  /** Runs with the given output and error writers (for tests and embedding). */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    CommandLine cl = commandLine();
    cl.setOut(out);
    cl.setErr(err);
    int rc = checkConfig(cl, true);
    return rc != Defaults.EXIT_OK ? rc : cl.execute(args);
  }

  /** The whole command tree, configured as {@link #execute} runs it (for tools and tests). */
  public static CommandLine commandLine() {
    CommandLine cl = configure(new CommandLine(new Collscope()));
    ConfigCommand.configure(cl);
    return cl;
  }

  /**
   * The configuration file's problems (unknown keys when {@code rejectUnknown}, values that are no
   * values of their option), one line each on stderr, and exit code 2; else 0 (docs/CONFIG.md).
   */
  static int checkConfig(CommandLine cl, boolean rejectUnknown) {
    if (!(cl.getDefaultValueProvider() instanceof ConfigDefaultProvider provider)) {
      return Defaults.EXIT_OK;
    }
    java.util.List<String> problems =
        new java.util.ArrayList<>(
            Config.problems(
                cl,
                provider,
                rejectUnknown ? AttributionConfig.keys() : java.util.Set.of(),
                rejectUnknown));
    if (rejectUnknown) problems.addAll(AttributionConfig.problems(provider.file()));
    if (problems.isEmpty()) return Defaults.EXIT_OK;
    for (String p : problems) cl.getErr().println(cl.getCommandName() + ": " + oneLine(p));
    cl.getErr().flush();
    return Defaults.EXIT_USAGE;
  }

  /** What is wrong with a configuration file for this command line, one line each. */
  public static java.util.List<String> configProblems(io.collscope.config.ConfigFile file) {
    CommandLine cl = commandLine();
    ConfigDefaultProvider provider = Config.install(cl, file, java.util.Map.of());
    java.util.List<String> problems =
        new java.util.ArrayList<>(Config.problems(cl, provider, AttributionConfig.keys(), true));
    problems.addAll(AttributionConfig.problems(file));
    return problems;
  }

  /** One-line usage errors with exit code 2, for every collscope command line. */
  static CommandLine configure(CommandLine cl) {
    // Every option: flag > environment > conf/collscope.properties > default.
    Config.install(cl, System.getenv());
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          PrintWriter err = ex.getCommandLine().getErr();
          String cmd = ex.getCommandLine().getCommandSpec().qualifiedName();
          err.println(cmd + ": " + oneLine(ex.getMessage()) + " (try '" + cmd + " --help')");
          err.flush();
          return Defaults.EXIT_USAGE;
        });
    cl.setExecutionExceptionHandler(
        (ex, c, parseResult) -> {
          String cmd = c.getCommandSpec().qualifiedName();
          if (ex instanceof IllegalArgumentException) {
            // Option values that parse but make no sense (e.g. --inject for rank 9 of 4).
            String message = ex instanceof ConfigException ce ? inFlagTerms(ce) : ex.getMessage();
            c.getErr().println(cmd + ": " + oneLine(message));
            c.getErr().flush();
            return Defaults.EXIT_USAGE;
          }
          // a command with a --backend names the flag; the benchmarks, which have none, the
          // backend ("the cuda backend cannot run here: ...")
          String message =
              ex instanceof BackendUnavailableException bu
                  ? c.getCommandSpec().findOption("--backend") != null
                      ? "--backend " + bu.backend() + ": " + bu.reason()
                      : bu.getMessage()
                  : String.valueOf(ex);
          c.getErr().println(cmd + ": error: " + oneLine(message));
          c.getErr().flush();
          return Defaults.EXIT_FAILURE;
        });
    return cl;
  }

  /** The library's complaint about a parameter, about its flag: "--ranks must be >= 1, got 0". */
  static String inFlagTerms(ConfigException e) {
    String flag = FLAG_OF_PARAMETER.get(e.parameter());
    return flag == null ? e.getMessage() : flag + " " + e.problem();
  }

  static String oneLine(String s) {
    return s == null ? "" : s.replaceAll("\\s*\\R\\s*", " ").trim();
  }

  @Override
  public void run() {
    throw commandRequired(spec);
  }

  /**
   * The usage error of a command run without one of its subcommands: "demo, emit, ... or job is
   * required", from the subcommands it really has (aliases and help left out).
   */
  static CommandLine.ParameterException commandRequired(CommandLine.Model.CommandSpec spec) {
    List<String> names =
        spec.subcommands().entrySet().stream()
            .filter(e -> e.getKey().equals(e.getValue().getCommandName()))
            .map(Map.Entry::getKey)
            .filter(n -> !n.equals("help"))
            .toList();
    String list =
        names.size() <= 1
            ? String.join("", names)
            : String.join(", ", names.subList(0, names.size() - 1))
                + " or "
                + names.get(names.size() - 1);
    return new CommandLine.ParameterException(spec.commandLine(), list + " is required");
  }
}
