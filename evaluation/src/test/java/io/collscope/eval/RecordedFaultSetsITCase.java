package io.collscope.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every set of recordings under recordings/ made from a fault set (a {@code fault-set.txt} beside
 * them, e.g. the H200 runs) replayed through the job's topology and scored window by window against
 * its timed specs: every judged window names exactly its faults, and every faulted run is judged.
 */
class RecordedFaultSetsITCase {

  private static final Path DOCS = Path.of("..", "recordings");

  @Test
  void everyJudgedWindowOfEveryRecordedFaultSetIsRight() throws Exception {
    List<Path> sets;
    try (Stream<Path> s = Files.walk(DOCS)) {
      sets = s.filter(p -> p.getFileName().toString().equals(FaultSet.FILE)).sorted().toList();
    }
    assertThat(sets).as("recorded fault sets under %s", DOCS).isNotEmpty();
    for (Path file : sets) {
      FaultSet set = FaultSet.parse(file);
      FaultSet.Recorded r = set.find(file.getParent(), Duration.ofSeconds(1));
      assertThat(r.cells()).as("%s: recordings", file).isNotEmpty();
      List<CellScore> scores =
          AccuracyEval.score(
              r.cells(),
              r.files(),
              r.starts(),
              AccuracyEval.options(Duration.ofSeconds(1), set.absFloorUs().orElse(5)));
      for (CellScore s : scores) {
        assertThat(s.judged()).as("%s: judged windows", s.cell().id()).isGreaterThan(3);
        if (r.belowFloor().contains(s.cell().id())) continue; // recorded to find the floor
        assertThat(s.correct()).as("%s: %s", s.cell().id(), s.example()).isEqualTo(s.judged());
      }
    }
  }
}
