package io.collscope.cli;

import io.collscope.history.HistoryDb;
import io.collscope.history.TimeRange;
import io.collscope.report.Report;
import io.collscope.report.ReportPage;
import io.collscope.report.ReportQuery;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope report}: one self-contained HTML file about the history of a time range (every
 * communicator's summary, then charts for the ones with most alerts and findings), for a browser
 * without network.
 */
@Command(
    name = "report",
    mixinStandardHelpOptions = true,
    description =
        "Write an HTML report of the history (Parquet, as the job writes it): communicators with"
            + " most alerts and findings first, then per communicator its latency against the"
            + " baseline, p99 per rank, culprit timeline, delay matrices and phase breakdown."
            + " The file needs no network to open.")
final class ReportCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--history",
      defaultValue = Defaults.HISTORY,
      description = "The history's base directory. Default: ${DEFAULT-VALUE}")
  Path history;

  @Option(
      names = "--since",
      defaultValue = "24h",
      description = "How far back from --until (e.g. 90m, 24h, 7d). Default: ${DEFAULT-VALUE}")
  String since;

  @Option(
      names = "--until",
      description =
          "End of the range: an instant (2026-11-30T12:00:00Z), a UTC date-time or date, or"
              + " -DURATION before now. Default: now")
  String until;

  @Option(
      names = "--communicator",
      description = "Only this communicator: its name or cluster/job/communicator.")
  String communicator;

  @Option(
      names = "--top",
      defaultValue = "6",
      description =
          "Communicators with a detail section (most alerts and findings first)."
              + " Default: ${DEFAULT-VALUE}")
  int top;

  @Option(
      names = "--out",
      defaultValue = "report.html",
      description = "The HTML file to write. Default: ${DEFAULT-VALUE}")
  Path out;

  @Override
  public Integer call() throws Exception {
    Duration back = HistoryCommand.sinceDuration(since);
    if (back.isZero()) throw usage("--since must be positive");
    if (top < 0) throw usage("--top must be >= 0, got " + top);
    HistoryCommand.existingHistory(history, spec);
    Instant now = Instant.now();
    Instant end = until == null ? now : TimeRange.instant(until, now);
    ReportQuery.Options options = new ReportQuery.Options(end.minus(back), end, communicator, top);
    long t0 = System.nanoTime();
    Report report;
    try (HistoryDb db = HistoryDb.open(history)) {
      report = ReportQuery.run(db, options, now);
    }
    String html = ReportPage.render(report);
    Path parent = out.toAbsolutePath().getParent();
    if (parent != null) Files.createDirectories(parent);
    Files.writeString(out, html, StandardCharsets.UTF_8);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    spec.commandLine()
        .getErr()
        .printf(
            "collscope report: %s (%d communicators, %d with charts, %d KiB) in %d ms%n",
            out,
            report.totals().communicators(),
            report.details().size(),
            html.length() / 1024,
            ms);
    spec.commandLine().getErr().flush();
    return Defaults.EXIT_OK;
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
