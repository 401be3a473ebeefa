package io.collscope.cli;

import io.collscope.history.HistoryDb;
import io.collscope.history.Table;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code collscope query SQL}: DuckDB over the history, its tables already views. */
@Command(
    name = "query",
    mixinStandardHelpOptions = true,
    description = {
      "Run SQL (DuckDB's dialect) over the history. Views: rank_windows, attributions, alerts"
          + " (columns: the Avro fields, plus dt DATE and hour INTEGER from the partition path;"
          + " docs/HISTORY.md). Filter on dt/hour to skip whole partitions.",
      "Example: collscope query \"SELECT verdict, count(*) FROM attributions GROUP BY ALL\""
    })
final class QueryCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(arity = "1", paramLabel = "SQL", description = "One SQL statement.")
  String sql;

  @Option(
      names = "--history",
      defaultValue = Defaults.HISTORY,
      description = "History base folder. Default: ${DEFAULT-VALUE}")
  Path history;

  @CommandLine.Mixin TablePrinter.Format format;

  @Override
  public Integer call() throws SQLException {
    format.check();
    try (HistoryDb db = HistoryDb.open(HistoryCommand.existingHistory(history, spec));
        Statement s = db.connection().createStatement()) {
      Table t;
      try {
        if (!s.execute(sql)) {
          spec.commandLine().getErr().println("collscope query: " + s.getUpdateCount() + " rows");
          return Defaults.EXIT_OK;
        }
        try (ResultSet rs = s.getResultSet()) {
          t = Table.of(rs);
        }
      } catch (SQLException e) {
        // The statement is the user's input: its error is a usage error, in one line.
        throw new IllegalArgumentException(e.getMessage(), e);
      }
      TablePrinter.print(t, format, spec.commandLine().getOut());
      return Defaults.EXIT_OK;
    }
  }
}
