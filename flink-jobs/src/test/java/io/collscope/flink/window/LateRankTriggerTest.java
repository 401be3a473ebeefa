package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.functions.windowing.WindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperatorBuilder;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The rank window's trigger in Flink's own window operator, as the job builds it (10 s tumbling
 * windows, allowed lateness = grace): records are (rank, event time), the window sends {@code
 * rank:end:records}.
 */
class LateRankTriggerTest {

  private static final long WINDOW = 10_000;
  private static final Duration GRACE = Duration.ofSeconds(2);

  private KeyedOneInputStreamOperatorTestHarness<Integer, Tuple2<Integer, Long>, String> harness;

  private void open(Trigger<Object, TimeWindow> trigger) throws Exception {
    WindowOperatorBuilder<Tuple2<Integer, Long>, Integer, TimeWindow> b =
        new WindowOperatorBuilder<>(
            TumblingEventTimeWindows.of(Duration.ofMillis(WINDOW)),
            trigger,
            new ExecutionConfig(),
            Types.TUPLE(Types.INT, Types.LONG),
            (Tuple2<Integer, Long> r) -> r.f0,
            Types.INT);
    b.allowedLateness(GRACE);
    WindowFunction<Tuple2<Integer, Long>, String, Integer, TimeWindow> count =
        (Integer rank, TimeWindow w, Iterable<Tuple2<Integer, Long>> rs, Collector<String> out) -> {
          int n = 0;
          for (Tuple2<Integer, Long> ignored : rs) n++;
          out.collect(rank + ":" + w.getEnd() + ":" + n);
        };
    harness = new KeyedOneInputStreamOperatorTestHarness<>(b.apply(count), r -> r.f0, Types.INT);
    harness.open();
  }

  @AfterEach
  void close() throws Exception {
    if (harness != null) harness.close();
  }

  private void records(int rank, long... times) throws Exception {
    for (long t : times) harness.processElement(Tuple2.of(rank, t), t);
  }

  private List<String> sent() {
    return harness.extractOutputValues();
  }

  @Test
  void aRankWhoseRecordsAllComeLateIsSentOnceWithThemAllWhenTheGracePasses() throws Exception {
    open(new LateRankTrigger(GRACE));
    records(0, 1_000, 4_000, 9_000);
    harness.processWatermark(WINDOW + 500);
    assertThat(sent()).containsExactly("0:10000:3");

    records(1, 1_000, 4_000, 9_000); // rank 1's reporter lags: all after the watermark
    harness.processWatermark(WINDOW - 1 + GRACE.toMillis() - 1);
    assertThat(sent()).as("held until the grace passes").containsExactly("0:10000:3");
    harness.processWatermark(WINDOW - 1 + GRACE.toMillis());
    assertThat(sent()).containsExactly("0:10000:3", "1:10000:3");
  }

  @Test
  void aWindowAlreadySentIsNotSentAgainForALateRecord() throws Exception {
    open(new LateRankTrigger(GRACE));
    records(0, 1_000, 4_000);
    harness.processWatermark(WINDOW + 500);
    records(0, 9_000);
    harness.processWatermark(3 * WINDOW);
    assertThat(sent()).containsExactly("0:10000:2");
  }

  @Test
  void recordsLaterThanTheGraceAreDroppedAndNothingIsLeftBehind() throws Exception {
    open(new LateRankTrigger(GRACE));
    records(0, 1_000);
    harness.processWatermark(WINDOW - 1 + GRACE.toMillis() + 1);
    records(1, 1_000);
    harness.processWatermark(3 * WINDOW);
    assertThat(sent()).containsExactly("0:10000:1");
    assertThat(harness.numKeyedStateEntries()).isZero();
    assertThat(harness.numEventTimeTimers()).isZero();
  }
}
