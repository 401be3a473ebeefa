package io.collscope.flink.attribution;

import io.collscope.avro.Attribution;
import io.collscope.avro.RankWindow;
import io.collscope.flink.baseline.WindowBaseline;
import io.collscope.model.CommunicatorKey;
import java.time.Duration;
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
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Keyed by communicator: gathers every rank's {@link RankWindow} of one window and attributes it
 * with {@link Attributor} once, when the watermark has passed the window's end and either every
 * rank of the communicator ({@code world_size}) has its window or the grace for late ranks has
 * passed too. A rank whose records reach the job after the watermark (a lagging reporter, a spool
 * draining after an outage) is so not read as missing — and named silent — while it is only late:
 * the rank-window operator keeps its windows open for the same grace and re-emits a window a late
 * record changed, and the newest rank window of a rank replaces the one before. Complete windows
 * fire at the watermark as before; only incomplete ones wait, at most the grace or until a later
 * window of the communicator fires (windows are attributed in order). A rank with no window by then
 * is reported missing. Rank windows of a window already attributed are late: counted and dropped,
 * so a window is attributed exactly once.
 *
 * <p>It also keeps the communicator's {@link WindowBaseline}, learned from its windows without
 * findings, so a window where every rank got slower reads UNIFORM_SLOWDOWN rather than NONE.
 *
 * <p>State ends: pending windows leave state when they fire, and the end of the last attributed
 * window (kept to recognise late rank windows) and the baseline are dropped once the communicator
 * has been quiet for {@code idleTimeout} of event time. A communicator that is gone leaves no state
 * and no timer.
 */
