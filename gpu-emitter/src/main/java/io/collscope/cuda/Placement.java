package io.collscope.cuda;

/**
 * Where a communicator's ranks run: all in this process ({@link SingleProcessPlacement}) or one per
 * process over CUDA IPC ({@link IpcPlacement}). Either way it yields the {@link RankSet} the
 * backend runs, and releases it.
 */
sealed interface Placement extends AutoCloseable permits SingleProcessPlacement, IpcPlacement {

  RankSet ranks();

  /**
   * How this process's rank agrees with the other ranks' processes on the last collective when one
   * stops ({@link StopAgreement}); null when every rank runs in this process.
   */
  StopAgreement stopAgreement();

  /**
   * Returns once no other process still reads this process's memory (bounded), so that {@link
   * #close()} does not free it under them. Call with no collective in flight.
   */
  void awaitPeersDone() throws InterruptedException;

  /** Releases the ranks, the GPUs and whatever the placement left behind. */
  @Override
  void close();

  /**
   * Data blocks per rank: {@code requested} when positive, else {@link
   * CudaCollective.Options#defaultBlocks} for the size, lowered so that the blocks of the {@code
   * ranksOnGpu} ranks sharing a GPU of {@code sms} SMs are all resident at once, one SM per rank
   * left spare: a rank's blocks wait on one another (the flag is local grid completion), so a block
   * never scheduled holds its collective until the wait budget runs out.
   */
  static int blocksPerRank(int requested, long bytesPerRank, int sms, int ranksOnGpu) {
    if (requested > 0) return requested;
    return Math.max(
        1, Math.min(CudaCollective.Options.defaultBlocks(bytesPerRank), sms / ranksOnGpu - 1));
  }
}
