package io.collscope.cli;

import io.collscope.eval.AccuracyEval;
import io.collscope.flink.JobOptions;
import io.collscope.flink.alert.AlertFunction;
import io.collscope.flink.alert.BaselineFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code collscope baselines FILE...}: the latency baselines of recorded runs, as the job would
 * learn them, written as a baseline file for the job's {@code --baseline-file}.
 */
@Command(
    name = "baselines",
    mixinStandardHelpOptions = true,
    description =
        "Replay recordings through the job and write each communicator's latency baseline"
            + " (for the job's --baseline-file).")
final class BaselinesCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(
      arity = "0..*",
      description = "Recordings of 'collscope emit --record' (or --history instead).")
  List<Path> files = List.of();

  @Option(
      names = "--history",
      description =
          "Learn from the job's Parquet history in this directory (its attributions) instead of"
              + " replaying recordings, e.g. .run/history")
  Path history;

  @Option(
      names = "--since",
      defaultValue = "7d",
      description = "With --history: how far back (e.g. 24h, 7d). Default: ${DEFAULT-VALUE}")
  String since;

  @Option(
      names = "--window",
      defaultValue = "10s",
      converter = DurationConverter.class,
      description = "The job's window. Default: ${DEFAULT-VALUE}")
  Duration window;

  @Option(names = "--out", description = "Write here instead of standard output.")
  Path out;

  @Override
  public Integer call() throws Exception {
    if ((history == null) == files.isEmpty()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "give recordings or --history DIR, not both nor neither");
    }
    for (Path f : files) {
      if (!Files.isReadable(f)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "cannot read " + f);
      }
    }
    List<io.collscope.avro.Attribution> attributions;
    if (history != null) {
      HistoryCommand.existingHistory(history, spec);
      io.collscope.history.TimeRange range;
      try {
        range =
            io.collscope.history.TimeRange.since(
                io.collscope.history.TimeRange.durationOf(since), java.time.Instant.now());
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--since: " + e.getMessage());
      }
      attributions =
          io.collscope.history.ParquetHistoryReader.read(
              history,
              io.collscope.flink.history.HistoryLayout.ATTRIBUTIONS,
              io.collscope.avro.Attribution.class,
              range,
              io.collscope.flink.history.HistoryLayout::eventTime);
    } else {
      double floor = Double.parseDouble(JobOptions.DEFAULTS.get(JobOptions.ABS_FLOOR_US));
      attributions = AccuracyEval.replay(files, AccuracyEval.options(window, floor)).attributions();
    }
    BaselineFile.Learning learning =
        BaselineFile.learning(attributions, AlertFunction.BASELINE_WINDOWS);
    List<BaselineFile.Row> rows = learning.rows();
    String text = BaselineFile.format(rows);
    if (out == null) {
      spec.commandLine().getOut().print(text);
      spec.commandLine().getOut().flush();
    } else {
      Files.writeString(out, text);
    }
    spec.commandLine()
        .getErr()
        .printf(
            "collscope baselines: %d communicator and %d pooled class baselines%n",
            rows.stream().filter(r -> !r.pooled()).count(),
            rows.stream().filter(BaselineFile.Row::pooled).count());
    spec.commandLine().getErr().println(windowsLine(learning));
    spec.commandLine().getErr().flush();
    return Defaults.EXIT_OK;
  }

  /**
   * Which windows the baselines came from, and why the others were passed over: a baseline is
   * learnt from clean windows only (no finding, no missing rank) after each communicator's first
   * {@value AlertFunction#WARMUP_WINDOWS}, so a history of a faulty run learns none, and says so.
   */
  static String windowsLine(BaselineFile.Learning l) {
    String line =
        String.format(
            java.util.Locale.ROOT,
            "collscope baselines: learnt from %d of %d windows (passed over: %d warming up, %d with"
                + " a finding or a missing rank, %d without a latency)",
            l.used(),
            l.windows(),
            l.warmingUp(),
            l.withFindings(),
            l.withoutLatency());
    if (l.rows().isEmpty() && l.windows() > 0) {
      line +=
          l.withFindings() > 0
              ? "; no baseline: a baseline is learnt from clean windows, and these had findings"
              : l.withoutLatency() > 0
                  ? "; no baseline: the windows past warm-up had no latency (no collectives)"
                  : "; no baseline: too few windows per communicator";
    }
    return line;
  }
}
