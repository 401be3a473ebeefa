package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code collscope alerts forward}: a bad URL or option is one line and exit code 2. */
class AlertsCommandTest {

  @ParameterizedTest
  @ValueSource(
      strings = {"localhost:9093", "ftp://am:9093", "http://", "http://am:9093/?x=1", "not a url"})
  void aBadAlertmanagerUrlIsOneLineAndExitCode2(String url) {
    CliRun r = CliRun.of("alerts", "forward", "--alertmanager", url, "--bootstrap", "localhost:1");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).startsWith("collscope alerts forward: --alertmanager '");
  }

  @Test
  void aMissingAlertmanagerIsOneLineAndExitCode2() {
    CliRun r = CliRun.of("alerts", "forward");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("--alertmanager");
  }

  @Test
  void aZeroResendIsOneLineAndExitCode2() {
    CliRun r =
        CliRun.of("alerts", "forward", "--alertmanager", "http://localhost:9093", "--resend", "0s");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip()).isEqualTo("collscope alerts forward: --resend must be > 0");
  }

  @Test
  void alertsAloneAsksForItsCommand() {
    CliRun r = CliRun.of("alerts");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
  }
}
