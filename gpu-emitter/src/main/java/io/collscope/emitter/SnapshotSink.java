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
}
