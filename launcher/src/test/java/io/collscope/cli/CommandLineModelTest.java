package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Checks over every command of the command line at once, which tests of single commands miss.
 *
 * <p>Every option's default converts to its type. A default is converted when a command line is
 * parsed, before the arguments are checked, so one that does not parse breaks every run of that
 * command that leaves the option out ({@code history compact}'s {@code --older-than 2h} did, until
 * durations took hours) — and no test of the command's other paths would notice.
 *
 * <p>Every option says in --help what it is, not only its default.
 */
class CommandLineModelTest {

  @Test
  void everyCommandParsesWithItsDefaults() {
    List<List<String>> leaves = leaves();
    List<String> problems = new ArrayList<>();
    for (List<String> path : leaves) {
      try {
        Collscope.commandLine().parseArgs(path.toArray(String[]::new));
      } catch (CommandLine.MissingParameterException e) {
        // required arguments are checked after the defaults were converted
      } catch (CommandLine.ParameterException e) {
        problems.add(String.join(" ", path) + ": " + e.getMessage());
      }
    }
    assertThat(problems).isEmpty();
    // the walk reached the leaves: these among them
    assertThat(leaves)
        .contains(List.of("history", "compact"), List.of("bench", "gpu"), List.of("demo"));
  }

  @Test
  void everyOptionSaysWhatItIs() {
    List<String> silent = new ArrayList<>();
    for (List<String> path : leaves()) {
      CommandLine cl = Collscope.commandLine();
      for (String name : path) cl = cl.getSubcommands().get(name);
      for (CommandLine.Model.OptionSpec o : cl.getCommandSpec().options()) {
        if (o.hidden() || o.usageHelp() || o.versionHelp()) continue;
        // more than its default: "Default: 4" says what it is set to, not what it is
        String says = String.join(" ", o.description()).replaceAll("(?s)Default:.*$", "");
        if (says.isBlank()) {
          silent.add(String.join(" ", path) + " " + o.longestName());
        }
      }
    }
    assertThat(silent).isEmpty();
  }

  /** Every command without subcommands, as the names that lead to it from the root. */
  private static List<List<String>> leaves() {
    List<List<String>> leaves = new ArrayList<>();
    collect(Collscope.commandLine(), new ArrayList<>(), leaves);
    return leaves;
  }

  private static void collect(CommandLine cl, List<String> path, List<List<String>> leaves) {
    if (cl.getSubcommands().isEmpty()) {
      leaves.add(List.copyOf(path));
      return;
    }
    for (var e : cl.getSubcommands().entrySet()) {
      CommandLine sub = e.getValue();
      if (!e.getKey().equals(sub.getCommandName())) continue; // an alias of a command listed too
      List<String> next = new ArrayList<>(path);
      next.add(e.getKey());
      collect(sub, next, leaves);
    }
  }
}
