package io.collscope.cli;

import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.kafka.BrokerUnreachableException;
import io.collscope.load.LoadGenerator;
import io.collscope.load.LoadProducer;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope load}: a whole cluster's snapshot stream from the protocol simulator, for
 * benchmarks and scale tests.
 */
@Command(
    name = "load",
    mixinStandardHelpOptions = true,
    description =
        "Publish the snapshot stream of a simulated cluster: every rank in one communicator of each kind, each reporting once per --rate interval, with faults in chosen communicators, in real or accelerated event time.")
final class LoadCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @CommandLine.Mixin KafkaClientOptions kafkaClient;

  @Option(
      names = "--ranks",
      defaultValue = "1024",
      description = "Ranks of the simulated cluster. Default: ${DEFAULT-VALUE}")
  int ranks;

  @Option(
      names = "--communicators",
      defaultValue = "tp:8,pp:16,dp:1024",
      paramLabel = "KIND:SIZE,...",
      description =
          "Communicator kinds; each rank is in one group of SIZE of every kind (SIZE divides --ranks). Default: ${DEFAULT-VALUE}")
  String communicators;

  @Option(
      names = "--rate",
      defaultValue = "1/s",
      paramLabel = "N/s",
      description = "Snapshots per rank and communicator per second. Default: ${DEFAULT-VALUE}")
  String rate;

  @Option(
      names = "--inject",
      paramLabel = "COMM:SPEC",
      description =
          "Fault in one communicator, in its own rank numbers, e.g. dp0:slow-rank=5:300us (the SPEC of emit --inject). Repeatable.")
  List<String> inject = new ArrayList<>();

  @Option(
      names = "--accelerate",
      defaultValue = "1",
      paramLabel = "X|max",
      description =
          "Event time runs X times faster than the wall clock; max: as fast as the broker takes it. Default: ${DEFAULT-VALUE}")
  String accelerate;

  @Option(
      names = "--seconds",
      defaultValue = "60",
      description = "Event-time seconds to generate. Default: ${DEFAULT-VALUE}")
  long seconds;

  @Option(
      names = "--compact-from",
      defaultValue = "" + LoadGenerator.DEFAULT_COMPACT_FROM,
      description =
          "Communicators of this many ranks or more are written in the compact per-peer form. Default: ${DEFAULT-VALUE}")
  int compactFrom;

  @Option(
      names = "--max-peers",
      defaultValue = "" + io.collscope.model.CompactPeers.DEFAULT_MAX_PEERS,
      description = "Peers a compact record lists at most. Default: ${DEFAULT-VALUE}")
  int maxPeers;

  @Option(
      names = "--template-intervals",
      defaultValue = "" + LoadGenerator.DEFAULT_TEMPLATE_INTERVALS,
      description =
          "Report intervals simulated per template and replayed cyclically. Default: ${DEFAULT-VALUE}")
  int templateIntervals;

  @Option(
      names = "--record",
      paramLabel = "FILE",
      description =
          "Write the rounds to this new recording (the format of emit --record) instead of"
              + " publishing them, as fast as they are made; 'collscope demo --replay FILE' replays"
              + " it in real time. No broker is needed.")
  Path record;

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
      description = "Partitions of the topic when it is created. Default: ${DEFAULT-VALUE}")
  int partitions;

  @Option(
      names = "--cluster",
      defaultValue = "load",
      description = "Cluster name of every record. Default: ${DEFAULT-VALUE}")
  String cluster;

  @Option(
      names = "--job",
      defaultValue = "load",
      description = "Job name of every record. Default: ${DEFAULT-VALUE}")
  String job;

  @Option(
      names = "--producer",
      paramLabel = "KEY=VALUE",
      description =
          "Kafka producer setting over the load's defaults (see LoadProducer: lz4, linger 20 ms, 512 KiB batches, acks 1). Repeatable.")
  Map<String, String> producer = new LinkedHashMap<>();

  @Option(
      names = "--broker-timeout",
      defaultValue = Defaults.BROKER_TIMEOUT,
      converter = DurationConverter.class,
      description = "How long to wait for the broker at start. Default: ${DEFAULT-VALUE}")
  Duration brokerTimeout;

  @Override
  public Integer call() throws Exception {
    if (ranks < 2) throw new IllegalArgumentException("--ranks must be >= 2, got " + ranks);
    if (seconds < 1) throw new IllegalArgumentException("--seconds must be >= 1");
    if (maxPeers < 1) throw new IllegalArgumentException("--max-peers must be >= 1");
    if (templateIntervals < 2) throw new IllegalArgumentException("--template-intervals >= 2");
    long intervalMs = intervalMs(rate);
    double x = acceleration(accelerate);
    List<LoadGenerator.Kind> kinds = LoadGenerator.parseKinds(communicators, ranks);
    Map<String, List<String>> faults = faults(inject);
    if (record != null && Files.exists(record)) {
      throw new IllegalArgumentException("--record " + record + " exists: give a new file");
    }
    PrintStream err = System.err;
    long t0 = System.nanoTime();
    LoadGenerator gen =
        new LoadGenerator(
            cluster,
            job,
            ranks,
            kinds,
            faults,
            intervalMs,
            templateIntervals,
            compactFrom,
            maxPeers,
            Instant.now());
    err.printf(
        Locale.ROOT,
        "load: %d communicators, %d records per %d ms round, templates simulated in %.1f s%n",
        gen.communicators(),
        gen.recordsPerRound(),
        intervalMs,
        (System.nanoTime() - t0) / 1e9);
    long rounds = Math.max(1, seconds * 1000 / intervalMs);
    if (record != null) return record(gen, rounds);
    try {
      KafkaSnapshotSink.ensureTopic(
          bootstrap, kafkaClient.config(), topic, partitions, brokerTimeout);
    } catch (BrokerUnreachableException e) {
      err.println("load: " + e.getMessage());
      return Defaults.EXIT_BROKER_UNREACHABLE;
    }
    try (LoadProducer out = new LoadProducer(bootstrap, kafkaClient.config(), topic, producer)) {
      LoadProducer.Result r = out.run(gen, rounds, x, err);
      System.out.println(r.summary());
      return r.failed() == 0 ? Defaults.EXIT_OK : Defaults.EXIT_FAILURE;
    }
  }

  /**
   * The rounds as a recording: each record one frame, in round order (the order a replay sends them
   * in, by event time within the per-rank skew).
   */
  private int record(LoadGenerator gen, long rounds) {
    try (SnapshotRecording.Writer w = new SnapshotRecording.Writer(record)) {
      for (long j = 0; j < rounds; j++) {
        gen.nextRound((key, value, timestampMs) -> w.append(value));
      }
      w.flush();
    }
    long records = rounds * gen.recordsPerRound();
    System.out.printf(
        Locale.ROOT, "recorded %d records (%d rounds) in %s%n", records, rounds, record);
    return Defaults.EXIT_OK;
  }

  /** "1/s", "10/s", "0.5/s" → milliseconds between a rank's snapshots. */
  static long intervalMs(String rate) {
    String r = rate.trim();
    if (!r.endsWith("/s")) throw new IllegalArgumentException("--rate must be N/s, got " + rate);
    double perSecond;
    try {
      perSecond = Double.parseDouble(r.substring(0, r.length() - 2));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--rate must be N/s, got " + rate);
    }
    if (!(perSecond > 0) || perSecond > 1000) {
      throw new IllegalArgumentException("--rate must be in (0, 1000]/s, got " + rate);
    }
    return Math.max(1, Math.round(1000 / perSecond));
  }

  /** "max" → 0 (no pacing); else a factor > 0. */
  static double acceleration(String a) {
    if (a.equalsIgnoreCase("max")) return 0;
    try {
      double x = Double.parseDouble(a);
      if (x > 0) return x;
    } catch (NumberFormatException e) {
      // below
    }
    throw new IllegalArgumentException("--accelerate must be a factor > 0 or max, got " + a);
  }

  static Map<String, List<String>> faults(List<String> inject) {
    Map<String, List<String>> m = new LinkedHashMap<>();
    for (String i : inject) {
      int colon = i.indexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException(
            "--inject must be COMM:SPEC (e.g. dp0:slow-rank=5:300us), got " + i);
      }
      m.computeIfAbsent(i.substring(0, colon), k -> new ArrayList<>()).add(i.substring(colon + 1));
    }
    return m;
  }
}
