package io.collscope.flink.history;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.functions.sink.filesystem.BucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.SimpleVersionedStringSerializer;

/**
 * Puts each record into the {@code dt=YYYY-MM-DD/hour=HH} bucket of its own event time (see {@link
 * HistoryLayout#partition}), not of the time it is written: a late or replayed window lands in the
 * hour it describes, so queries over a time range can prune partitions by path.
 */
public final class EventTimeBucketAssigner<T> implements BucketAssigner<T, String> {

  private static final long serialVersionUID = 1L;

  private final KeySelector<T, Long> eventTimeMillis;

  public EventTimeBucketAssigner(KeySelector<T, Long> eventTimeMillis) {
    this.eventTimeMillis = eventTimeMillis;
  }

  @Override
  public String getBucketId(T element, Context context) {
    try {
      return HistoryLayout.partition(eventTimeMillis.getKey(element));
    } catch (Exception e) {
      throw new IllegalStateException("no event time for " + element, e);
    }
  }

  @Override
  public SimpleVersionedSerializer<String> getSerializer() {
    return SimpleVersionedStringSerializer.INSTANCE;
  }

  @Override
  public String toString() {
    return "EventTimeBucketAssigner{dt=YYYY-MM-DD/hour=HH, UTC}";
  }
}
