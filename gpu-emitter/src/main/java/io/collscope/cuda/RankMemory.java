package io.collscope.cuda;

import jcuda.driver.CUdeviceptr;

/**
 * What every rank's kernel addresses of rank {@link #rank()}: its ring slots and its sync words, in
 * the context of {@link #device()}. A rank of this process owns them ({@link RankBuffers}); a rank
 * of another process is seen through CUDA IPC ({@link IpcPeer}).
 */
sealed interface RankMemory extends AutoCloseable permits RankBuffers, IpcPeer {

  int rank();

  /** The GPU whose context holds this memory (for a peer: this process's mapping of it). */
  GpuDevice device();

  CUdeviceptr slots();

  CUdeviceptr sync();

  /** Releases the memory; never throws, so the rest is released too. */
  @Override
  void close();
}
