package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The demo as a user runs it, shortened: broker, ranks, job, and the verdict per window. */
class DemoITCase {

  @Test
  void theDemoNamesAnInjectedSlowLinkInEveryFullWindowFromTheSecondOnAndExitsCleanly() {
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
            "18181");
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
    assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive).count())
        .as("no broker left behind")
        .isZero();
  }
}
