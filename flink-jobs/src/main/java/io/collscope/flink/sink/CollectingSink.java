package io.collscope.flink.sink;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A sink that keeps what it receives in this JVM, for jobs run on a MiniCluster in the caller's own
 * process (tests, {@code collscope eval}); on a real cluster its writers run elsewhere and it
 * receives nothing. Each instance has its own list, so callers never see each other's records.
 */
public final class CollectingSink<T> implements Sink<T> {

  private static final Map<String, List<Object>> RECEIVED = new ConcurrentHashMap<>();

  private final String id = UUID.randomUUID().toString();

  public CollectingSink() {
    RECEIVED.put(id, Collections.synchronizedList(new ArrayList<>()));
  }

  @Override
  public SinkWriter<T> createWriter(WriterInitContext context) {
    List<Object> into = RECEIVED.get(id);
    return new SinkWriter<>() {
      @Override
      public void write(T element, Context context) {
        into.add(element);
      }

      @Override
      public void flush(boolean endOfInput) {}

      @Override
      public void close() {}
    };
  }

  /** Everything received so far, in arrival order. */
  @SuppressWarnings("unchecked")
  public List<T> received() {
    synchronized (RECEIVED.get(id)) {
      return new ArrayList<>((List<T>) RECEIVED.get(id));
    }
  }
}
