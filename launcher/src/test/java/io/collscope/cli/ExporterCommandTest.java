package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.JobOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code collscope exporter}: bad flags are one line and exit 2; no broker is exit 3. */
class ExporterCommandTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "--no-such-flag                                   | Unknown option: '--no-such-flag'",
        "--port 70000                                     | --port must be in 0..65535, got 70000",
        "--port -1                                        | --port must be in 0..65535",
        "--port x                                         | --port",
        "--series-ttl 5x                                  | '5x' is not a duration",
        "--series-ttl 0s                                  | --series-ttl must be > 0",
        "--seconds -1                                     | --seconds must be >= 0",
        "--alert-topic collscope.deadletter               | the four topics must differ",
        "--rank-window-topic ''                           | topic names must not be empty"
      })
  void aBadFlagIsOneLineAndExitCode2(String args, String message) {
    String[] argv = ("exporter --bootstrap localhost:1 " + args.strip()).split(" +");
    for (int i = 0; i < argv.length; i++) if (argv[i].equals("''")) argv[i] = "";
    CliRun r = CliRun.of(argv);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).startsWith("collscope exporter: ").contains(message);
  }

  @Test
  void anUnreachableBrokerIsExitCode3() {
    CliRun r =
        CliRun.of(
            "exporter", "--bootstrap", "localhost:1", "--broker-timeout", "1s", "--port", "0");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(3);
    assertThat(r.err()).contains("cannot reach Kafka at localhost:1");
  }

  @Test
  void theDefaultTopicsAreTheJobs() {
    ExporterCommand c = new ExporterCommand();
    picocli.CommandLine cl = new picocli.CommandLine(c);
    cl.parseArgs();
    JobOptions job = JobOptions.defaults();
    assertThat(c.rankWindowTopic).isEqualTo(job.get(JobOptions.RANK_WINDOW_TOPIC));
    assertThat(c.attributionTopic).isEqualTo(job.get(JobOptions.ATTRIBUTION_TOPIC));
    assertThat(c.alertTopic).isEqualTo(job.get(JobOptions.ALERT_TOPIC));
    assertThat(c.deadletterTopic).isEqualTo(job.get(JobOptions.DEADLETTER_TOPIC));
  }
}
