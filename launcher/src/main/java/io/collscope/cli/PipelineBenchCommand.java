package io.collscope.cli;

import io.collscope.benchmarks.PipelineBench;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope bench pipeline}: throughput of broker + job vs raw decode, and latency. */
@Command(
    name = "pipeline",
    mixinStandardHelpOptions = true,
    description =
        "Snapshots/s through an embedded broker and the attribution job against the raw consume+decode rate of the same topic, the key skew at the job's parallelism, and the latency from window end to a read_committed attribution, in one run.")
final class PipelineBenchCommand implements Callable<Integer> {

  @Option(
      names = "--ranks",
      defaultValue = "8192",
      description =
          "Ranks of the loaded cluster for the throughput runs. Default: ${DEFAULT-VALUE}")
  int ranks;

  @Option(
      names = "--communicators",
      defaultValue = "tp:8,pp:16,dp:1024",
      description =
          "Communicator kinds of the throughput runs, KIND:SIZE,... as for load. Default: ${DEFAULT-VALUE}")
  String communicators;

  @Option(
      names = "--rounds",
      defaultValue = "30",
      description =
          "Seconds of event time loaded for the throughput runs. Default: ${DEFAULT-VALUE}")
  long rounds;

  @Option(
      names = "--partitions",
      defaultValue = "4",
      description = "Partitions of the snapshot topic. Default: ${DEFAULT-VALUE}")
  int partitions;

  @Option(
      names = "--parallelism",
      defaultValue = "2",
      description = "The job's parallelism. Default: ${DEFAULT-VALUE}")
  int parallelism;

  @Option(
      names = "--window",
      defaultValue = "10s",
      converter = DurationConverter.class,
      description = "The job's event-time window. Default: ${DEFAULT-VALUE}")
  Duration window;

  @Option(
      names = "--latency-ranks",
      defaultValue = "1024",
      description = "Ranks of the live latency run. Default: ${DEFAULT-VALUE}")
  int latencyRanks;

  @Option(
      names = "--latency-communicators",
      defaultValue = "tp:8,dp:1024",
      description = "Communicator kinds of the live latency run. Default: ${DEFAULT-VALUE}")
  String latencyCommunicators;

  @Option(
      names = "--latency-seconds",
      defaultValue = "40s",
      converter = DurationConverter.class,
      description = "Length of the live latency run. Default: ${DEFAULT-VALUE}")
  Duration latencySeconds;

  @Option(
      names = "--checkpoint-interval",
      defaultValue = "2s",
      converter = DurationConverter.class,
      description =
          "The job's checkpoint interval: its exactly-once sinks commit on checkpoints, so it bounds"
              + " the latency. Default: ${DEFAULT-VALUE}")
  Duration checkpointInterval;

  @Option(
      names = "--history",
      description =
          "Also run the job with --history-path (a temporary folder), then without it again: the"
              + " four Parquet FileSinks' cost between two runs with the JIT warm.")
  boolean history;

  @Option(names = "--inject", paramLabel = "COMM:SPEC", description = "As collscope load.")
  List<String> inject = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    if (rounds < 1 || parallelism < 1 || partitions < 1) {
      throw new IllegalArgumentException("--rounds, --parallelism and --partitions must be >= 1");
    }
    if (checkpointInterval.toMillis() < 10) {
      throw new IllegalArgumentException("--checkpoint-interval must be >= 10ms");
    }
    for (String i : inject) {
      if (i.indexOf(':') <= 0) throw new IllegalArgumentException("--inject must be COMM:SPEC");
    }
    PipelineBench.run(
        new PipelineBench.Config(
            ranks,
            communicators,
            rounds,
            partitions,
            parallelism,
            window,
            latencyRanks,
            latencyCommunicators,
            latencySeconds,
            inject,
            checkpointInterval,
            history),
        System.out);
    return 0;
  }
}
