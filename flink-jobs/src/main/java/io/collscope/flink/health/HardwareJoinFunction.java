package io.collscope.flink.health;

import io.collscope.avro.Attribution;
import io.collscope.avro.GpuHealth;
import io.collscope.model.CommunicatorKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Keyed by communicator: joins each window's {@link Attribution} with the {@link GpuHealth} reads
 * of its ranks in the same window ({@link HardwareRule}). The attribution waits until the watermark
 * of both inputs passes its window's end, so reads of that window that travelled a slower path are
 * in; a communicator without health records passes its attributions through unchanged (one
 * watermark later).
 *
 * <p>State: reads per pending window (dropped when the window fires), and per rank its last read
 * before the windows still to come (the base of counters' growth), dropped after {@code
 * idleTimeout} of event time without a read.
 */
public final class HardwareJoinFunction
    extends KeyedCoProcessFunction<CommunicatorKey, Attribution, GpuHealth, Attribution> {

  private final long windowMs;
  private final long idleTimeoutMs;
  private transient MapState<Long, List<GpuHealth>> reads;
  private transient MapState<Long, Attribution> pending;
  private transient MapState<Integer, GpuHealth> lastBefore;
  private transient ValueState<Long> lastFired;
  private transient Counter lateReads;
  private transient Counter joined;

  public HardwareJoinFunction(Duration window, Duration idleTimeout) {
    this.windowMs = window.toMillis();
    this.idleTimeoutMs = idleTimeout.toMillis();
  }

  @Override
  public void open(OpenContext ctx) {
    reads =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "health", Types.LONG, new ListTypeInfo<>(TypeInformation.of(GpuHealth.class))));
    pending =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "attributions", Types.LONG, TypeInformation.of(Attribution.class)));
    lastBefore =
        getRuntimeContext()
            .getMapState(
                new MapStateDescriptor<>(
                    "lastRead", Types.INT, TypeInformation.of(GpuHealth.class)));
    lastFired = getRuntimeContext().getState(new ValueStateDescriptor<>("lastFired", Types.LONG));
    lateReads = getRuntimeContext().getMetricGroup().counter("lateHealthReads");
    joined = getRuntimeContext().getMetricGroup().counter("findingsWithHealth");
  }

  /**
   * The end of the tumbling window (aligned on the epoch, as the job's windows) holding {@code ts}.
   */
  long windowEnd(long ts) {
    return ts - Math.floorMod(ts, windowMs) + windowMs;
  }

  @Override
  public void processElement1(Attribution a, Context ctx, Collector<Attribution> out)
      throws Exception {
    long end = a.getWindowEnd().toEpochMilli();
    pending.put(end, a);
    ctx.timerService().registerEventTimeTimer(end - 1);
  }

  @Override
  public void processElement2(GpuHealth h, Context ctx, Collector<Attribution> out)
      throws Exception {
    long end = windowEnd(h.getEventTime().toEpochMilli());
    Long fired = lastFired.value();
    if (fired != null && end <= fired) {
      // Its window was judged: it still serves as the base of the next window's growth.
      lateReads.inc();
      GpuHealth prev = lastBefore.get(h.getRank());
      if (prev == null || prev.getEventTime().isBefore(h.getEventTime())) {
        lastBefore.put(h.getRank(), h);
      }
      return;
    }
    List<GpuHealth> list = reads.get(end);
    if (list == null) {
      list = new ArrayList<>();
      ctx.timerService().registerEventTimeTimer(end - 1);
    }
    list.add(h);
    reads.put(end, list);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Attribution> out)
      throws Exception {
    long end = timestamp + 1;
    List<GpuHealth> list = reads.get(end);
    Attribution a = pending.get(end);
    if (a != null || list != null) {
      Map<Integer, GpuHealth> before = new HashMap<>();
      for (Map.Entry<Integer, GpuHealth> e : lastBefore.entries()) {
        before.put(e.getKey(), e.getValue());
      }
      if (a != null) {
        pending.remove(end);
        Attribution j = list == null ? a : HardwareRule.join(a, HardwareRule.gpus(list, before));
        if (j != a) joined.inc(j.getFindings().size());
        out.collect(j);
      }
      if (list != null) {
        reads.remove(end);
        for (GpuHealth h : list) {
          GpuHealth prev = before.get(h.getRank());
          if (prev == null || prev.getEventTime().isBefore(h.getEventTime())) {
            before.put(h.getRank(), h);
            lastBefore.put(h.getRank(), h);
          }
        }
      }
      Long fired = lastFired.value();
      if (fired == null || end > fired) lastFired.update(end);
      ctx.timerService().registerEventTimeTimer(end - 1 + idleTimeoutMs);
    }
    // A rank whose GPU has not been read for idleTimeout leaves state (its reporter is gone).
    Iterator<Map.Entry<Integer, GpuHealth>> it = lastBefore.iterator();
    while (it.hasNext()) {
      if (it.next().getValue().getEventTime().toEpochMilli() < timestamp - idleTimeoutMs) {
        it.remove();
      }
    }
    if (lastBefore.isEmpty() && reads.isEmpty() && pending.isEmpty()) lastFired.clear();
  }
}
