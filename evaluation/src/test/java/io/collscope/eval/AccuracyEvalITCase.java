package io.collscope.eval;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.eval.FaultMatrix.Cell;
import io.collscope.eval.FaultMatrix.Family;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The evaluation end to end on the simulator (fast, deterministic): cells recorded, replayed
 * through the job's topology on a local Flink runtime, scored. And the scorer can fail: a clean
 * recording scored as if it held a slow rank misses it in every judged window.
 */
class AccuracyEvalITCase {

  private static final Duration SECONDS = Duration.ofSeconds(12);
  private static final Duration INTERVAL = Duration.ofMillis(250);
  private static final long ONSET = 6_000_000_000L;

  @Test
  void simulatedFaultsAreNamedInEveryJudgedWindow(@TempDir Path dir) throws Exception {
    List<Cell> cells =
        FaultMatrix.cells(
            List.of(Family.CLEAN, Family.SLOW_RANK, Family.TWO_UNEQUAL, Family.SLOW_LINK),
            List.of(8),
            List.of("2x"),
            100_000,
            ONSET);
    StringWriter log = new StringWriter();
    List<CellScore> scores =
        AccuracyEval.run(
            cells,
            AccuracyEval.sim(SECONDS, INTERVAL),
            dir,
            AccuracyEval.options(Duration.ofSeconds(1), 5),
            new PrintWriter(log));
    assertThat(scores).hasSize(4);
    for (CellScore s : scores) {
      assertThat(s.judged()).as(s.cell().id()).isGreaterThanOrEqualTo(8);
      assertThat(s.correct()).as("%s: %s", s.cell().id(), s.example()).isEqualTo(s.judged());
      if (!s.cell().inject().isEmpty()) {
        assertThat(s.verdictSeconds()).as(s.cell().id()).isBetween(0.0, 3.0);
      }
    }
    StringWriter table = new StringWriter();
    ConfusionTable.print(scores, new PrintWriter(table));
    assertThat(table.toString()).contains("4 cells, 4 with every judged window correct");
  }

  @Test
  void aFaultThatIsNotInTheRecordingIsMissed(@TempDir Path dir) throws Exception {
    Cell clean = FaultMatrix.cells(List.of(Family.CLEAN), List.of(4), List.of(), 0, ONSET).get(0);
    Instant start =
        AccuracyEval.sim(SECONDS, INTERVAL)
            .record(
                clean,
                AccuracyEval.plan(clean),
                io.collscope.emitter.Identity.of("eval", "mislabelled", "tp0"),
                dir.resolve("clean.snapshots"));
    Cell claimed = Cell.recorded("mislabelled", 4, "slow-rank=2:1ms@6s");
    CellScore s =
        AccuracyEval.score(
                List.of(claimed),
                List.of(dir.resolve("clean.snapshots")),
                List.of(start),
                AccuracyEval.options(Duration.ofSeconds(1), 5))
            .get(0);
    assertThat(s.judged()).isGreaterThan(0);
    assertThat(s.missed()).isGreaterThan(0);
    assertThat(s.correct()).isLessThan(s.judged());
    assertThat(s.verdictSeconds()).isNaN();
  }
}
