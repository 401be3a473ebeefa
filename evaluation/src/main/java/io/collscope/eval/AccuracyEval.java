package io.collscope.eval;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.RankWindow;
import io.collscope.backend.Backends;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.eval.FaultMatrix.Cell;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.flink.sink.CollectingSink;
import io.collscope.flink.sink.DiscardingSink;
import io.collscope.flink.source.RecordedSource;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.RecordedFrame;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The accuracy evaluation: records each cell of a {@link FaultMatrix} with a real backend (its own
 * job name, so cells never share state), then runs every recording through the attribution job's
 * real topology on a local Flink runtime in event time — as fast as the job goes, the windows as
 * they would have been live — and scores each cell's windows against its faults.
 */
public final class AccuracyEval {

  /** How a cell is turned into a recording. */
  public interface Recorder {
    /** Records the cell into {@code file}; returns the event time its run started at. */
    Instant record(Cell cell, FaultPlan plan, Identity identity, Path file) throws Exception;
  }

  public static final String CLUSTER = "eval";
  public static final String COMMUNICATOR = "tp0";

  private AccuracyEval() {}

  /** Runs the cells on the CPU backend, one after another, for {@code seconds} each. */
  public static Recorder cpu(Duration seconds, Duration interval) {
    return (cell, plan, identity, file) -> {
      CollectiveBackend backend =
          Backends.create(Backends.Kind.CPU, CollectiveConfig.of(cell.world()), plan);
      try (backend) {
        SnapshotRecording.Writer writer = new SnapshotRecording.Writer(file);
        Instant start = Instant.now();
        Emitter.Result r = new Emitter(backend, identity, writer, interval).run(seconds);
        writer.close();
        if (r.failure().isPresent()) {
          throw new IllegalStateException(cell.id() + ": backend failed", r.failure().get());
        }
        return start;
      }
    };
  }

  /**
   * Runs the cells in the discrete-event simulator of the protocol ({@link OneShotSimulator}), all
   * on one simulated timeline from {@link #SIM_START}: as fast as the simulator goes, any world
   * size. Snapshots every {@code interval}, as the CPU runs.
   */
  public static Recorder sim(Duration seconds, Duration interval) {
    return (cell, plan, identity, file) -> {
      SimSpec spec =
          SimSpec.of(cell.world())
              .withDurationNanos(seconds.toNanos())
              .withSnapshots(interval.toNanos(), interval.toNanos() / 10);
      try (SnapshotRecording.Writer writer = new SnapshotRecording.Writer(file)) {
        OneShotSimulator.run(
            spec,
            FaultPlanModel.of(plan),
            SimIdentity.of(identity.cluster(), identity.job(), identity.communicator(), SIM_START),
            writer);
        writer.flush();
      }
      return SIM_START;
    };
  }

  /** The prefix of the matrix's recordings: {@code matrix-ID.snapshots}. */
  public static final String RECORDING_PREFIX = "matrix-";

  /** Where simulated runs start in event time. */
  public static final Instant SIM_START = Instant.parse("2026-01-01T00:00:00Z");

  /** Records, replays and scores every cell; progress goes to {@code log}. */
  public static List<CellScore> run(
      List<Cell> cells, Recorder recorder, Path dir, JobOptions options, PrintWriter log)
      throws Exception {
    Files.createDirectories(dir);
    List<Path> files = new ArrayList<>();
    List<Instant> starts = new ArrayList<>();
    int i = 0;
    for (Cell c : cells) {
      // Named as a fault set's recordings are (BACKEND-NAME), so --recorded can score them again.
      Path file = dir.resolve(RECORDING_PREFIX + c.id() + ".snapshots");
      Files.deleteIfExists(file);
      log.printf("[%d/%d] %-28s %s%n", ++i, cells.size(), c.id(), c.inject());
      log.flush();
      starts.add(recorder.record(c, plan(c), Identity.of(CLUSTER, c.id(), COMMUNICATOR), file));
      files.add(file);
    }
    return score(cells, files, starts, options);
  }

  /**
   * Replays the cells' recordings (their i-th run started at {@code starts[i]}) and scores each
   * cell's windows. A cell's windows are those of its recording's communicators.
   */
  public static List<CellScore> score(
      List<Cell> cells, List<Path> files, List<Instant> starts, JobOptions options)
      throws Exception {
    Map<CommunicatorKey, Integer> cellOf = new HashMap<>();
    for (int i = 0; i < files.size(); i++) {
      for (var s : SnapshotRecording.readAll(List.of(files.get(i)))) {
        cellOf.put(io.collscope.model.RankKey.of(s).communicatorKey(), i);
      }
    }
    List<List<Attribution>> byCell = new ArrayList<>();
    List<List<Alert>> alertsByCell = new ArrayList<>();
    for (int i = 0; i < cells.size(); i++) {
      byCell.add(new ArrayList<>());
      alertsByCell.add(new ArrayList<>());
    }
    Replay replay = replay(files, options);
    for (Attribution a : replay.attributions()) {
      Integer i = cellOf.get(CommunicatorKey.of(a));
      if (i != null) byCell.get(i).add(a);
    }
    for (Alert a : replay.alerts()) {
      Integer i = cellOf.get(new CommunicatorKey(a.getCluster(), a.getJob(), a.getCommunicator()));
      if (i != null) alertsByCell.get(i).add(a);
    }
    List<CellScore> scores = new ArrayList<>();
    for (int i = 0; i < cells.size(); i++) {
      List<Attribution> windows = byCell.get(i);
      windows.sort(java.util.Comparator.comparing(Attribution::getWindowStart));
      scores.add(
          CellScore.of(
              cells.get(i),
              plan(cells.get(i)),
              starts.get(i).toEpochMilli(),
              windows,
              alertsByCell.get(i)));
    }
    return scores;
  }

  static FaultPlan plan(Cell c) {
    return c.inject().isEmpty() ? FaultPlan.NONE : FaultPlan.parse(List.of(c.inject()), c.world());
  }

  /** What the job made of a replay: its attributed windows and its alert transitions. */
  public record Replay(List<Attribution> attributions, List<Alert> alerts) {}

  /** The job's defaults with this window and absolute floor: what every evaluation varies. */
  public static JobOptions options(Duration window, double absFloorUs) {
    return JobOptions.defaults()
        .with(JobOptions.WINDOW, window.toMillis() + "ms")
        .with(JobOptions.ABS_FLOOR_US, Double.toString(absFloorUs));
  }

  /** Every recording through the job's topology with these options, in event time. */
  public static Replay replay(List<Path> files, JobOptions options) throws Exception {
    List<RecordedFrame> frames = SnapshotRecording.frames(files);
    // Only the verdicts and the alerts are scored: keeping every rank window of a 1024-rank
    // world (three arrays of 1024 numbers each) would fill the heap for nothing.
    CollectingSink<Attribution> verdicts = new CollectingSink<>();
    CollectingSink<Alert> alerts = new CollectingSink<>();
    // No checkpoints (AttributionJob.configure is not called): a bounded replay into sinks in this
    // JVM has nothing to commit and, run again, simply starts over.
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment();
    env.setParallelism(1); // see RecordedSource
    AttributionJob.topology(
        env,
        RecordedSource.of(frames),
        new AttributionJob.Sinks(
            new DiscardingSink<RankWindow>(), verdicts, new DiscardingSink<DeadLetter>(), alerts),
        options);
    env.execute("collscope eval");
    return new Replay(verdicts.received(), alerts.received());
  }
}
