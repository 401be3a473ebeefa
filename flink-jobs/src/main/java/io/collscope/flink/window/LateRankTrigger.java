package io.collscope.flink.window;

import java.time.Duration;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.triggers.TriggerResult;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/**
 * Fires a rank's window exactly once: when the watermark passes its end, as Flink's event-time
 * trigger does, or — for a window whose records all came after the watermark had passed its end (a
 * rank that reports late) — when the watermark passes its end plus the grace, with every record
 * that arrived by then. Used with {@code allowedLateness(grace)}, which keeps such windows open.
 *
 * <p>Why not Flink's event-time trigger with allowed lateness: it fires again on every late record,
 * so a late rank would send one partial window per snapshot and a window already sent would be sent
 * again changed; the rank-window topic, the history and the attribution each expect one window per
 * rank and window. A late record for a window that already fired is kept out of every output (Flink
 * counts it in the operator's dropped-late-records metric only when the grace has passed too;
 * within it, it is simply not sent).
 */
public final class LateRankTrigger extends Trigger<Object, TimeWindow> {

  private static final ValueStateDescriptor<Boolean> FIRED =
      new ValueStateDescriptor<>("fired", Types.BOOLEAN);

  private final long graceMs;

  public LateRankTrigger(Duration grace) {
    if (grace.isNegative()) throw new IllegalArgumentException("grace < 0: " + grace);
    this.graceMs = grace.toMillis();
  }

  @Override
  public TriggerResult onElement(Object element, long timestamp, TimeWindow w, TriggerContext ctx)
      throws Exception {
    if (w.maxTimestamp() > ctx.getCurrentWatermark()) {
      ctx.registerEventTimeTimer(w.maxTimestamp());
    } else if (ctx.getPartitionedState(FIRED).value() == null) {
      // late, and never sent: everything this rank sends within the grace goes out together
      ctx.registerEventTimeTimer(w.maxTimestamp() + graceMs);
    }
    return TriggerResult.CONTINUE;
  }

  @Override
  public TriggerResult onEventTime(long time, TimeWindow w, TriggerContext ctx) throws Exception {
    if (time != w.maxTimestamp() && time != w.maxTimestamp() + graceMs) {
      return TriggerResult.CONTINUE;
    }
    ValueState<Boolean> fired = ctx.getPartitionedState(FIRED);
    if (fired.value() != null) return TriggerResult.CONTINUE;
    fired.update(true);
    return TriggerResult.FIRE;
  }

  @Override
  public TriggerResult onProcessingTime(long time, TimeWindow w, TriggerContext ctx) {
    return TriggerResult.CONTINUE;
  }

  @Override
  public void clear(TimeWindow w, TriggerContext ctx) throws Exception {
    ctx.deleteEventTimeTimer(w.maxTimestamp());
    ctx.deleteEventTimeTimer(w.maxTimestamp() + graceMs);
    ctx.getPartitionedState(FIRED).clear();
  }

  @Override
  public String toString() {
    return "LateRankTrigger(grace=" + graceMs + " ms)";
  }
}
