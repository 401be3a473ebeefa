package io.collscope.flink.delta;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.flink.decode.DeadLetters;
import io.collscope.flink.decode.RankRecord;
import io.collscope.model.CompactPeers;
import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;
import io.collscope.model.SampledCalls;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;
import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Turns one rank's cumulative snapshots into deltas.
 *
 * <p>Records arrive as bytes ({@link RankRecord}) and are decoded here, once: a record that does
 * not decode or validate goes to the dead-letter output with the decoder's reason (stage DECODE),
 * as it would have before the keyBy.
 *
 * <ul>
 *   <li>The baseline is per boot: a new {@code boot_id} restarts it. The first snapshot of a boot
 *       ({@code seq == 1}) is a delta from zero, since counters start at zero; a first sighting
 *       mid-boot (the job started after the emitter, or the baseline expired) only sets the
 *       baseline, so a long history is never dumped into one window.
 *   <li>Duplicates ({@code seq} equal) and out-of-order records ({@code seq} lower, or an older
 *       boot seen late) are dropped and counted.
 *   <li>Gaps (lost snapshots) need nothing: counters are cumulative, the delta spans the gap.
 *   <li>A counter that goes backwards within a boot, or a changed world size, is a broken emitter:
 *       the record goes to the dead-letter output with the reason, and the baseline stays.
 *   <li>State ends: a rank that sends nothing for {@code idleTimeout} of event time (its job ended,
 *       its communicator was destroyed) has its baseline dropped, so a job that monitors a cluster
 *       for months holds state only for the ranks alive now. One event-time timer per rank, moved
 *       lazily: it fires at most once per timeout, not once per record.
 * </ul>
 */
public final class DeltaFunction extends KeyedProcessFunction<RankKey, RankRecord, SnapshotDelta> {

  private final long idleTimeoutMs;
  private transient ValueState<Baseline> baseline;

  /**
   * The baseline as jobs before {@link Baseline} kept it (a snapshot object, state "baseline"):
   * read once per rank after a restore from such a savepoint, moved into {@link #baseline},
   * cleared.
   */
  private transient ValueState<CounterSnapshot> earlierBaseline;

  private transient ValueState<Long> lastSeen;
  private transient Counter duplicates;
  private transient Counter outOfOrder;
  private transient Counter gaps;
  private transient Counter reboots;
  private transient Counter backwards;
  private transient Counter expired;
  private transient Counter undecodable;
  private transient Counter baselinesDropped;

  public DeltaFunction(Duration idleTimeout) {
    this.idleTimeoutMs = idleTimeout.toMillis();
  }

  @Override
  public void open(OpenContext ctx) {
    baseline =
        getRuntimeContext().getState(new ValueStateDescriptor<>("baselineRecord", Baseline.class));
    earlierBaseline =
        getRuntimeContext().getState(new ValueStateDescriptor<>("baseline", CounterSnapshot.class));
    lastSeen = getRuntimeContext().getState(new ValueStateDescriptor<>("lastSeen", Types.LONG));
    var m = getRuntimeContext().getMetricGroup();
    duplicates = m.counter("duplicates");
    outOfOrder = m.counter("outOfOrder");
    gaps = m.counter("gaps");
    reboots = m.counter("reboots");
    backwards = m.counter("countersBackwards");
    expired = m.counter("expiredRanks");
    undecodable = m.counter("undecodable");
    baselinesDropped = m.counter("baselinesNoLongerValid");
  }

