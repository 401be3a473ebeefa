package io.collscope.cli;

import io.collscope.backend.Backends;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.BrokerUnreachableException;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.SnapshotSink;
import java.time.Duration;
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

  @CommandLine.Mixin RankOptions rankOptions;

  @Option(
      names = "--rank",
      description =
          "Run only this rank here: one process per GPU, meeting the other ranks' processes in --rendezvous (CUDA IPC).")
  Integer onlyRank;

  @Option(
      names = "--device",
      description = "GPU of --rank. Default: the rank modulo the GPUs here.")
  Integer device;

  @Option(
      names = "--rendezvous",
      description =
          "Directory every rank's process can see (e.g. /dev/shm/collscope-JOB), for --rank.")
  java.nio.file.Path rendezvous;

  @Option(
      names = "--rendezvous-timeout",
      defaultValue = "60s",
      converter = DurationConverter.class,
      description = "How long to wait for the other ranks' processes. Default: ${DEFAULT-VALUE}")
  Duration rendezvousTimeout;

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
      names = "--seconds",
      defaultValue = "0",
      description = "Stop after this many seconds; 0 runs until SIGTERM. Default: ${DEFAULT-VALUE}")
  int seconds;

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

  @Override
  public Integer call() throws Exception {
    if (seconds < 0) throw usage("--seconds must be >= 0");
    if (partitions < 1) throw usage("--partitions must be >= 1");
    Backends.Kind kind = rankOptions.kind();
    FaultPlan plan = rankOptions.faults();
    CollectiveConfig cfg = rankOptions.config();

    if (onlyRank != null && (rendezvous == null || kind == Backends.Kind.CPU)) {
      throw usage("--rank runs one process per GPU: it needs --rendezvous DIR and --backend cuda");
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
    Identity id = Identity.of(cluster, job, rankOptions.communicator);
    try (sink;
        CollectiveBackend b =
            onlyRank == null
                ? Backends.create(kind, cfg, plan)
                : Backends.createProcessRank(
                    kind, cfg, plan, onlyRank, device, rendezvous, rendezvousTimeout)) {
      Emitter emitter = new Emitter(b, id, sink, rankOptions.interval);
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
              rankOptions.ranks,
              b.name(),
              rankOptions.communicator,
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
