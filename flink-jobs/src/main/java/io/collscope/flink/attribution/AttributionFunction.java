package io.collscope.flink.attribution;

import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Keyed by communicator: gathers every rank's {@link RankWindow} of one window and, when the
 * watermark passes the window's end, attributes it with {@link Attributor}. A rank with no window
 * by then is reported missing. Rank windows of a window already attributed are late: counted and
 * dropped, so a window is attributed exactly once.
 */
public final class AttributionFunction
    extends KeyedProcessFunction<String, RankWindow, Attribution> {

  private final Thresholds thresholds;
  private transient MapState<Long, List<RankWindow>> pending;
  private transient ValueState<Long> lastFired;
  private transient Counter late;

  public AttributionFunction(Thresholds thresholds) {
    this.thresholds = thresholds;
  }

  @Override
  public void open(OpenContext ctx) {
    pending =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "pending",
                    Types.LONG,
                    new ListTypeInfo<>(TypeInformation.of(RankWindow.class))));
    lastFired = getRuntimeContext().getState(new ValueStateDescriptor<>("lastFired", Types.LONG));
    late = getRuntimeContext().getMetricGroup().counter("lateRankWindows");
  }

  @Override
  public void processElement(RankWindow w, Context ctx, Collector<Attribution> out)
      throws Exception {
    long end = w.getWindowEndMs().toEpochMilli();
    Long fired = lastFired.value();
    if (fired != null && end <= fired) {
      late.inc();
      return;
    }
    List<RankWindow> list = pending.get(end);
    if (list == null) {
      list = new ArrayList<>();
      ctx.timerService().registerEventTimeTimer(end - 1);
    }
    list.add(w);
    pending.put(end, list);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Attribution> out)
      throws Exception {
    long end = timestamp + 1;
    List<RankWindow> list = pending.get(end);
    if (list == null) {
      return;
    }
    pending.remove(end);
    Long fired = lastFired.value();
    if (fired == null || end > fired) {
      lastFired.update(end);
    }
    long start = list.get(0).getWindowStartMs().toEpochMilli();
    out.collect(Attributor.attribute(ctx.getCurrentKey(), start, end, list, thresholds));
  }
}
