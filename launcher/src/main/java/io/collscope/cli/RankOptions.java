package io.collscope.cli;

import io.collscope.backend.Backends;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.CounterBlock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options that describe the ranks to run, shared by {@code emit} and {@code demo}. Invalid
 * values raise IllegalArgumentException with a one-line message, which the command line turns into
 * exit code 2.
 */
final class RankOptions {

  @Option(
      names = "--ranks",
      defaultValue = Defaults.RANKS,
      description = "Ranks (world size). Default: ${DEFAULT-VALUE}")
  int ranks;

  @Option(
      names = "--backend",
      defaultValue = Defaults.BACKEND,
      description = "auto, cpu or cuda. Default: ${DEFAULT-VALUE}")
  String backend;

  @Option(
      names = "--inject",
      description =
          "Fault to inject; repeatable or comma-separated: slow-rank=R:D, slow-link=P->R:D,"
              + " slow-publish=R:D, slow-ack=R:D, slow-copy=R:D, slow-all=D, dead-rank=R,"
              + " reboot-rank=R@T (cpu only). Each takes [@START[-END]][~PERCENT]: active from"
              + " START to END of the run, on PERCENT of the collectives, e.g."
              + " slow-rank=2:1ms@5s-15s~25%%")
  List<String> inject = new ArrayList<>();

  @Option(
      names = "--interval",
      defaultValue = Defaults.INTERVAL,
      converter = DurationConverter.class,
      description = "Snapshot interval. Default: ${DEFAULT-VALUE}")
  Duration interval;

  @Option(
      names = "--communicator",
      defaultValue = Defaults.COMMUNICATOR,
      description = "Communicator id. Default: ${DEFAULT-VALUE}")
  String communicator;

  @Option(
      names = "--elements",
      defaultValue = "1024",
      description = "Elements per rank per all-reduce. Default: ${DEFAULT-VALUE}")
  int elements;

  @Option(
      names = "--wait-budget",
      defaultValue = "1s",
      converter = DurationConverter.class,
      description =
          "Bound on any one wait; past it the collective aborts and counts a timeout. Default: ${DEFAULT-VALUE}")
  Duration waitBudget;

  Backends.Kind kind() {
    return Backends.Kind.parse(backend);
  }

  FaultPlan faults() {
    checkRanks();
    return FaultPlan.parse(inject, ranks);
  }

  CollectiveConfig config() {
    checkRanks();
    if (interval.toMillis() < 10) {
      throw new IllegalArgumentException("--interval must be at least 10ms");
    }
    return new CollectiveConfig(
        ranks,
        elements,
        CollectiveConfig.DEFAULT_RING_SLOTS,
        waitBudget.toNanos(),
        CounterBlock.DEFAULT_HISTOGRAM_BUCKETS);
  }

  private void checkRanks() {
    if (ranks < 1 || ranks > 1024) {
      throw new IllegalArgumentException("--ranks must be in 1..1024, got " + ranks);
    }
  }
}
