package io.collscope.flink.decode;

import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.Stage;
import io.collscope.flink.source.RawRecord;
import io.collscope.model.RankKey;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import io.collscope.schema.SnapshotKeys;
import io.collscope.schema.Snapshots;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Reads each snapshot record's rank key, so the record can be routed to its rank's state without
 * being decoded here ({@link RankRecord} says why). The key is read from the record's first fields
 * ({@link SnapshotKeys}); a record whose key cannot be read that way is decoded whole, which either
 * gives its key (a published version without the key prefix) or the fault, with the reason the
 * decoder names. Records that do not decode and records stamped implausibly go to {@link
 * DeadLetters#TAG} with their bytes and coordinates (stage DECODE); the job never fails on input. A
 * record whose key reads but whose body does not decode or validate is dead-lettered, with the same
 * reasons, where it is decoded ({@link io.collscope.flink.delta.DeltaFunction}).
 */
public final class RankKeyFunction extends ProcessFunction<RawRecord, RankRecord> {

  /**
   * GPU health reads (the emitters' {@code GpuHealth} records, from their own topic, which the
   * job's source reads beside the snapshots): decoded here and handed to the hardware join.
   */
  public static final OutputTag<GpuHealth> HEALTH = new OutputTag<>("gpu-health") {};

  private static final java.util.Set<Long> HEALTH_FINGERPRINTS =
      java.util.Set.copyOf(AvroCodec.of(GpuHealth.class).knownFingerprints());

  private transient Counter deadLettered;
  private transient Counter decodedForKey;

  @Override
  public void open(OpenContext ctx) {
    deadLettered = getRuntimeContext().getMetricGroup().counter("undecodable");
    decodedForKey = getRuntimeContext().getMetricGroup().counter("decodedForKey");
  }

  @Override
  public void processElement(RawRecord r, Context ctx, Collector<RankRecord> out) {
    try {
      if (isHealth(r.value)) {
        GpuHealth h = AvroCodec.of(GpuHealth.class).decode(r.value);
        if (!Snapshots.plausibleEventTime(r.timestamp, System.currentTimeMillis())) {
          throw new DecodeException(
              DeadLetterReason.INVALID,
              "record timestamp " + r.timestamp + " is before 2000 or more than a day ahead");
        }
        ctx.output(HEALTH, h);
        return;
      }
      RankKey key = SnapshotKeys.peek(r.value);
      boolean decoded = false;
      if (key == null) {
        if (decodedForKey != null) decodedForKey.inc();
        key = RankKey.of(Snapshots.decode(r.value)); // throws with the record's fault
        decoded = true;
      }
      if (!Snapshots.plausibleEventTime(r.timestamp, System.currentTimeMillis())) {
        // Its timestamp did not move the watermark (see the job's timestamp assigner); counted
        // here rather than lost as late. Decoded whole first (a rare path), so a record that is
        // also malformed carries its own fault, e.g. the event_time the stamp was taken from.
        if (!decoded) Snapshots.decode(r.value);
        throw new DecodeException(
            DeadLetterReason.INVALID,
            "record timestamp " + r.timestamp + " is before 2000 or more than a day ahead");
      }
      out.collect(new RankRecord(key, r));
    } catch (DecodeException e) {
      if (deadLettered != null) deadLettered.inc();
      ctx.output(
          DeadLetters.TAG,
          DeadLetters.of(
              e.reason(),
              e.getMessage(),
              Stage.DECODE,
              r.topic,
              r.partition,
              r.offset,
              r.key,
              r.value));
    }
  }

  static boolean isHealth(byte[] v) {
    if (v == null || v.length < 10 || v[0] != (byte) 0xC3 || v[1] != 0x01) return false;
    long fp = java.nio.ByteBuffer.wrap(v, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    return HEALTH_FINGERPRINTS.contains(fp);
  }
}
