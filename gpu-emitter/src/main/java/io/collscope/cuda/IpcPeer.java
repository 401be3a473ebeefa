package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuIpcCloseMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenMemHandle;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUipcMem_flags;

/**
 * A rank of another process, seen through its ring slots and sync words mapped into this process's
 * context by CUDA IPC. The mappings are closed, never freed: the peer process owns the memory.
 */
record IpcPeer(int rank, GpuDevice device, CUdeviceptr slots, CUdeviceptr sync)
    implements RankMemory {

  /** Maps what rank {@code rank} published; {@code device}'s context is current. */
  static IpcPeer open(int rank, GpuDevice device, IpcRendezvous.Published published) {
    CUdeviceptr slots = map(published.slots());
    try {
      return new IpcPeer(rank, device, slots, map(published.sync()));
    } catch (RuntimeException | Error e) {
      cuIpcCloseMemHandle(slots);
      throw e;
    }
  }

  private static CUdeviceptr map(byte[] handle) {
    CUdeviceptr p = new CUdeviceptr();
    cuIpcOpenMemHandle(
        p, IpcRendezvous.handle(handle), CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    return p;
  }

  /** The last collective this peer has fully reduced (its ack word). */
  long ack() {
    return syncWord(OsarLayout.SYNC_ACK);
  }

  /** Whether one of this peer's collectives aborted: it acks nothing more (its abort word). */
  boolean aborted() {
    return syncWord(OsarLayout.SYNC_ABORT) != 0;
  }

  private long syncWord(int offset) {
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), sync.withByteOffset(offset), 8);
    return v[0];
  }

  @Override
  public void close() {
    try {
      device.makeCurrent();
    } catch (RuntimeException ignored) {
      // best effort: close what we can
    }
    for (CUdeviceptr p : new CUdeviceptr[] {slots, sync}) {
      try {
        cuIpcCloseMemHandle(p);
      } catch (RuntimeException ignored) {
        // keep closing the rest
      }
    }
  }
}
