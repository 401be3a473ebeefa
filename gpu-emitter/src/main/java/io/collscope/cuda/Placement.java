package io.collscope.cuda;

/**
 * Where a communicator's ranks run: all in this process ({@link SingleProcessPlacement}) or one per
 * process over CUDA IPC ({@link IpcPlacement}). Either way it yields the {@link RankSet} the
 * backend runs, and releases it.
 */
sealed interface Placement extends AutoCloseable permits SingleProcessPlacement, IpcPlacement {

  RankSet ranks();

  /**
   * Returns once no other process still reads this process's memory (bounded), so that {@link
   * #close()} does not free it under them. Call with no collective in flight.
   */
  void awaitPeersDone() throws InterruptedException;

  /** Releases the ranks, the GPUs and whatever the placement left behind. */
  @Override
  void close();
}
