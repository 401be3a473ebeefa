package io.collscope.cli;

import io.collscope.collective.Backends;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.CounterBlock;
import io.collscope.emitter.BrokerUnreachableException;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.SnapshotSink;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope emit}: run a backend's ranks and publish their counter snapshots. */
@Command(
    name = "emit",
    mixinStandardHelpOptions = true,
    description =
        "Run N ranks of an instrumented all-reduce and publish counter snapshots to Kafka.")
final class EmitCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--bootstrap",
      defaultValue = Defaults.BOOTSTRAP,
      description = "Kafka bootstrap servers (env COLLSCOPE_BOOTSTRAP). Default: ${DEFAULT-VALUE}")
  String bootstrap;

  @Option(
      names = "--topic",
      defaultValue = Defaults.SNAPSHOT_TOPIC,
      description = "Snapshot topic. Default: ${DEFAULT-VALUE}")
  String topic;

  @Option(
      names = "--partitions",
      defaultValue = Defaults.PARTITIONS,
      description = "Partitions when the topic must be created. Default: ${DEFAULT-VALUE}")
  int partitions;

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
      names = "--interval",
      defaultValue = Defaults.INTERVAL,
      converter = DurationConverter.class,
      description = "Snapshot interval. Default: ${DEFAULT-VALUE}")
  Duration interval;

  @Option(
      names = "--seconds",
      defaultValue = "0",
      description = "Stop after this many seconds; 0 runs until SIGTERM. Default: ${DEFAULT-VALUE}")
  int seconds;

  @Option(
      names = "--inject",
      description =
          "Fault to inject; repeatable or comma-separated: slow-rank=R:D, slow-link=P->R:D, slow-publish=R:D, slow-ack=R:D, dead-rank=R")
  List<String> inject = new ArrayList<>();

  @Option(
      names = "--elements",
      defaultValue = "1024",
      description = "fp32 elements per rank per all-reduce. Default: ${DEFAULT-VALUE}")
  int elements;

  @Option(
      names = "--wait-budget",
      defaultValue = "1s",
      converter = DurationConverter.class,
      description =
          "Bound on any one wait; past it the collective aborts and counts a timeout. Default: ${DEFAULT-VALUE}")
  Duration waitBudget;

  @Option(
      names = "--broker-timeout",
      defaultValue = Defaults.BROKER_TIMEOUT,
      converter = DurationConverter.class,
      description = "How long to wait for the broker at start. Default: ${DEFAULT-VALUE}")
  Duration brokerTimeout;

  @Option(
      names = "--record",
      description =
          "Write snapshots to this file instead of Kafka (analyse elsewhere with 'collscope replay' or 'collscope demo --replay').")
  java.nio.file.Path record;

  @Option(
      names = "--cluster",
      defaultValue = Defaults.CLUSTER,
      description = "Cluster name. Default: ${DEFAULT-VALUE}")
  String cluster;

  @Option(
      names = "--job",
      defaultValue = Defaults.JOB,
      description = "Job name. Default: ${DEFAULT-VALUE}")
  String job;

  @Option(
      names = "--communicator",
      defaultValue = Defaults.COMMUNICATOR,
      description = "Communicator id. Default: ${DEFAULT-VALUE}")
  String communicator;

  @Override
  public Integer call() throws Exception {
    if (ranks < 1 || ranks > 1024) throw usage("--ranks must be in 1..1024, got " + ranks);
    if (seconds < 0) throw usage("--seconds must be >= 0");
    if (interval.toMillis() < 10) throw usage("--interval must be at least 10ms");
    if (partitions < 1) throw usage("--partitions must be >= 1");
    Backends.Kind kind;
    try {
      kind = Backends.Kind.parse(backend);
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    FaultPlan plan;
    CollectiveConfig cfg;
    try {
      plan = FaultPlan.parse(inject, ranks);
      cfg =
          new CollectiveConfig(
              ranks,
              elements,
              CollectiveConfig.DEFAULT_RING_SLOTS,
              waitBudget.toNanos(),
              CounterBlock.DEFAULT_HISTOGRAM_BUCKETS);
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }

    SnapshotSink sink;
    try {
      sink =
          record != null
              ? new io.collscope.emitter.SnapshotRecording.Writer(record)
              : KafkaSnapshotSink.connect(bootstrap, topic, partitions, brokerTimeout);
    } catch (BrokerUnreachableException e) {
      err().println("collscope emit: " + e.getMessage());
      err().flush();
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    Identity id = Identity.of(cluster, job, communicator);
    try (sink;
        CollectiveBackend b = Backends.create(kind, cfg, plan)) {
      Emitter emitter = new Emitter(b, id, sink, interval);
      CountDownLatch finished = new CountDownLatch(1);
      Thread hook =
          new Thread(
              () -> {
                emitter.requestStop();
                try {
                  finished.await();
                } catch (InterruptedException ignored) {
                  Thread.currentThread().interrupt();
                }
              },
              "collscope-emit-sigterm");
      Runtime.getRuntime().addShutdownHook(hook);
      err()
          .printf(
              "collscope emit: %d %s ranks of %s, boot %s, faults %s -> %s %s%n",
              ranks,
              b.name(),
              communicator,
              id.bootId(),
              plan,
              record != null ? "file" : bootstrap,
              record != null ? record : topic);
      Emitter.Result r;
      try {
        r = emitter.run(seconds > 0 ? Duration.ofSeconds(seconds) : null);
      } finally {
        finished.countDown();
      }
      err()
          .printf(
              "collscope emit: published %d snapshots, %d failed deliveries, %d torn reads skipped%n",
              r.published(), r.failedDeliveries(), r.tornSkips());
      err().flush();
      if (r.failure().isPresent()) {
        err().println("collscope emit: backend failed: " + r.failure().get());
        return Defaults.EXIT_FAILURE;
      }
      return r.failedDeliveries() > 0 ? Defaults.EXIT_FAILURE : Defaults.EXIT_OK;
    }
  }

  private java.io.PrintWriter err() {
    return spec.commandLine().getErr();
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
