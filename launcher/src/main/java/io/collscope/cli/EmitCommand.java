package io.collscope.cli;

import io.collscope.backend.Backends;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.SnapshotSink;
import io.collscope.emitter.SpoolingSnapshotSink;
import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.schema.Snapshots;
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

  @CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Option(
      names = "--source",
      defaultValue = "ranks",
      description =
          "ranks: run this command's own instrumented ranks (--backend). nccl: be the node's"
              + " sidecar for NCCL jobs: publish the counter blocks the collscope NCCL profiler"
              + " plugin fills in --shm (load it with NCCL_PROFILER_PLUGIN=.../"
              + "libnccl-profiler-collscope.so). Default: ${DEFAULT-VALUE}")
  String source;

  @Option(
      names = "--shm",
      defaultValue = "/dev/shm/collscope",
      description =
          "--source nccl: the directory the plugin writes its blocks into (its"
              + " COLLSCOPE_SHM_DIR). Default: ${DEFAULT-VALUE}")
  java.nio.file.Path shm;

  @Option(
      names = "--stale-after",
      defaultValue = "60s",
      converter = DurationConverter.class,
      description =
          "--source nccl: stop following, and remove, the block of a writer that is gone (its"
              + " lock free: killed or crashed) once it has not moved for this long; a live"
              + " writer's block is never removed. Default: ${DEFAULT-VALUE}")
  Duration staleAfter;

  @Option(
      names = "--compact-from",
      defaultValue = "" + io.collscope.model.CompactPeers.DEFAULT_COMPACT_FROM,
      description =
          "--source nccl: communicators of this many ranks or more are published in the compact"
              + " per-peer form (the rank and the peers that stand out listed, the others summed)."
              + " Default: ${DEFAULT-VALUE}")
  int compactFrom;

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
      names = "--spool",
      description =
          "Directory of the on-disk spool that holds snapshots while the broker is down or slow"
              + " (what a previous run left there is sent first). Default:"
              + " .run/spool/TOPIC/CLUSTER/JOB/COMMUNICATOR[/rank-N]")
  java.nio.file.Path spool;

  @Option(
      names = "--spool-mb",
      defaultValue = "256",
      description =
          "The spool's bound; when full the oldest snapshots are dropped, counted. Default: ${DEFAULT-VALUE}")
  long spoolMb;

  @Option(
      names = "--health-topic",
      defaultValue = "${env:COLLSCOPE_HEALTH_TOPIC:-collscope.gpu-health}",
      description =
          "Topic of the GPUs' health (NVML, read-only, every interval; CUDA and NCCL sources)."
              + " Default: ${DEFAULT-VALUE}")
  String healthTopic;

  @Option(
      names = "--no-health",
      description = "Do not read NVML: snapshots only (as emitters before GPU health).")
  boolean noHealth;

  @Option(
      names = "--no-spool",
      description =
          "Send straight to the broker: an outage longer than the producer's 30 s retry loses snapshots.")
  boolean noSpool;

  @Option(
      names = "--drain-timeout",
      defaultValue = "30s",
      converter = DurationConverter.class,
      description =
          "At the end, how long to wait for the spool to reach the broker; what is left stays"
              + " spooled for the next run. Default: ${DEFAULT-VALUE}")
  Duration drainTimeout;

  @Option(
      names = "--cluster",
      defaultValue = Defaults.CLUSTER,
      description = "Cluster name. Default: ${DEFAULT-VALUE}")
  String cluster;

  @Option(
      names = "--node",
      description =
          "The node's name on every record (the host field the attribution groups ranks by, to"
              + " name a slow node): this machine's host name unless set. Set it where host names"
              + " repeat across the cluster, or to emulate several nodes on one machine (one"
              + " sidecar per --shm directory).")
  String node;

  @Option(
      names = "--job",
      defaultValue = Defaults.JOB,
      description = "Job name. Default: ${DEFAULT-VALUE}")
  String job;

  @Option(
      names = "--gemm-ar",
      paramLabel = "MxNxK",
      description =
          "Run the fused FP8 GEMM + all-reduce (collective gemm_ar_fp8_bf16[_throttled]) of this shape (K per rank) instead of the one-shot all-reduce: one rank per GPU of this process, CUDA only")
  String gemmAr;

  @Option(
      names = "--throttle",
      defaultValue = "dispatch",
      description =
          "With --gemm-ar: dispatch (the program the routing table chooses), on or off. Default: ${DEFAULT-VALUE}")
  String throttle;

  private io.collscope.health.KafkaHealthSink healthSink;
  private io.collscope.health.GpuHealthReporter health;

  @Override
  public Integer call() throws Exception {
    try {
      return emit();
    } finally {
      if (health != null) health.close();
      if (healthSink != null) healthSink.close();
    }
  }

  private int emit() throws Exception {
    if (seconds < 0) throw usage("--seconds must be >= 0");
    if (partitions < 1) throw usage("--partitions must be >= 1");
    if (spoolMb < 1) throw usage("--spool-mb must be >= 1");
    pathComponent("--cluster", cluster);
    pathComponent("--job", job);
    pathComponent("--communicator", rankOptions.communicator);
    pathComponent("--topic", topic);
    boolean nccl;
    switch (source) {
      case "ranks" -> nccl = false;
      case "nccl" -> nccl = true;
      default -> throw usage("--source must be ranks or nccl, got '" + source + "'");
    }
    if (nccl && (onlyRank != null || rendezvous != null || !rankOptions.inject.isEmpty())) {
      throw usage(
          "--source nccl reads the blocks of NCCL jobs: --rank, --rendezvous and --inject do not"
              + " apply");
    }
    Backends.Kind kind = rankOptions.kind();
    FaultPlan plan = rankOptions.faults();
    CollectiveConfig cfg = rankOptions.config();

    if (gemmAr != null) {
      if (kind == Backends.Kind.CPU || onlyRank != null || !plan.equals(FaultPlan.NONE)) {
        throw usage(
            "--gemm-ar runs every rank in this process on CUDA, without --rank or --inject");
      }
      try {
        io.collscope.cuda.GemmAllReduce.checkShape(io.collscope.cuda.GemmArBench.shape(gemmAr));
      } catch (IllegalArgumentException e) {
        throw usage("--gemm-ar " + gemmAr + ": " + e.getMessage());
      }
      throttleChoice();
    }
    if (compactFrom < 1) throw usage("--compact-from must be at least 1");
    if (onlyRank != null && (rendezvous == null || kind == Backends.Kind.CPU)) {
      throw usage("--rank runs one process per GPU: it needs --rendezvous DIR and --backend cuda");
    }
    SnapshotSink sink;
    SpoolingSnapshotSink spooled = null;
    try {
      if (record != null) {
        sink = new io.collscope.emitter.SnapshotRecording.Writer(record);
      } else if (noSpool) {
        sink =
            KafkaSnapshotSink.connect(
                bootstrap, kafkaClient.config(), topic, partitions, brokerTimeout);
      } else {
        java.nio.file.Path dir = spool != null ? spool : defaultSpool();
        try {
          spooled =
              KafkaSnapshotSink.connectSpooled(
                  bootstrap,
                  kafkaClient.config(),
                  topic,
                  partitions,
                  brokerTimeout,
                  dir,
                  spoolMb << 20);
        } catch (java.io.IOException e) {
          throw usage("--spool " + dir + ": " + e.getMessage());
        }
        sink = spooled;
        if (spooled.pending() > 0) {
          err()
              .printf(
                  "collscope emit: sending first %d snapshots a previous run left in %s%n",
                  spooled.pending(), dir);
        }
      }
    } catch (BrokerUnreachableException e) {
      err().println("collscope emit: " + e.getMessage());
      err().flush();
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    if (node != null && (node.isBlank() || node.length() > Snapshots.MAX_NAME)) {
      throw usage("--node must be 1 to " + Snapshots.MAX_NAME + " characters");
    }
    Identity id = Identity.of(cluster, job, rankOptions.communicator);
    if (node != null) {
      id = new Identity(id.cluster(), id.job(), id.communicator(), node, id.bootId());
    }
    // GPU health beside the counters: CUDA and NCCL ranks, published to Kafka (not with --record).
    // A node without NVML (a CPU node, no driver) logs one warning and creates no topic.
    if (!noHealth && record == null && (nccl || kind != Backends.Kind.CPU || gemmAr != null)) {
      health =
          io.collscope.health.GpuHealthReporter.open(
              cluster, job, id.host(), id.bootId(), h -> healthSink.accept(h));
      if (!health.available()) {
        health = null;
      } else {
        try {
          healthSink =
              io.collscope.health.KafkaHealthSink.connect(
                  bootstrap, kafkaClient.config(), healthTopic, partitions, brokerTimeout);
        } catch (BrokerUnreachableException e) {
          err().println("collscope emit: no GPU health: " + e.getMessage());
          health.close();
          health = null;
        }
      }
    }
    if (nccl) {
      try (sink) {
        return runNcclSidecar(id, sink, spooled, health);
      }
    }
    CountDownLatch finished = new CountDownLatch(1);
    try (sink;
        CollectiveBackend b =
            gemmAr != null
                ? new io.collscope.cuda.GemmArCollective(
                    rankOptions.ranks,
                    io.collscope.cuda.GemmArBench.shape(gemmAr),
                    throttleChoice(),
                    cfg.histogramBuckets(),
                    cfg.waitBudgetNanos())
                : onlyRank == null
                    ? Backends.create(kind, cfg, plan)
                    : Backends.createProcessRank(
                        kind, cfg, plan, onlyRank, device, rendezvous, rendezvousTimeout)) {
      Emitter emitter = new Emitter(b, id, sink, rankOptions.interval).withHealth(health);
      stopOnSigterm(emitter::requestStop, finished);
      err()
          .printf(
              "collscope emit: %d %s ranks of %s (%s, %s), boot %s, faults %s -> %s %s%n",
              rankOptions.ranks,
              b.name(),
              rankOptions.communicator,
              b.collective(),
              b.accounting(),
              id.bootId(),
              plan,
              record != null ? "file" : bootstrap,
              record != null ? record : topic);
      // On SIGTERM the hook holds the JVM up until the spool has drained (up to --drain-timeout),
      // the summary is printed and the sink closed: what is not delivered then stays in the spool.
      {
        Emitter.Result r = emitter.run(seconds > 0 ? Duration.ofSeconds(seconds) : null);
        long left = 0;
        if (spooled != null) {
          spooled.awaitDrained(drainTimeout);
          left = spooled.pending();
          err()
              .printf(
                  "collscope emit: spool %s: %d delivered, %d outages, %d dropped (full), %d torn"
                      + " (crash), %d left%n",
                  spooled.dir(),
                  spooled.delivered(),
                  spooled.outages(),
                  spooled.dropped(),
                  spooled.torn(),
                  left);
        }
        err()
            .printf(
                "collscope emit: published %d snapshots, %d failed deliveries, %d torn reads skipped%n",
                r.published(), r.failedDeliveries(), r.tornSkips());
        if (left > 0) {
          err()
              .printf(
                  "collscope emit: %d snapshots not delivered within --drain-timeout %ds; they stay"
                      + " in %s for the next run%n",
                  left, drainTimeout.toSeconds(), spooled.dir());
        }
        b.stoppedAt()
            .ifPresent(
                last ->
                    err()
                        .printf(
                            "collscope emit: every rank stopped after collective %d, as the ranks'"
                                + " processes agreed%n",
                            last));
        err().flush();
        if (r.failure().isPresent()) {
          err().println("collscope emit: backend failed: " + r.failure().get());
          return Defaults.EXIT_FAILURE;
        }
        if (r.failedDeliveries() > 0) {
          err()
              .printf(
                  "collscope emit: %d snapshots lost (dropped from a full spool, or not written):"
                      + " exit %d%n",
                  r.failedDeliveries(), Defaults.EXIT_SNAPSHOTS_LOST);
          err().flush();
          return Defaults.EXIT_SNAPSHOTS_LOST;
        }
        return left > 0 ? Defaults.EXIT_FAILURE : Defaults.EXIT_OK;
      }
    } finally {
      finished.countDown();
    }
  }

  /**
   * {@code --source nccl}: every interval, publish the blocks of the NCCL jobs on this node until
   * --seconds pass or SIGTERM; then one last read, so a finished job's final counters are sent.
   */
  private int runNcclSidecar(
      Identity id,
      SnapshotSink sink,
      SpoolingSnapshotSink spooled,
      io.collscope.health.GpuHealthReporter health)
      throws InterruptedException {
    if (rankOptions.interval.toMillis() < 10) throw usage("--interval must be at least 10ms");
    io.collscope.nccl.NcclSidecar sidecar =
        new io.collscope.nccl.NcclSidecar(
            shm,
            new io.collscope.nccl.NcclSidecar.Identity(cluster, job, id.host(), id.bootId()),
            sink,
            staleAfter,
            true,
            compactFrom);
    CountDownLatch stop = new CountDownLatch(1);
    CountDownLatch finished = new CountDownLatch(1);
    stopOnSigterm(stop::countDown, finished);
    err()
        .printf(
            "collscope emit: NCCL sidecar on %s, boot %s -> %s %s%n",
            shm, id.bootId(), record != null ? "file" : bootstrap, record != null ? record : topic);
    err().flush();
    long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
    try {
      while (true) {
        java.util.List<io.collscope.avro.CounterSnapshot> taken = sidecar.reportOnce();
        if (health != null) health.publishFor(taken);
        long left = deadline - System.nanoTime();
        if (left <= 0) break;
        if (stop.await(
            Math.min(left, rankOptions.interval.toNanos()),
            java.util.concurrent.TimeUnit.NANOSECONDS)) {
          break;
        }
      }
      sidecar.reportOnce();
      sink.flush();
    } finally {
      finished.countDown();
    }
    long left = 0;
    if (spooled != null) {
      spooled.awaitDrained(drainTimeout);
      left = spooled.pending();
    }
    err()
        .printf(
            "collscope emit: published %d snapshots of %d NCCL communicator instances, %d failed"
                + " deliveries, %d torn reads skipped%s%n",
            sidecar.published(),
            sidecar.instances(),
            sink.failed(),
            sidecar.tornSkips(),
            left > 0 ? ", " + left + " left in the spool" : "");
    err().flush();
    if (sink.failed() > 0) return Defaults.EXIT_SNAPSHOTS_LOST;
    return left > 0 ? Defaults.EXIT_FAILURE : Defaults.EXIT_OK;
  }

  /**
   * One spool per emitting process and topic: its ranks' identity (two processes cannot share one),
   * under the topic it feeds, so what a run left behind goes only where it was headed.
   */
  private java.nio.file.Path defaultSpool() {
    java.nio.file.Path base = java.nio.file.Path.of(".run", "spool");
    java.nio.file.Path p = base.resolve(topic);
    for (String name : new String[] {cluster, job, rankOptions.communicator}) p = p.resolve(name);
    p = onlyRank == null ? p : p.resolve("rank-" + onlyRank);
    // Checked by pathComponent already; this is the invariant that matters, kept next to its use.
    if (!p.normalize().startsWith(base)) throw usage("spool directory " + p + " escapes " + base);
    return p;
  }

  /**
   * A name that becomes one directory of the default spool path (and one part of the record key
   * {@code cluster/job/communicator/rank}): no separator, not {@code .} or {@code ..}, so it can
   * never reach outside the spool directory.
   */
  private void pathComponent(String option, String value) {
    if (value.isEmpty()
        || value.equals(".")
        || value.equals("..")
        || value.indexOf('/') >= 0
        || value.indexOf('\\') >= 0
        || value.indexOf('\0') >= 0) {
      throw usage(
          option
              + " '"
              + value
              + "' must be a plain name: no '/' or '\\', not '.' or '..' (it names a directory of"
              + " the spool and a part of the record key)");
    }
  }

  private java.io.PrintWriter err() {
    return spec.commandLine().getErr();
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  /** --throttle: null for the dispatcher's choice. */
  private Boolean throttleChoice() {
    return switch (throttle) {
      case "dispatch" -> null;
      case "on" -> Boolean.TRUE;
      case "off" -> Boolean.FALSE;
      default -> throw usage("--throttle must be dispatch, on or off, got '" + throttle + "'");
    };
  }

  /**
   * A shutdown hook (SIGTERM, Ctrl-C) that asks the emitter to stop and holds the JVM until {@code
   * finished} counts down, so the last snapshots are published or spooled before the exit (after a
   * normal end {@code finished} is already down and the hook returns at once).
   */
  private static void stopOnSigterm(Runnable requestStop, CountDownLatch finished) {
    Thread hook =
        new Thread(
            () -> {
              requestStop.run();
              try {
                finished.await();
              } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
              }
            },
            "collscope-emit-sigterm");
    Runtime.getRuntime().addShutdownHook(hook);
  }
}
