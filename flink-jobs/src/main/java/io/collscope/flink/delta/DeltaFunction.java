package io.collscope.flink.delta;

import io.collscope.avro.CounterSnapshot;
import io.collscope.flink.decode.DeadLetters;
import io.collscope.flink.decode.SourcedSnapshot;
import io.collscope.schema.Snapshots;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Turns one (communicator, rank)'s cumulative snapshots into deltas.
 *
 * <ul>
 *   <li>The baseline is per boot: a new {@code boot_id} restarts it. The first snapshot of a boot
 *       ({@code seq == 1}) is a delta from zero, since counters start at zero; a first sighting
 *       mid-boot (the job started after the emitter) only sets the baseline, so a long history is
 *       never dumped into one window.
 *   <li>Duplicates ({@code seq} equal) and out-of-order records ({@code seq} lower, or an older
 *       boot seen late) are dropped and counted.
 *   <li>Gaps (lost snapshots) need nothing: counters are cumulative, the delta spans the gap.
 *   <li>A counter that goes backwards within a boot, or a changed world size, is a broken emitter:
 *       the record goes to the dead-letter output with the reason, and the baseline stays.
 * </ul>
 */
public final class DeltaFunction
    extends KeyedProcessFunction<String, SourcedSnapshot, SnapshotDelta> {

  private transient ValueState<CounterSnapshot> baseline;
  private transient Counter duplicates;
  private transient Counter outOfOrder;
  private transient Counter gaps;
  private transient Counter reboots;
  private transient Counter backwards;

  @Override
  public void open(OpenContext ctx) {
    baseline =
        getRuntimeContext().getState(new ValueStateDescriptor<>("baseline", CounterSnapshot.class));
    var m = getRuntimeContext().getMetricGroup();
    duplicates = m.counter("duplicates");
    outOfOrder = m.counter("outOfOrder");
    gaps = m.counter("gaps");
    reboots = m.counter("reboots");
    backwards = m.counter("countersBackwards");
  }

  @Override
  public void processElement(SourcedSnapshot in, Context ctx, Collector<SnapshotDelta> out)
      throws Exception {
    CounterSnapshot s = in.snapshot;
    CounterSnapshot last = baseline.value();

    if (last != null && !last.getBootId().equals(s.getBootId())) {
      if (s.getEventTimeMs().isBefore(last.getEventTimeMs())) {
        outOfOrder.inc(); // a straggling record of an earlier incarnation
        return;
      }
      reboots.inc();
      last = null;
    }
    if (last == null) {
      baseline.update(s);
      if (s.getSeq() == 1) {
        out.collect(delta(s, null));
      }
      return;
    }
    if (s.getSeq() == last.getSeq()) {
      duplicates.inc();
      return;
    }
    if (s.getSeq() < last.getSeq()) {
      outOfOrder.inc();
      return;
    }
    String problem = backwardsField(last, s);
    if (problem != null) {
      backwards.inc();
      ctx.output(
          DeadLetters.TAG,
          DeadLetters.of(
              problem.startsWith("world_size") ? "WORLD_SIZE_CHANGED" : "COUNTER_WENT_BACKWARDS",
              in.key()
                  + " boot "
                  + s.getBootId()
                  + " seq "
                  + last.getSeq()
                  + " -> "
                  + s.getSeq()
                  + ": "
                  + problem,
              "delta",
              in.topic,
              in.partition,
              in.offset,
              in.key().getBytes(java.nio.charset.StandardCharsets.UTF_8),
              Snapshots.encode(s)));
      return;
    }
    if (s.getSeq() > last.getSeq() + 1) {
      gaps.inc();
    }
    baseline.update(s);
    out.collect(delta(s, last));
  }

  /** Returns which field went backwards (or changed shape), or null. */
  static String backwardsField(CounterSnapshot a, CounterSnapshot b) {
    if (a.getWorldSize() != b.getWorldSize()) {
      return "world_size changed " + a.getWorldSize() + " -> " + b.getWorldSize();
    }
    if (b.getCalls() < a.getCalls()) return field("calls", a.getCalls(), b.getCalls());
    if (b.getBytes() < a.getBytes()) return field("bytes", a.getBytes(), b.getBytes());
    if (b.getGuardCycles() < a.getGuardCycles())
      return field("guard_cycles", a.getGuardCycles(), b.getGuardCycles());
    if (b.getCopyCycles() < a.getCopyCycles())
      return field("copy_cycles", a.getCopyCycles(), b.getCopyCycles());
    if (b.getPublishCycles() < a.getPublishCycles())
      return field("publish_cycles", a.getPublishCycles(), b.getPublishCycles());
    if (b.getWaitCycles() < a.getWaitCycles())
      return field("wait_cycles", a.getWaitCycles(), b.getWaitCycles());
    if (b.getReduceCycles() < a.getReduceCycles())
      return field("reduce_cycles", a.getReduceCycles(), b.getReduceCycles());
    if (b.getTimeouts() < a.getTimeouts())
      return field("timeouts", a.getTimeouts(), b.getTimeouts());
    String f = arrayBackwards("peer_wait_cycles", a.getPeerWaitCycles(), b.getPeerWaitCycles());
    if (f == null)
      f = arrayBackwards("peer_arrived_last", a.getPeerArrivedLast(), b.getPeerArrivedLast());
    if (f == null)
      f = arrayBackwards("latency_histogram", a.getLatencyHistogram(), b.getLatencyHistogram());
    return f;
  }

  private static String field(String name, long was, long now) {
    return name + " went backwards " + was + " -> " + now;
  }

  private static String arrayBackwards(String name, List<Long> a, List<Long> b) {
    if (a.size() != b.size()) {
      return name + " changed length " + a.size() + " -> " + b.size();
    }
    for (int i = 0; i < a.size(); i++) {
      if (b.get(i) < a.get(i)) return field(name + "[" + i + "]", a.get(i), b.get(i));
    }
    return null;
  }

  /** b minus a, or b itself when a is null (first snapshot of a boot). */
  static SnapshotDelta delta(CounterSnapshot b, CounterSnapshot a) {
    SnapshotDelta d = new SnapshotDelta();
    d.communicator = b.getCommunicator();
    d.rank = b.getRank();
    d.worldSize = b.getWorldSize();
    d.host = b.getHost();
    d.bootId = b.getBootId();
    d.eventTimeMs = b.getEventTimeMs().toEpochMilli();
    d.cyclesPerSecond = b.getCyclesPerSecond();
    d.calls = b.getCalls() - (a == null ? 0 : a.getCalls());
    d.bytes = b.getBytes() - (a == null ? 0 : a.getBytes());
    d.guardCycles = b.getGuardCycles() - (a == null ? 0 : a.getGuardCycles());
    d.copyCycles = b.getCopyCycles() - (a == null ? 0 : a.getCopyCycles());
    d.publishCycles = b.getPublishCycles() - (a == null ? 0 : a.getPublishCycles());
    d.waitCycles = b.getWaitCycles() - (a == null ? 0 : a.getWaitCycles());
    d.reduceCycles = b.getReduceCycles() - (a == null ? 0 : a.getReduceCycles());
    d.timeouts = b.getTimeouts() - (a == null ? 0 : a.getTimeouts());
    d.peerWaitCycles = minus(b.getPeerWaitCycles(), a == null ? null : a.getPeerWaitCycles());
    d.peerArrivedLast = minus(b.getPeerArrivedLast(), a == null ? null : a.getPeerArrivedLast());
    d.histogram = minus(b.getLatencyHistogram(), a == null ? null : a.getLatencyHistogram());
    return d;
  }

  private static long[] minus(List<Long> b, List<Long> a) {
    long[] out = new long[b.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = b.get(i) - (a == null ? 0 : a.get(i));
    }
    return out;
  }
}
