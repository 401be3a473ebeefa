package io.collscope.flink.decode;

import io.collscope.avro.CounterSnapshot;
import io.collscope.model.RankKey;

/** A decoded snapshot and where it came from, so later stages can dead-letter it precisely. */
public class SourcedSnapshot {
  public CounterSnapshot snapshot;
  public String topic;
  public int partition;
  public long offset;

  public SourcedSnapshot() {}

  public SourcedSnapshot(CounterSnapshot snapshot, String topic, int partition, long offset) {
    this.snapshot = snapshot;
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
  }

  /** The state key: one series per (cluster, job, communicator, rank). */
  public RankKey key() {
    return RankKey.of(snapshot);
  }
}
