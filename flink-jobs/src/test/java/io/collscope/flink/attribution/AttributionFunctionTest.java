package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AttributionFunctionTest {

  private KeyedOneInputStreamOperatorTestHarness<String, RankWindow, Attribution> harness;

  @BeforeEach
  void setUp() throws Exception {
    harness =
        new KeyedOneInputStreamOperatorTestHarness<>(
            new KeyedProcessOperator<>(new AttributionFunction(Thresholds.DEFAULT)),
            RankWindow::getCommunicator,
            Types.STRING);
    harness.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    harness.close();
  }

  private List<Attribution> output() {
    return harness.extractOutputValues();
  }

  @Test
  void waitsForTheWatermarkThenAttributesTheWholeWindowOnce() throws Exception {
    List<RankWindow> ranks = new Windows(4, 10).slowRank(2, 300).build();
    for (RankWindow w : ranks.subList(0, 3)) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 2);
    assertThat(output()).isEmpty();
    harness.processElement(ranks.get(3), Windows.END - 1);
    harness.processWatermark(Windows.END - 1);
    assertThat(output()).hasSize(1);
    Attribution a = output().get(0);
    assertThat(a.getVerdict()).isEqualTo("SLOW_RANK");
    assertThat(a.getFindings().get(0).getRank()).isEqualTo(2);
    assertThat(a.getMissingRanks()).isEmpty();
    assertThat(a.getWindowStartMs().toEpochMilli()).isEqualTo(Windows.START);
    assertThat(a.getWindowEndMs().toEpochMilli()).isEqualTo(Windows.END);

    // a straggling rank window of an attributed window is dropped, not attributed again
    harness.processElement(ranks.get(0), Windows.END - 1);
    harness.processWatermark(Windows.END + 10_000);
    assertThat(output()).hasSize(1);
    assertThat(harness.numKeyedStateEntries()).isEqualTo(1); // only lastFired remains
  }

  @Test
  void aRankWithoutAWindowByTheWatermarkIsMissing() throws Exception {
    for (RankWindow w : new Windows(4, 10).absent(1).build()) {
      harness.processElement(w, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    assertThat(output())
        .singleElement()
        .satisfies(a -> assertThat(a.getMissingRanks()).containsExactly(1));
  }

  @Test
  void windowsOfDifferentCommunicatorsAreIndependent() throws Exception {
    for (RankWindow w : new Windows(2, 5).slowRank(1, 300).build()) {
      harness.processElement(w, Windows.END - 1);
      RankWindow other = RankWindow.newBuilder(w).setCommunicator("d").build();
      harness.processElement(other, Windows.END - 1);
    }
    harness.processWatermark(Windows.END - 1);
    assertThat(output())
        .extracting(Attribution::getCommunicator)
        .containsExactlyInAnyOrder("c", "d");
  }
}
