package io.collscope.cli;

import io.collscope.avro.Attribution;
import io.collscope.backend.Backends;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.eval.AccuracyEval;
import io.collscope.eval.CellScore;
import io.collscope.eval.ConfusionTable;
import io.collscope.eval.Expectation;
import io.collscope.eval.FaultMatrix;
import io.collscope.eval.FaultMatrix.Cell;
import io.collscope.eval.FaultMatrix.Family;
import io.collscope.eval.FaultSet;
import io.collscope.flink.JobOptions;
import io.collscope.model.CommunicatorKey;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope eval}: the accuracy evaluation. Runs a fault matrix on the CPU backend (or
 * scores runs recorded elsewhere, e.g. on GPUs, against the fault set they were recorded from),
 * through the attribution job's real topology, and prints a confusion table.
 */
@Command(
    name = "eval",
    mixinStandardHelpOptions = true,
    description =
        "Run a fault matrix through the real pipeline and print how every window was judged.")
final class EvalCommand implements Callable<Integer> {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--backend",
      defaultValue = "cpu",
      description =
          "cpu: CPU ranks as threads, in real time; sim: the discrete-event simulator of the"
              + " protocol, for large worlds. Default: ${DEFAULT-VALUE}")
  String backend;

  @Option(
      names = "--worlds",
      split = ",",
      description = "World sizes (ranks). Default: 2,4,8,16 (cpu), 64,256,1024 (sim)")
  List<Integer> worlds;

  @Option(
      names = "--faults",
      split = ",",
      defaultValue =
          "clean,slow-rank,slow-publish,slow-ack,slow-copy,slow-link,dead-rank,intermittent,"
              + "2-equal,2-unequal,3-equal,3-unequal,uniform,reboot",
      description = "Fault families. Default: all")
  List<String> faults;

  @Option(
      names = "--severities",
      split = ",",
      defaultValue = "floor,2x,10x",
      description = "Multiples of --floor. Default: ${DEFAULT-VALUE}")
  List<String> severities;

  @Option(
      names = "--floor",
      defaultValue = "200us",
      converter = DurationConverter.class,
      description = "The stated detection floor of the backend. Default: ${DEFAULT-VALUE}")
  Duration floor;

  @Option(
      names = "--seconds",
      defaultValue = "14",
      description = "Length of each run. Default: ${DEFAULT-VALUE}")
  int seconds;

  @Option(
      names = "--onset",
      defaultValue = "7s",
      converter = DurationConverter.class,
      description =
          "When faults start, after the run's start (the uniform slowdown needs 5 clean windows"
              + " before it). Default: ${DEFAULT-VALUE}")
  Duration onset;

  @Option(
      names = "--interval",
      defaultValue = "250ms",
      converter = DurationConverter.class,
      description =
          "Snapshot interval (with --recorded: the one they were recorded with, which dates each"
              + " run's start one interval before its first snapshot). Default: ${DEFAULT-VALUE}")
  Duration interval;

  @Option(
      names = "--window",
      defaultValue = "1s",
      converter = DurationConverter.class,
      description = "Event-time window. Default: ${DEFAULT-VALUE}")
  Duration window;

  @Option(
      names = "--abs-floor-us",
      description =
          "The job's absolute floor (us/collective; the rule raises it with cost and noise)."
              + " Default: the fault set's @abs-floor-us with --recorded, else the job's (5)")
  Double absFloorUs;

  @Option(
      names = "--alert-min-effect",
      description =
          "The job's smallest latency regression that alerts (0.03: 3 %%), to find the detection"
              + " floor at other settings. Default: the job's")
  Double alertMinEffect;

  @Option(
      names = "--alert-noise-factor",
      description =
          "The job's band in standard deviations of the baseline's spread. Default: the job's")
  Double alertNoiseFactor;

  /** The job's options for this evaluation: its window, floor and alert settings. */
  private JobOptions options(double floor) {
    JobOptions o = AccuracyEval.options(window, floor);
    if (alertMinEffect != null) {
      if (!(alertMinEffect > 0 && alertMinEffect < 1)) {
        throw usage("--alert-min-effect: must be between 0 and 1, got " + alertMinEffect);
      }
      o = o.with(JobOptions.ALERT_MIN_EFFECT, Double.toString(alertMinEffect));
    }
    if (alertNoiseFactor != null) {
      if (!(alertNoiseFactor > 0)) {
        throw usage("--alert-noise-factor: must be positive, got " + alertNoiseFactor);
      }
      o = o.with(JobOptions.ALERT_NOISE_FACTOR, Double.toString(alertNoiseFactor));
    }
    return o;
  }

  private static final double JOB_ABS_FLOOR_US =
      Double.parseDouble(JobOptions.DEFAULTS.get(JobOptions.ABS_FLOOR_US));

  @Option(
      names = "--out",
      description = "Keep the recordings here (default: a temporary directory, removed)")
  Path out;

  @Option(
      names = "--recorded",
      description =
          "Score the recordings BACKEND-NAME.snapshots in this directory against the lines NAME of"
              + " --fault-set instead of running the matrix")
  Path recorded;

  @Option(
      names = "--fault-set",
      defaultValue = "dev/fault-set.txt",
      description =
          "With --recorded, when the directory has no fault-set.txt of its own: the runs' specs."
              + " Default: ${DEFAULT-VALUE}")
  Path faultSet;

  @Option(
      names = "--live",
      description =
          "Time to verdict in wall time: run this one --inject spec (with an @START onset) live"
              + " on --worlds' first size, through Kafka and the job as the demo does, and time"
              + " onset -> first window naming every culprit, as printed")
  String live;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    PrintWriter outw = spec.commandLine().getOut();
    if (window.toMillis() < 1000) throw usage("--window must be at least 1s");
    if (live != null) return timeToVerdict(outw, err);
    if (recorded != null) return scoreRecorded(outw, err);
    // One snapshot per window is enough in event time (the GPU recordings have that); more than
    // a window apart, some windows would have none.
    if (interval.compareTo(window) > 0) throw usage("--interval must not exceed --window");
    if (seconds * 1_000L <= onset.toMillis() + 3 * window.toMillis()) {
      throw usage("--seconds must leave at least three windows after --onset");
    }
    boolean sim;
    switch (backend) {
      case "cpu" -> sim = false;
      case "sim" -> sim = true;
      default -> throw usage("--backend must be cpu or sim, got '" + backend + "'");
    }
    if (worlds == null) worlds = sim ? List.of(64, 256, 1024) : List.of(2, 4, 8, 16);
    int maxWorld = sim ? 4096 : 64;
    for (int n : worlds) {
      if (n < 2 || n > maxWorld) throw usage("--worlds must be within 2.." + maxWorld);
    }
    if (sim && faults.contains("reboot")) {
      faults = new ArrayList<>(faults);
      faults.remove("reboot"); // the simulator has no emitter to restart
    }
    List<Family> families = new ArrayList<>();
    for (String f : faults) {
      try {
        families.add(Family.parse(f));
      } catch (IllegalArgumentException e) {
        throw usage("--faults: " + e.getMessage());
      }
    }
    for (String s : severities) {
      if (!FaultMatrix.SEVERITIES.contains(s)) throw usage("--severities: unknown '" + s + "'");
    }
    List<Cell> cells =
        FaultMatrix.cells(families, worlds, severities, floor.toNanos(), onset.toNanos());
    Path dir = out != null ? out : Files.createTempDirectory("collscope-eval");
    if (out != null) writeFaultSet(dir, cells);
    err.printf(
        "collscope eval: %d cells on the %s backend, %ds each, recordings in %s%n",
        cells.size(), backend, seconds, dir);
    err.flush();
    try {
      List<CellScore> scores =
          AccuracyEval.run(
              cells,
              sim
                  ? AccuracyEval.sim(Duration.ofSeconds(seconds), interval)
                  : AccuracyEval.cpu(Duration.ofSeconds(seconds), interval),
              dir,
              options(absFloorUs != null ? absFloorUs : JOB_ABS_FLOOR_US),
              err);
      ConfusionTable.print(scores, outw);
      return Defaults.EXIT_OK;
    } finally {
      if (out == null) deleteTree(dir);
    }
  }

  /**
   * The matrix's cells as a fault set beside their recordings ({@code DIR/fault-set.txt}): {@code
   * eval --recorded DIR} scores the same runs again, e.g. with another version of the rule, so two
   * rules are compared on the same recordings rather than on two runs of a noisy host.
   */
  private void writeFaultSet(Path dir, List<Cell> cells) throws java.io.IOException {
    Files.createDirectories(dir);
    StringBuilder sb = new StringBuilder();
    sb.append("# The cells of `collscope eval")
        .append(" --backend ")
        .append(backend)
        .append(" --floor ")
        .append(floor.toNanos() / 1000)
        .append("us --seconds ")
        .append(seconds)
        .append("`: score again with `collscope eval --recorded ")
        .append(dir)
        .append(" --interval ")
        .append(interval.toMillis())
        .append("ms`\n");
    for (Cell c : cells) {
      sb.append(c.id())
          .append(' ')
          .append(c.world())
          .append(' ')
          .append(seconds)
          .append(c.inject().isEmpty() ? "" : " " + c.inject())
          .append('\n');
    }
    Files.writeString(dir.resolve(FaultSet.FILE), sb.toString());
  }

  /**
   * Scores recordings made elsewhere against the fault set they were recorded from: the copy beside
   * them ({@code DIR/fault-set.txt}) if there is one, else {@code --fault-set}.
   */
  private int scoreRecorded(PrintWriter outw, PrintWriter err) throws Exception {
    if (!Files.isDirectory(recorded)) throw usage("--recorded: no directory " + recorded);
    Path setFile = recorded.resolve(FaultSet.FILE);
    if (!Files.isReadable(setFile)) setFile = faultSet;
    if (!Files.isReadable(setFile)) throw usage("--fault-set: cannot read " + setFile);
    FaultSet set = FaultSet.parse(setFile);
    FaultSet.Recorded r = set.find(recorded, interval);
    if (r.cells().isEmpty())
      throw usage("--recorded: no recording of " + setFile + " in " + recorded);
    double floor = absFloorUs != null ? absFloorUs : set.absFloorUs().orElse(JOB_ABS_FLOOR_US);
    err.printf(
        "collscope eval: scoring %d recordings from %s against %s at --abs-floor-us %s%n",
        r.cells().size(), recorded, setFile, floor);
    err.flush();
    List<CellScore> scores = AccuracyEval.score(r.cells(), r.files(), r.starts(), options(floor));
    ConfusionTable.print(scores, outw);
    return Defaults.EXIT_OK;
  }

  /**
   * One fault live: CPU ranks → Kafka → the job on a MiniCluster → the attribution topic, as in the
   * demo, timing onset → the first window that names every culprit, both when the line was read
   * (wall time) and at its window's end (event time).
   */
  private int timeToVerdict(PrintWriter outw, PrintWriter err) throws Exception {
    int n = worlds == null ? 8 : worlds.get(0);
    FaultPlan plan = FaultPlan.parse(List.of(live), n);
    long onsetNs = plan.faults().stream().mapToLong(FaultPlan.Fault::startNanos).min().orElse(0);
    if (onsetNs <= 0) throw usage("--live needs a spec with an onset, e.g. slow-rank=2:300us@10s");
    List<Instant> readAt = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Attribution> seen = java.util.Collections.synchronizedList(new ArrayList<>());
    CommunicatorKey key =
        new CommunicatorKey(AccuracyEval.CLUSTER, "live", AccuracyEval.COMMUNICATOR);
    Instant started;
    try (SnapshotFeed feed =
            SnapshotFeed.live(
                Backends.create(Backends.Kind.CPU, CollectiveConfig.of(n), plan),
                plan,
                key,
                interval,
                Duration.ofSeconds(seconds));
        DemoPipeline pipeline =
            DemoPipeline.start(
                window, 20, absFloorUs != null ? absFloorUs : JOB_ABS_FLOOR_US, 8081);
        AttributionReader reader =
            AttributionReader.start(
                pipeline.bootstrapServers(),
                pipeline.attributionTopic(),
                feed.communicators(),
                a -> {
                  readAt.add(Instant.now());
                  seen.add(a);
                },
                err);
        KafkaSnapshotSink sink = pipeline.snapshotSink()) {
      err.printf("collscope eval --live: %d cpu ranks, %s, %ds%n", n, live, seconds);
      err.flush();
      started = Instant.now();
      feed.run(sink);
      reader.awaitWindowEnd(pipeline.lastWindowEndBefore(Instant.now()), Duration.ofSeconds(20));
    }
    Instant onset = started.plusNanos(onsetNs);
    Expectation e = Expectation.of(plan, n, onsetNs, onsetNs + 1, 0).orElseThrow();
    for (int i = 0; i < seen.size(); i++) {
      Attribution a = seen.get(i);
      if (!a.getWindowEnd().isAfter(onset)) continue;
      if (e.missed(CellScore.tokens(a)).isEmpty()) {
        outw.printf(
            java.util.Locale.ROOT,
            "time to verdict for %s on %d cpu ranks with %ds windows: %.2fs event time (window"
                + " end), %.2fs wall time (line read), window %s-%s, findings %s%n",
            live,
            n,
            window.toSeconds(),
            Duration.between(onset, a.getWindowEnd()).toMillis() / 1e3,
            Duration.between(onset, readAt.get(i)).toMillis() / 1e3,
            a.getWindowStart(),
            a.getWindowEnd(),
            CellScore.tokens(a));
        outw.flush();
        return Defaults.EXIT_OK;
      }
    }
    outw.printf("no window named %s after the onset (%d windows seen)%n", e, seen.size());
    outw.flush();
    return Defaults.EXIT_FAILURE;
  }

  private static void deleteTree(Path dir) throws java.io.IOException {
    try (var s = Files.walk(dir)) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}
