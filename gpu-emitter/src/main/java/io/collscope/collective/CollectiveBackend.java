package io.collscope.collective;

import io.collscope.counters.CounterBlock;
import java.util.Optional;

/**
 * Runs one communicator's ranks, each publishing into its own {@link CounterBlock}. The reporter
 * reads the blocks from another thread; a backend never calls into the reporter.
 */
public interface CollectiveBackend extends AutoCloseable {

  /** "cpu" or "cuda". */
  String name();

  /** The collective's name as reported, e.g. {@code allreduce_oneshot_f32}. */
  String collective();

  int worldSize();

  /** Starts every live rank; returns at once. */
  void start();

  /** Asks every rank to finish its current collective and waits for them. Idempotent. */
  void stop() throws InterruptedException;

  CounterBlock block(int rank);

  /** False for a rank that is not running (injected dead rank): it reports nothing. */
  boolean reports(int rank);

  /** The device rank {@code r} runs on, e.g. {@code cpu} or {@code cuda:0 NVIDIA H200}. */
  String device(int rank);

  /** A fatal error (wrong result, device fault) that stopped the backend, if any. */
  Optional<Throwable> failure();

  @Override
  default void close() throws Exception {
    stop();
  }
}
