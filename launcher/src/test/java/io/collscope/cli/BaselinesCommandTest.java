package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.flink.alert.BaselineFile;
import io.collscope.model.CommunicatorKey;
import java.util.List;
import org.junit.jupiter.api.Test;

class BaselinesCommandTest {

  @Test
  void aHistoryOfFaultyWindowsIsToldWhyItLearntNothing() {
    String line = BaselinesCommand.windowsLine(new BaselineFile.Learning(List.of(), 9, 2, 7, 0));
    assertThat(line)
        .isEqualTo(
            "collscope baselines: learnt from 0 of 9 windows (passed over: 2 warming up, 7 with a"
                + " finding or a missing rank, 0 without a latency); no baseline: a baseline is"
                + " learnt from clean windows, and these had findings");
  }

  @Test
  void tooShortAHistoryIsToldSo() {
    assertThat(BaselinesCommand.windowsLine(new BaselineFile.Learning(List.of(), 2, 2, 0, 0)))
        .endsWith("; no baseline: too few windows per communicator");
  }

  @Test
  void windowsWithoutCollectivesAreNotCalledTooFew() {
    assertThat(BaselinesCommand.windowsLine(new BaselineFile.Learning(List.of(), 9, 2, 0, 7)))
        .endsWith("; no baseline: the windows past warm-up had no latency (no collectives)");
  }

  @Test
  void aHistoryThatLearntSaysOnlyFromWhat() {
    BaselineFile.Row row =
        new BaselineFile.Row(
            BaselineFile.SCOPE_COMMUNICATOR,
            new CommunicatorKey("lab", "job", "tp0"),
            "allreduce_oneshot_f32",
            8,
            4096,
            100.0,
            1.0,
            15);
    assertThat(BaselinesCommand.windowsLine(new BaselineFile.Learning(List.of(row), 20, 2, 3, 0)))
        .isEqualTo(
            "collscope baselines: learnt from 15 of 20 windows (passed over: 2 warming up, 3 with"
                + " a finding or a missing rank, 0 without a latency)");
  }
}
