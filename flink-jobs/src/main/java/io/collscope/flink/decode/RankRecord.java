package io.collscope.flink.decode;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Stage;
import io.collscope.flink.source.RawRecord;
import io.collscope.model.RankKey;
import io.collscope.schema.Snapshots;

/**
 * A snapshot record still in its bytes, with the rank key read from them and where it came from.
 *
 * <p>This, not a decoded snapshot, is what crosses the keyBy to the rank's state: Flink ships a few
 * strings and one byte array (a POJO of plain fields), and the record is decoded once, in {@link
 * io.collscope.flink.delta.DeltaFunction}, instead of decoded, re-encoded by Flink's Avro
 * serializer and decoded again (docs/SCALE.md). The key's parts are plain fields rather than a
 * {@link RankKey} so the POJO serializer handles every field itself.
 */
public class RankRecord {
  public String cluster;
  public String job;
  public String communicator;
  public int rank;
  public String topic;
  public int partition;
  public long offset;

  /** The Kafka record key, kept for the dead-letter record. */
  public byte[] recordKey;

  /** The snapshot, Avro single-object encoded, exactly as it arrived. */
  public byte[] value;

  public RankRecord() {}

  public RankRecord(RankKey key, RawRecord r) {
    this.cluster = key.cluster();
    this.job = key.job();
    this.communicator = key.communicator();
    this.rank = key.rank();
    this.topic = r.topic;
    this.partition = r.partition;
    this.offset = r.offset;
    this.recordKey = r.key;
    this.value = r.value;
  }

  /** A snapshot encoded as a record of {@code topic} (tests, replays). */
  public static RankRecord of(CounterSnapshot s, String topic, int partition, long offset) {
    return new RankRecord(
        RankKey.of(s),
        new RawRecord(
            topic, partition, offset, s.getEventTime().toEpochMilli(), null, Snapshots.encode(s)));
  }

  /** The state key: one series per (cluster, job, communicator, rank). */
  public RankKey key() {
    return new RankKey(cluster, job, communicator, rank);
  }

  /** This record as a dead letter: its bytes and coordinates, with the reason. */
  public DeadLetter deadLetter(DeadLetterReason reason, String detail, Stage stage) {
    return DeadLetters.of(reason, detail, stage, topic, partition, offset, recordKey, value);
  }
}
