package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The names {@code emit} builds its default spool directory from cannot reach outside it: {@code
 * ..} or a separator is one line and exit 2, before any broker is asked.
 */
class EmitNamesTest {

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
    "--cluster, ..",
    "--cluster, ../../etc",
    "--job, a/b",
    "--job, .",
    "--communicator, ..",
    "--communicator, /tmp/x",
    "--topic, ..",
  })
  void aNameThatWouldEscapeTheSpoolDirectoryIsOneLineAndExitCode2(String option, String value)
      throws Exception {
    CliRun r =
        CliRun.of(
            "emit",
            "--backend",
            "cpu",
            "--bootstrap",
            "127.0.0.1:1",
            "--broker-timeout",
            "1s",
            option,
            value);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains(option + " '" + value + "' must be a plain name");
  }
}
