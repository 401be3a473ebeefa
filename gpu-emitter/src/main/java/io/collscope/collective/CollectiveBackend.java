package io.collscope.collective;

import io.collscope.counters.CounterBlock;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Runs one communicator's ranks, each publishing into its own {@link CounterBlock}. The reporter
 * reads the blocks from another thread; a backend never calls into the reporter.
 */
public interface CollectiveBackend extends AutoCloseable {

  /** "cpu" or "cuda". */
  String name();

  /** The collective's name as reported, e.g. {@code allreduce_oneshot_f32}. */
  String collective();

  /**
   * Which collectives the ranks account in full (phases, per-peer waits and lateness), for the
   * emitter's start line: an operator reading a window's percentiles should know whether they come
   * from every collective or from a weighted sample of them (the CUDA kernel below 64 MiB per
   * rank).
   */
  default String accounting() {
    return "every collective accounted";
  }

  /**
   * Which collectives the ranks account in full, for the reporter's {@code sample_every} and {@code
   * sampled_calls}: the same choice the ranks make, by sequence number.
   */
  default Sampling sampling() {
    return Sampling.EVERY;
  }

  int worldSize();

  /** Starts every live rank; returns at once. */
  void start();

  /** Asks every rank to finish its current collective and waits for them. Idempotent. */
  void stop() throws InterruptedException;

  CounterBlock block(int rank);

  /**
   * False for a rank that is not running (injected dead rank, or past its dead-rank@T time): it
   * reports nothing.
   */
  boolean reports(int rank);

  /**
   * The rank's emitter incarnation: 0, then one more at every injected reboot-rank, when its
   * counters start again from zero; negative while such a restart is under way. The reporter reads
   * it before and after each block read, drops the read when the two differ, and folds it into the
   * boot_id it stamps, so a consumer sees a fresh boot rather than counters going backwards.
   */
  default long incarnation(int rank) {
    return 0;
  }

  /** The device rank {@code r} runs on, e.g. {@code cpu} or {@code cuda:0 NVIDIA H200}. */
  String device(int rank);

  /**
   * The last collective of a run whose ranks stopped on their own, having agreed with the ranks of
   * other processes to stop there (one of them asked: its {@code --seconds} ended, SIGTERM); empty
   * while running, and for a backend whose ranks stop only when {@link #stop()} is called. The
   * emitter ends its run when it is set.
   */
  default OptionalLong stoppedAt() {
    return OptionalLong.empty();
  }

  /** A fatal error (wrong result, device fault) that stopped the backend, if any. */
  Optional<Throwable> failure();

  @Override
  default void close() throws Exception {
    stop();
  }
}
