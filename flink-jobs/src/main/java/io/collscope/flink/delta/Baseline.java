package io.collscope.flink.delta;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.RankTotals;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;

/**
 * A rank's baseline as {@link DeltaFunction} keeps it: the last accepted record's bytes, exactly as
 * they arrived, with the decoded snapshot (and, for a dense record, its totals) cached beside them.
 *
 * <p>Why bytes: checkpoints write the state, and written as a snapshot object the baseline cost an
 * Avro pass per rank per checkpoint (Flink's {@code AvroSerializer}: 7.8 % of the job's samples)
 * and a deep copy whenever a checkpoint was running as the state was read (copy-on-write); as bytes
 * it is one array copy. The record is already in bytes when it arrives, so nothing is encoded. The
 * caches are transient: Flink's POJO serializer neither writes nor copies them, so after a restore
 * or a copy-on-write copy the first read decodes the bytes again, once.
 */
public class Baseline {

  /** The record, Avro single-object encoded (any published version: decoding upgrades it). */
  public byte[] record;

  private transient CounterSnapshot snapshot;
  private transient RankTotals totals;

  public Baseline() {}

  /** The baseline of a record's bytes, decoded when first read. */
  public static Baseline of(byte[] record) {
    return of(record, null, null);
  }

  /** The baseline of an accepted record, its decoded form (and dense totals, or null) known. */
  static Baseline of(byte[] record, CounterSnapshot snapshot, RankTotals totals) {
    Baseline b = new Baseline();
    b.record = record;
    b.snapshot = snapshot;
    b.totals = totals;
    return b;
  }

  /** The snapshot, decoded from the bytes at the first read after a restore or a copy. */
  CounterSnapshot snapshot() throws DecodeException {
    if (snapshot == null) snapshot = Snapshots.decode(record);
    return snapshot;
  }

  /** A dense record's totals, converted at most once per baseline. */
  RankTotals totals() throws DecodeException {
    if (totals == null) totals = RankTotals.of(snapshot());
    return totals;
  }
}
