package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;

/** Where the reporter's records go: Kafka in production, a file when recording on a GPU node. */
public interface SnapshotSink extends AutoCloseable {

  void send(CounterSnapshot snapshot);

  /** Blocks until every record sent so far is durable (acknowledged or written). */
  void flush();

  /** Records the sink failed to deliver so far. */
  long failed();

  @Override
  void close();

  /**
   * An in-memory sink that hands every record to {@code each} and never fails: simulations,
   * benchmarks and tests that look at records rather than deliver them.
   */
  static SnapshotSink to(java.util.function.Consumer<CounterSnapshot> each) {
    return new SnapshotSink() {
      @Override
      public void send(CounterSnapshot snapshot) {
        each.accept(snapshot);
      }

      @Override
      public void flush() {}

      @Override
      public long failed() {
        return 0;
      }

      @Override
      public void close() {}
    };
  }
}
