package io.collscope.eval;

import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.eval.FaultMatrix.Cell;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;

/**
 * A fault set ({@code dev/fault-set.txt}, and a copy beside every set of recordings made from it):
 * one run per line, {@code NAME RANKS SECONDS [INJECT] [below-floor]}; {@code #} starts a comment.
 * A line {@code @abs-floor-us US} states the floor the recordings are judged at (e.g. above a
 * shared device's launch skew), with its reason in a comment beside it. {@code below-floor} marks a
 * run recorded to find the floor: it is scored like the others, but nobody expects it right.
 */
public record FaultSet(List<Run> runs, OptionalDouble absFloorUs) {

  /** One line: a run's name, world size, length and {@code --inject} specs ("" for none). */
  public record Run(String name, int ranks, int seconds, String inject, boolean belowFloor) {}

  /** The copy beside recordings: {@code DIR/fault-set.txt}. */
  public static final String FILE = "fault-set.txt";

  public static FaultSet parse(Path file) throws IOException {
    List<Run> runs = new ArrayList<>();
    OptionalDouble floor = OptionalDouble.empty();
    int no = 0;
    for (String raw : Files.readAllLines(file)) {
      no++;
      String line = raw.replaceFirst("#.*", "").trim();
      if (line.isEmpty()) continue;
      String[] f = line.split("\\s+");
      try {
        if (f[0].equals("@abs-floor-us")) {
          floor = OptionalDouble.of(Double.parseDouble(f[1]));
        } else {
          boolean below = f[f.length - 1].equals("below-floor");
          int n = below ? f.length - 1 : f.length;
          runs.add(
              new Run(
                  f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), n > 3 ? f[3] : "", below));
        }
      } catch (RuntimeException e) {
        throw new IOException(file + ":" + no + ": expected NAME RANKS SECONDS [INJECT]: " + raw);
      }
    }
    return new FaultSet(runs, floor);
  }

  /** Recordings of this set in {@code dir}, named {@code BACKEND-NAME.snapshots}. */
  public record Recorded(
      List<Cell> cells, List<Path> files, List<Instant> starts, java.util.Set<String> belowFloor) {}

  /**
   * Finds the recordings of every run in {@code dir}; each run is dated from its first snapshot,
   * which comes one {@code interval} after the ranks started.
   */
  public Recorded find(Path dir, Duration interval)
      throws IOException, io.collscope.schema.DecodeException {
    List<Cell> cells = new ArrayList<>();
    List<Path> files = new ArrayList<>();
    List<Instant> starts = new ArrayList<>();
    java.util.Set<String> below = new java.util.HashSet<>();
    for (Run run : runs) {
      List<Path> matches;
      try (var s = Files.list(dir)) {
        matches =
            s.filter(p -> p.getFileName().toString().endsWith("-" + run.name() + ".snapshots"))
                .sorted()
                .toList();
      }
      for (Path p : matches) {
        List<CounterSnapshot> snaps = SnapshotRecording.readAll(List.of(p));
        if (snaps.isEmpty()) continue;
        starts.add(snaps.get(0).getEventTime().minus(interval));
        String id = p.getFileName().toString().replace(".snapshots", "");
        cells.add(Cell.recorded(id, snaps.get(0).getWorldSize(), run.inject()));
        if (run.belowFloor()) below.add(id);
        files.add(p);
      }
    }
    return new Recorded(cells, files, starts, below);
  }
}
