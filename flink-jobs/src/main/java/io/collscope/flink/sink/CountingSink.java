package io.collscope.flink.sink;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A sink that sums an amount per key of what it receives, in this JVM (like {@link CollectingSink},
 * for MiniCluster runs in the caller's process) without keeping the records: a million dead letters
 * of a fuzz run, counted by reason, in a few bytes.
 */
public final class CountingSink<T> implements Sink<T> {

  /** The key of a record. */
  public interface Key<T> extends Serializable {
    String of(T record);
  }

  /** What a record adds to its key's sum. */
  public interface Amount<T> extends Serializable {
    long of(T record);
  }

  private static final Map<String, Map<String, LongAdder>> SUMS = new ConcurrentHashMap<>();

  private final String id = UUID.randomUUID().toString();
  private final Key<T> key;
  private final Amount<T> amount;

  public CountingSink(Key<T> key, Amount<T> amount) {
    this.key = key;
    this.amount = amount;
    SUMS.put(id, new ConcurrentHashMap<>());
  }

  /** Counts records per key. */
  public static <T> CountingSink<T> counting(Key<T> key) {
    return new CountingSink<>(key, r -> 1);
  }

  @Override
  public SinkWriter<T> createWriter(WriterInitContext context) {
    Map<String, LongAdder> into = SUMS.get(id);
    return new SinkWriter<>() {
      @Override
      public void write(T element, Context context) {
        into.computeIfAbsent(key.of(element), k -> new LongAdder()).add(amount.of(element));
      }

      @Override
      public void flush(boolean endOfInput) {}

      @Override
      public void close() {}
    };
  }

  /** The sums so far, by key. */
  public Map<String, Long> sums() {
    Map<String, Long> out = new TreeMap<>();
    SUMS.get(id).forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }
}
