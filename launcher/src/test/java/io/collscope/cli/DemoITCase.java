package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.history.HistoryDb;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo as a user runs it, shortened: broker, ranks, job, and the verdict per window. */
class DemoITCase {

  @TempDir Path history;

  @Test
  void theDemoNamesAnInjectedSlowLinkInEveryFullWindowFromTheSecondOnAndExitsCleanly()
      throws Exception {
    CliRun r =
        CliRun.of(
            "demo",
            "--ranks",
            "4",
            "--seconds",
            "20",
            "--window",
            "4s",
            "--interval",
            "500ms",
            "--backend",
            "cpu",
            "--inject",
            "slow-link=0->2:10ms",
            "--json",
            "--ui-port",
            "18181",
            "--history",
            history.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<String> lines = r.out().strip().lines().toList();
    // Window lines, and the alert the sustained slow link may raise: every line one JSON object.
    assertThat(lines)
        .allMatch(
            l ->
                (l.startsWith("{\"type\":\"window\",") || l.startsWith("{\"type\":\"alert\","))
                    && l.endsWith("}"));
    List<String> full = lines.stream().filter(l -> l.contains("\"full_window\":true")).toList();
    assertThat(full).as(r.out()).hasSizeGreaterThanOrEqualTo(3);
    for (String l : full.subList(1, full.size())) {
      assertThat(l)
          .contains("\"verdict\":\"SLOW_LINK\"", "\"link\":\"0->2\"", "\"missing_ranks\":[]");
    }
    assertThat(r.err()).contains("0 failed deliveries");

    // The same windows in the history: every full window that was printed, committed (the demo
    // stops the job with a savepoint) and nothing left in progress.
    try (HistoryDb db = HistoryDb.open(history);
        Statement s = db.connection().createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FILTER (WHERE verdict = 'SLOW_LINK'),"
                    + " count(DISTINCT window_end), count(*) FROM attributions")) {
      rs.next();
      assertThat(rs.getLong(1)).isGreaterThanOrEqualTo(full.size() - 1);
      assertThat(rs.getLong(3)).as("each window once").isEqualTo(rs.getLong(2));
    }
    try (Stream<Path> files = Files.walk(history)) {
      assertThat(files.map(p -> history.relativize(p).toString()))
          .contains("rank_windows", "attributions")
          .anyMatch(
              p -> p.matches("attributions/dt=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2}/part-.*\\.parquet"))
          .noneMatch(p -> p.contains("inprogress"));
    }
    assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive).count())
        .as("no broker left behind")
        .isZero();
  }
}
