package io.collscope.cli;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.Replayer;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.DecodeException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Where the demo's snapshots come from: ranks running here, read by an {@link Emitter}, or a
 * recording from {@code collscope emit --record} (e.g. made on a GPU node) replayed with its own
 * pacing and event times moved to now.
 */
sealed interface SnapshotFeed extends AutoCloseable {

  /** The communicators the snapshots are of. */
  Set<CommunicatorKey> communicators();

  /** What feeds, for the start-up line, e.g. {@code 4 cpu ranks, faults none, 45s}. */
  String describe();

  /**
   * Sends every snapshot to {@code sink}; returns when the ranks stopped or the recording ended.
   */
  Emitter.Result run(SnapshotSink sink) throws InterruptedException;

  /** The ranks of {@code ranks} for {@code duration}, a snapshot of each every {@code interval}. */
  static SnapshotFeed live(
      CollectiveBackend ranks,
      FaultPlan faults,
      CommunicatorKey communicator,
      Duration interval,
      Duration duration) {
    return new Live(ranks, faults, communicator, interval, duration);
  }

  /**
   * The snapshots recorded in {@code files}, merged by event time (e.g. one file per rank's
   * process, or several communicators recorded at once).
   *
   * @throws IllegalArgumentException when they hold none
   */
  static SnapshotFeed recorded(List<Path> files) throws IOException, DecodeException {
    List<CounterSnapshot> recording = SnapshotRecording.readAll(files);
    if (recording.isEmpty()) throw new IllegalArgumentException(files + " hold no snapshots");
    return new Recorded(files, recording);
  }

  /** Ranks running here until the duration elapses, the backend fails, or the JVM shuts down. */
  final class Live implements SnapshotFeed {
    private final CollectiveBackend ranks;
    private final FaultPlan faults;
    private final CommunicatorKey communicator;
    private final Duration interval;
    private final Duration duration;

    private Live(
        CollectiveBackend ranks,
        FaultPlan faults,
        CommunicatorKey communicator,
        Duration interval,
        Duration duration) {
      this.ranks = ranks;
      this.faults = faults;
      this.communicator = communicator;
      this.interval = interval;
      this.duration = duration;
    }

    @Override
    public Set<CommunicatorKey> communicators() {
      return Set.of(communicator);
    }

    @Override
    public String describe() {
      return String.format(
          "%d %s ranks, faults %s, %ds",
          ranks.worldSize(), ranks.name(), faults, duration.toSeconds());
    }

    @Override
    public Emitter.Result run(SnapshotSink sink) throws InterruptedException {
      Identity identity =
          Identity.of(communicator.cluster(), communicator.job(), communicator.communicator());
      Emitter emitter = new Emitter(ranks, identity, sink, interval);
      // Ctrl-C stops the ranks early; the command still waits for the last window and cleans up.
      Thread hook = new Thread(emitter::requestStop, "collscope-demo-sigint");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        return emitter.run(duration);
      } finally {
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // The JVM is already shutting down: the hook has run, nothing to remove.
        }
      }
    }

    @Override
    public void close() throws Exception {
      ranks.close();
    }
  }

  /** A recording, replayed once. */
  final class Recorded implements SnapshotFeed {
    private final List<Path> files;
    private final List<CounterSnapshot> recording;

    private Recorded(List<Path> files, List<CounterSnapshot> recording) {
      this.files = List.copyOf(files);
      this.recording = recording;
    }

    @Override
    public Set<CommunicatorKey> communicators() {
      Set<CommunicatorKey> keys = new LinkedHashSet<>();
      for (CounterSnapshot s : recording) keys.add(CommunicatorKey.of(s));
      return keys;
    }

    @Override
    public String describe() {
      CounterSnapshot first = recording.get(0);
      long millis =
          recording.get(recording.size() - 1).getEventTime().toEpochMilli()
              - first.getEventTime().toEpochMilli();
      return String.format(
          "%d recorded communicator(s) %s, faults as recorded in %s, %ds",
          communicators().size(), communicators(), files, millis / 1000);
    }

    @Override
    public Emitter.Result run(SnapshotSink sink) throws InterruptedException {
      Replayer.replay(recording, sink, true);
      return new Emitter.Result(recording.size(), sink.failed(), 0, Optional.empty());
    }

    @Override
    public void close() {
      // The recording is in memory: nothing to release.
    }
  }
}
