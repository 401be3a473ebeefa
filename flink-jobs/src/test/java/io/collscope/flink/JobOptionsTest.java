package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The job's options: arguments over collscope's configuration file (--config) over defaults. */
class JobOptionsTest {

  @TempDir Path dir;

  @Test
  void theConfigFileSetsTheJobsOptionsAndArgumentsWin() throws Exception {
    Path file = dir.resolve("collscope.properties");
    Files.writeString(
        file,
        String.join(
            "\n",
            "bootstrap = kafka-1:9092",
            "attribution.window = 3s",
            "window = 7s", // the unqualified key loses to the job's own
            "ranks = 8", // another command's key: not the job's business
            "attribution.history-path = file:///data/history",
            ""));
    JobOptions o = JobOptions.parse("--config", file.toString(), "--history-path", "/tmp/h");
    assertThat(o.get(JobOptions.BOOTSTRAP)).isEqualTo("kafka-1:9092");
    assertThat(o.get(JobOptions.WINDOW)).isEqualTo("3s");
    assertThat(o.get(JobOptions.HISTORY_PATH)).isEqualTo("/tmp/h");
    assertThat(o.get(JobOptions.STATE_TTL))
        .isEqualTo(JobOptions.DEFAULTS.get(JobOptions.STATE_TTL));
  }

  @Test
  void anUnknownJobKeyOrABadValueInTheFileIsAnError() throws Exception {
    Path file = dir.resolve("collscope.properties");
    Files.writeString(file, "attribution.windw = 3s\n");
    assertThatThrownBy(() -> JobOptions.parse("--config", file.toString()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'attribution.windw'");
    Files.writeString(file, "attribution.window = soon\n");
    assertThatThrownBy(() -> JobOptions.parse("--config", file.toString()))
        .hasMessageContaining("--window 'soon' is not a duration");
    assertThatThrownBy(() -> JobOptions.parse("--config", dir.resolve("none").toString()))
        .hasMessageContaining("--config");
  }
}
