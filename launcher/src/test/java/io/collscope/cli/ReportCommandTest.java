package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad flags of {@code collscope report}: one line on stderr, exit code 2, no file written. */
class ReportCommandTest {

  static void assertUsageError(CliRun r) {
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip()).doesNotContain("\n").startsWith("collscope report: ");
  }

  @Test
  void badFlagsAreOneLineAndExitCode2(@TempDir Path dir) {
    Path out = dir.resolve("r.html");
    String h = dir.toString();
    String o = out.toString();
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--bogus"));
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--since", "yesterday"));
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--since", "0h"));
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--until", "soon"));
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--top", "-1"));
    assertUsageError(CliRun.of("report", "--history", h, "--out", o, "--communicator", "a/b"));
    assertUsageError(CliRun.of("report", "--history", dir.resolve("none").toString(), "--out", o));
    assertThat(Files.exists(out)).isFalse();
  }

  @Test
  void anEmptyHistoryIsAReportThatSaysSo(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("r.html");
    CliRun r = CliRun.of("report", "--history", dir.toString(), "--out", out.toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(Files.readString(out)).contains("\"communicators\":[]");
  }
}
