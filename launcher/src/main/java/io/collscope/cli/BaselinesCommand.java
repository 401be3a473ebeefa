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

  @Parameters(arity = "1..*", description = "Recordings of 'collscope emit --record'.")
  List<Path> files;

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
    for (Path f : files) {
      if (!Files.isReadable(f)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "cannot read " + f);
      }
    }
    double floor = Double.parseDouble(JobOptions.DEFAULTS.get(JobOptions.ABS_FLOOR_US));
    List<BaselineFile.Row> rows =
        BaselineFile.learn(
            AccuracyEval.replay(files, AccuracyEval.options(window, floor)).attributions(),
            AlertFunction.BASELINE_WINDOWS);
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
    spec.commandLine().getErr().flush();
    return Defaults.EXIT_OK;
  }
}