  @Override
  public void processElement(RankRecord in, Context ctx, Collector<SnapshotDelta> out)
      throws Exception {
    CounterSnapshot s;
    try {
      s = Snapshots.decode(in.value);
    } catch (DecodeException e) {
      undecodable.inc();
      ctx.output(DeadLetters.TAG, in.deadLetter(e.reason(), e.getMessage(), Stage.DECODE));
      return;
    }
    keepAlive(s.getEventTime().toEpochMilli(), ctx);
    Baseline kept = baseline();
    CounterSnapshot last = kept == null ? null : kept.snapshot();

    if (last != null && !last.getBootId().equals(s.getBootId())) {
      if (s.getEventTime().isBefore(last.getEventTime())) {
        outOfOrder.inc(); // a straggling record of an earlier incarnation
        return;
      }
      reboots.inc();
      last = null;
    }
    if (last == null) {
      baseline.update(Baseline.of(in.value, s, null));
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
    // Dense records are converted once each, for the check and the delta; compact ones never.
    boolean dense = !CompactPeers.isCompact(last) && !CompactPeers.isCompact(s);
    RankTotals now = dense ? RankTotals.of(s) : null;
    RankTotals before = dense ? kept.totals() : null;
    String problem = dense ? now.firstBackwards(before) : backwardsField(last, s);
    if (problem == null) problem = sampledBackwards(last, s);
    if (problem != null) {
      backwards.inc();
      ctx.output(
          DeadLetters.TAG,
          in.deadLetter(
              last.getWorldSize() != s.getWorldSize()
                  ? DeadLetterReason.WORLD_SIZE_CHANGED
                  : DeadLetterReason.COUNTER_WENT_BACKWARDS,
              ctx.getCurrentKey()
                  + " boot "
                  + s.getBootId()
                  + " seq "
                  + last.getSeq()
                  + " -> "
                  + s.getSeq()
                  + ": "
                  + problem,
              Stage.DELTA));
      return;
    }
    if (s.getSeq() > last.getSeq() + 1) {
      gaps.inc();
    }
    baseline.update(Baseline.of(in.value, s, now));
    out.collect(dense ? delta(s, last, now.minus(before)) : delta(s, last));
  }

  /** The rank's baseline, moved over from an earlier job's state on first read. */
  private Baseline baseline() throws Exception {
    Baseline b = baseline.value();
    if (b != null) {
      try {
        b.snapshot(); // decoded here if restored: a failure must not fail the job on every retry
        return b;
      } catch (DecodeException e) {
        // Accepted once, refused now (a rule tightened since it was checkpointed): the rank
        // starts again from its next record, as after a restart of its emitter.
        baselinesDropped.inc();
        baseline.clear();
        return null;
      }
    }
    CounterSnapshot earlier = earlierBaseline.value();
    if (earlier == null) return null;
    earlierBaseline.clear();
    b = Baseline.of(Snapshots.encode(earlier), earlier, null);
    baseline.update(b);
    return b;
  }

  /** Records that the rank is alive at {@code eventTime}; the first record arms the timer. */
  private void keepAlive(long eventTime, Context ctx) throws Exception {
    Long seen = lastSeen.value();
    if (seen == null) {
      ctx.timerService().registerEventTimeTimer(eventTime + idleTimeoutMs);
    }
    if (seen == null || eventTime > seen) {
      lastSeen.update(eventTime);
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<SnapshotDelta> out)
      throws Exception {
    Long seen = lastSeen.value();
    if (seen == null) {
      return;
    }
    if (seen + idleTimeoutMs <= timestamp) {
      baseline.clear();
      earlierBaseline.clear();
      lastSeen.clear();
      expired.inc();
    } else {
      ctx.timerService().registerEventTimeTimer(seen + idleTimeoutMs);
    }
  }

  /** Which counter went backwards (or how the shape changed) from a to b, or null. */
  public static String backwardsField(CounterSnapshot a, CounterSnapshot b) {
    if (!CompactPeers.isCompact(a) && !CompactPeers.isCompact(b)) {
      return RankTotals.of(b).firstBackwards(RankTotals.of(a));
    }
    // Compact records' per-peer counters of unlisted peers are estimates that may dip when the
    // listed peers change (CompactPeers); every other counter must still hold. Checked without
    // expanding either record.
    if (a.getWorldSize() != b.getWorldSize()) {
      return "world_size changed " + a.getWorldSize() + " -> " + b.getWorldSize();
    }
    if (a.getPeerLateCycles().isEmpty() != b.getPeerLateCycles().isEmpty()) {
      return "peer_late_cycles changed length "
          + (a.getPeerLateCycles().isEmpty() ? 0 : a.getWorldSize())
          + " -> "
          + (b.getPeerLateCycles().isEmpty() ? 0 : b.getWorldSize());
    }
    return RankTotals.withoutPeersOf(b).firstBackwards(RankTotals.withoutPeersOf(a));
  }

  /**
   * sampled_calls lower in b than in a, when both records carry it (an emitter that starts or stops
   * sampling within a boot goes from calls to its sample: not a counter going backwards).
   */
  static String sampledBackwards(CounterSnapshot a, CounterSnapshot b) {
    Long was = a.getSampledCalls();
    Long now = b.getSampledCalls();
    return was != null && now != null && now < was
        ? "sampled_calls went backwards " + was + " -> " + now
        : null;
  }

  /** b minus a, or b itself when a is null (first snapshot of a boot). */
  public static SnapshotDelta delta(CounterSnapshot b, CounterSnapshot a) {
    return delta(b, a, null);
  }

  /** As {@link #delta(CounterSnapshot, CounterSnapshot)}, with the dense difference if known. */
  private static SnapshotDelta delta(CounterSnapshot b, CounterSnapshot a, RankTotals difference) {
    SnapshotDelta d = new SnapshotDelta();
    d.cluster = b.getCluster();
    d.job = b.getJob();
    d.communicator = b.getCommunicator();
    d.collective = b.getCollective();
    d.rank = b.getRank();
    d.worldSize = b.getWorldSize();
    d.host = b.getHost();
    d.bootId = b.getBootId();
    d.eventTimeMs = b.getEventTime().toEpochMilli();
    d.cyclesPerSecond = b.getCyclesPerSecond();
    // The sample since a, weighted by b's interval (an emitter that changed it within a boot
    // weights the delta that spans the change by the later one). Never negative: from a record
    // that accounted every call to one that samples, the sample restarts below the calls.
    d.sampledCalls = Math.max(0, SampledCalls.of(b) - (a == null ? 0 : SampledCalls.of(a)));
    d.accountedCalls = d.sampledCalls * b.getSampleEvery();
    // A compact record stays compact unless its predecessor in the boot was dense (an emitter
    // that changed form mid-boot): then the unlisted peers' deltas differ peer by peer.
    if (difference != null) {
      d.totals = difference;
    } else if (CompactPeers.isCompact(b) && (a == null || CompactPeers.isCompact(a))) {
      compactPeerDelta(d, b, a);
    } else {
      RankTotals now = RankTotals.of(b);
      d.totals = a == null ? now : now.minus(RankTotals.of(a));
      if (a != null && (CompactPeers.isCompact(a) || CompactPeers.isCompact(b))) {
        d.totals.clampPeersAtZero();
      }
    }
    List<Long> lb = b.getCtaLeadHistogram();
    List<Long> la = a == null ? null : a.getCtaLeadHistogram();
    d.leadHistogram = new long[lb == null ? 0 : lb.size()];
    for (int i = 0; i < d.leadHistogram.length; i++) {
      long earlier = la != null && la.size() == lb.size() ? la.get(i) : 0;
      d.leadHistogram[i] = lb.get(i) - earlier;
    }
    d.throttleStalls = b.getThrottleStalls() - (a == null ? 0 : a.getThrottleStalls());
    d.tiles = b.getTiles() - (a == null ? 0 : a.getTiles());
    // Not cumulative: the record carries the collectives timed since the previous one.
    d.timedKeys = RankTotals.unboxed(b.getTimedKeys());
    d.timedKernelNs = RankTotals.unboxed(b.getTimedKernelNs());
    netDelta(d, b, a);
    return d;
  }

  /**
   * The network waits since a, per peer of b: cumulative like the counters, so b − a, a peer a did
   * not list counting from 0, and never negative (the plugin's sums only grow within a boot).
   */
  private static void netDelta(SnapshotDelta d, CounterSnapshot b, CounterSnapshot a) {
    List<Integer> peers = b.getNetPeers();
    int n = peers.size();
    d.netPeers = new int[n];
    d.netSendNs = new long[n];
    d.netSendSteps = new long[n];
    d.netRecvNs = new long[n];
    d.netRecvSteps = new long[n];
    List<Integer> before = a == null ? List.of() : a.getNetPeers();
    for (int i = 0; i < n; i++) {
      int p = peers.get(i);
      int j = java.util.Collections.binarySearch(before, p);
      d.netPeers[i] = p;
      d.netSendNs[i] = since(b.getNetSendWaitNs().get(i), j < 0 ? 0 : a.getNetSendWaitNs().get(j));
      d.netSendSteps[i] = since(b.getNetSendSteps().get(i), j < 0 ? 0 : a.getNetSendSteps().get(j));
      d.netRecvNs[i] = since(b.getNetRecvWaitNs().get(i), j < 0 ? 0 : a.getNetRecvWaitNs().get(j));
      d.netRecvSteps[i] = since(b.getNetRecvSteps().get(i), j < 0 ? 0 : a.getNetRecvSteps().get(j));
    }
  }

  private static long since(long now, long was) {
    return Math.max(0, now - was);
  }

  /**
   * The compact delta b − a: the counters exactly; per peer, the peers either record lists, each
   * its expanded value in b minus that in a, and one value for all the others (b's others' mean
   * minus a's). Per-peer deltas are clamped at zero, as every per-peer delta of compact records is
   * ({@link CompactPeers}: an estimate, not a counter). a null: b itself.
   */
  private static void compactPeerDelta(SnapshotDelta d, CounterSnapshot b, CounterSnapshot a) {
    RecordPeers nb = new RecordPeers(b);
    RecordPeers na = a == null ? null : new RecordPeers(a);
    int[] listed = na == null ? nb.index : CompactPeers.union(nb.index, na.index);
    boolean lateness = nb.lateness;
    int k = listed.length;
    int buckets = RankTotals.LATE_BUCKETS;
    RankTotals t = RankTotals.withoutPeersOf(b);
    if (a != null) t = t.minus(RankTotals.withoutPeersOf(a));
    long[] wait = new long[k];
    long[] last = new long[k];
    long[] late = new long[lateness ? k : 0];
    long[] lateHist = new long[lateness ? k * buckets : 0];
    for (int i = 0; i < k; i++) {
      int p = listed[i];
      int at = nb.position(p);
      int was = na == null ? 0 : na.position(p);
      wait[i] = nb.wait(at) - (na == null ? 0 : na.wait(was));
      last[i] = nb.last(at) - (na == null ? 0 : na.last(was));
      if (lateness) {
        late[i] = nb.late(at) - (na == null ? 0 : na.late(was));
        for (int q = 0; q < buckets; q++) {
          lateHist[i * buckets + q] =
              nb.lateBucket(at, q) - (na == null ? 0 : na.lateBucket(was, q));
        }
      }
    }
    t.setPeerWaitCycles(wait);
    t.setPeerArrivedLast(last);
    t.setPeerLateCycles(late);
    t.setPeerLateHistogram(lateHist);
    d.totals = t.clampPeersAtZero();
    d.peerIndex = listed;
    d.othersWaitCycles = Math.max(0, nb.eachWait - (na == null ? 0 : na.eachWait));
    d.othersArrivedLast = Math.max(0, nb.eachLast - (na == null ? 0 : na.eachLast));
    d.othersLateCycles = lateness ? Math.max(0, nb.eachLate - (na == null ? 0 : na.eachLate)) : 0;
    d.othersLateHistogram = new long[lateness ? buckets : 0];
    for (int q = 0; q < d.othersLateHistogram.length; q++) {
      long before = na == null || na.eachLateHistogram.length == 0 ? 0 : na.eachLateHistogram[q];
      d.othersLateHistogram[q] = Math.max(0, nb.eachLateHistogram[q] - before);
    }
  }
}