public final class AttributionFunction
    extends KeyedProcessFunction<CommunicatorKey, RankWindow, Attribution> {

  /** Windows the uniform-slowdown baseline remembers: half a minute of 1 s windows. */
  public static final int BASELINE_WINDOWS = 32;

  private final Thresholds thresholds;
  private final long idleTimeoutMs;
  private final long graceMs;
  private transient MapState<Long, List<RankWindow>> pending;
  private transient ValueState<Long> lastFired;
  private transient ValueState<Long> cleanupAt;
  private transient ValueState<WindowBaseline> baseline;
  private transient Counter late;
  private transient Counter expired;

  /** Without a grace for late ranks: a window fires when the watermark passes its end. */
  public AttributionFunction(Thresholds thresholds, Duration idleTimeout) {
    this(thresholds, idleTimeout, Duration.ZERO);
  }

  /**
   * @param lateRankGrace how long past a window's end (event time) an incomplete window waits for
   *     the rank windows it lacks
   */
  public AttributionFunction(Thresholds thresholds, Duration idleTimeout, Duration lateRankGrace) {
    if (lateRankGrace.isNegative()) {
      throw new IllegalArgumentException("late-rank grace < 0: " + lateRankGrace);
    }
    this.thresholds = thresholds;
    this.idleTimeoutMs = idleTimeout.toMillis();
    this.graceMs = lateRankGrace.toMillis();
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
    cleanupAt = getRuntimeContext().getState(new ValueStateDescriptor<>("cleanupAt", Types.LONG));
    baseline =
        getRuntimeContext()
            .getState(
                new ValueStateDescriptor<>("baseline", TypeInformation.of(WindowBaseline.class)));
    late = getRuntimeContext().getMetricGroup().counter("lateRankWindows");
    expired = getRuntimeContext().getMetricGroup().counter("expiredCommunicators");
  }

  @Override
  public void processElement(RankWindow w, Context ctx, Collector<Attribution> out)
      throws Exception {
    long end = w.getWindowEnd().toEpochMilli();
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
    // A late record re-fires its rank's window with everything it holds now: newest wins.
    list.removeIf(x -> x.getRank() == w.getRank());
    list.add(w);
    pending.put(end, list);
    if (ctx.timerService().currentWatermark() >= end - 1 && complete(list)) {
      fireUpTo(end, ctx.getCurrentKey(), out, ctx.timerService());
    }
  }

  /** Every rank of the communicator has its window (a world size of 0 is never complete). */
  private static boolean complete(List<RankWindow> list) {
    int world = 0;
    for (RankWindow w : list) world = Math.max(world, w.getWorldSize());
    return world > 0 && list.size() >= world;
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Attribution> out)
      throws Exception {
    List<Long> ends = new ArrayList<>();
    for (Long e : pending.keys()) ends.add(e);
    ends.sort(null);
    long fireThrough = Long.MIN_VALUE;
    for (long end : ends) {
      if (end - 1 > timestamp) break;
      if (end - 1 + graceMs <= timestamp || complete(pending.get(end))) {
        fireThrough = end;
      } else {
        ctx.timerService().registerEventTimeTimer(end - 1 + graceMs);
      }
    }
    if (fireThrough != Long.MIN_VALUE)
      fireUpTo(fireThrough, ctx.getCurrentKey(), out, ctx.timerService());
    Long cleanup = cleanupAt.value();
    if (cleanup != null && cleanup == timestamp) {
      long due = lastFired.value() - 1 + idleTimeoutMs;
      if (!pending.isEmpty()) {
        // The communicator is back: its pending window schedules the clean-up anew when it fires
        // (fire() does while none is set). Looking again a millisecond later instead would fire a
        // timer every millisecond of event time until that window's end.
        cleanupAt.clear();
      } else if (due <= timestamp) {
        lastFired.clear();
        cleanupAt.clear();
        baseline.clear();
        expired.inc();
      } else {
        // A newer window fired since the timer was set: look again when it has been idle long.
        scheduleCleanup(ctx.timerService(), due);
      }
    }
  }

  /** Attributes every pending window that ends at or before {@code end}, oldest first. */
  private void fireUpTo(
      long end, CommunicatorKey key, Collector<Attribution> out, TimerService timers)
      throws Exception {
    List<Long> ends = new ArrayList<>();
    for (Long e : pending.keys()) if (e <= end) ends.add(e);
    ends.sort(null);
    for (long e : ends) fire(e, pending.get(e), key, out, timers);
  }

  private void fire(
      long end,
      List<RankWindow> list,
      CommunicatorKey key,
      Collector<Attribution> out,
      TimerService timers)
      throws Exception {
    pending.remove(end);
    // its timers: the watermark's and the grace's (a no-op for one already gone)
    timers.deleteEventTimeTimer(end - 1);
    if (graceMs > 0) timers.deleteEventTimeTimer(end - 1 + graceMs);
    Long fired = lastFired.value();
    if (fired == null || end > fired) {
      lastFired.update(end);
    }
    if (cleanupAt.value() == null) {
      scheduleCleanup(timers, end - 1 + idleTimeoutMs);
    }
    long start = list.get(0).getWindowStart().toEpochMilli();
    WindowBaseline b = baseline.value();
    if (b == null) b = WindowBaseline.of(BASELINE_WINDOWS);
    Attributor.Judged judged =
        Attributor.judge(key, start, end, list, thresholds, b, fired == null);
    Attribution a = judged.attribution();
    // Only windows with nothing wrong teach the baseline what the collective costs: complete
    // ones (a missing rank's window says nothing about the whole communicator), with no effect
    // near its bar (a straggler just under it is not the clean cost) and not the communicator's
    // first (its ranks joined part-way through it and were warming up).
    boolean changed = false;
    // Windows over the band are counted for the next one; the first back under it resets.
    int slower = judged.slowerThanBaseline() ? b.slowerInARow + 1 : 0;
    if (slower == 0 && b.slowerInARow > 0) {
      // The run over the band ended: unnamed, its clean windows were the host's own wandering.
      changed |= b.endExcursion(b.slowerInARow >= Attributor.UNIFORM_WINDOWS);
    }
    changed |= slower != b.slowerInARow;
    b.slowerInARow = slower;
    if (judged.teachesBaseline() && fired != null) {
      if (judged.slowerThanBaseline()) {
        b.holdExcursion(a.getCollectiveUs(), Attributor.phaseMedians(list));
      } else {
        b.add(
            Attributor.bytesPerCall(list),
            a.getCollectiveUs(),
            Attributor.phaseMedians(list),
            a.getNoiseUs());
        b.addAsymmetry(judged.asymmetryUs());
      }
      changed = true;
    }
    // The ranks this window leaned towards naming support a close finding in the next one.
    changed |= b.lean(judged.leaning());
    if (changed) baseline.update(b);
    out.collect(a);
  }

  private void scheduleCleanup(TimerService timers, long at) throws Exception {
    timers.registerEventTimeTimer(at);
    cleanupAt.update(at);
  }
}
