package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.JCudaDriver;

/**
 * One GPU as this process holds it: its primary context with the kernels loaded, and what launches
 * need to know of it (SMs, shared memory per block, clock64 rate). {@link #close()} unloads the
 * kernels and releases the context.
 */
final class GpuDevice implements AutoCloseable {

  final int ordinal;
  final CUdevice dev;
  final CUcontext ctx;
  final OsarModule module;
  final String name;
  final int sms;
  final int smemPerBlock;
  final long cyclesPerSecond;

  private GpuDevice(
      int ordinal,
      CUdevice dev,
      CUcontext ctx,
      OsarModule module,
      String name,
      int sms,
      int smemPerBlock,
      long cyclesPerSecond) {
    this.ordinal = ordinal;
    this.dev = dev;
    this.ctx = ctx;
    this.module = module;
    this.name = name;
    this.sms = sms;
    this.smemPerBlock = smemPerBlock;
    this.cyclesPerSecond = cyclesPerSecond;
  }

  /** Retains GPU {@code ordinal}'s primary context and loads the kernels into it. */
  static GpuDevice open(int ordinal) {
    JCudaDriver.setExceptionsEnabled(true);
    cuInit(0);
    CUdevice dev = new CUdevice();
    cuDeviceGet(dev, ordinal);
    CUcontext ctx = new CUcontext();
    cuDevicePrimaryCtxRetain(ctx, dev);
    OsarModule module = null;
    try {
      cuCtxSetCurrent(ctx);
      byte[] name = new byte[256];
      cuDeviceGetName(name, name.length, dev);
      int[] a = new int[1];
      cuDeviceGetAttribute(a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
      int sms = a[0];
      module = new OsarModule();
      // Ask for just over half an SM's shared memory: one collective block per SM, so no data
      // block shares an SM with another and bandwidth is even.
      cuDeviceGetAttribute(
          a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
      int perSm = a[0];
      cuDeviceGetAttribute(
          a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
      int smemPerBlock = Math.min(a[0], perSm / 2 + 1024);
      for (CUfunction f : module.collectives()) {
        cuFuncSetAttribute(
            f, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smemPerBlock);
      }
      return new GpuDevice(
          ordinal, dev, ctx, module, new String(name).trim(), sms, smemPerBlock, calibrate(module));
    } catch (RuntimeException | Error e) {
      release(dev, ctx, module);
      throw e;
    }
  }

  /** clock64 cycles per second against %globaltimer, measured in the current context. */
  private static long calibrate(OsarModule module) {
    CUdeviceptr out = new CUdeviceptr();
    cuMemAlloc(out, 16);
    try {
      cuLaunchKernel(
          module.calibrate, 1, 1, 1, 32, 1, 1, 0, null, Pointer.to(Pointer.to(out)), null);
      cuCtxSynchronize();
      long[] v = new long[2];
      cuMemcpyDtoH(Pointer.to(v), out, 16);
      return Math.round(v[0] * 1e9 / v[1]);
    } finally {
      cuMemFree(out);
    }
  }

  /**
   * Throws unless {@code ranks} ranks of {@code blocks} blocks each fit on this GPU at once (one
   * block per SM, as the shared memory each block asks for makes it): a rank's blocks wait on one
   * another (the flag is local grid completion), so one never scheduled holds the collective until
   * its wait budget runs out.
   */
  void requireResident(int ranks, int blocks) {
    long need = (long) ranks * blocks;
    if (need > sms) {
      throw new IllegalArgumentException(
          (ranks == 1
                  ? "1 rank of " + blocks + " blocks needs "
                  : ranks + " ranks of " + blocks + " blocks need ")
              + need
              + " SMs at once, but GPU "
              + ordinal
              + " has "
              + sms
              + ": the collective would wait on blocks never scheduled (use fewer blocks per rank)");
    }
  }

  /** The SM clock now (clock64 against %globaltimer over ~20 ms), in Hz. */
  long clockNow() {
    makeCurrent();
    return calibrate(module);
  }

  /** Makes this GPU's context the calling thread's current one. */
  void makeCurrent() {
    cuCtxSetCurrent(ctx);
  }

  /** Lets kernels in this GPU's context address {@code peer}'s memory. */
  void enablePeerAccess(GpuDevice peer) {
    int[] can = new int[1];
    cuDeviceCanAccessPeer(can, dev, peer.dev);
    if (can[0] == 0) {
      throw new IllegalStateException(
          "GPU "
              + ordinal
              + " cannot access GPU "
              + peer.ordinal
              + " (no peer access): place ranks on one GPU");
    }
    makeCurrent();
    try {
      cuCtxEnablePeerAccess(peer.ctx, 0);
    } catch (CudaException e) {
      if (!e.getMessage().contains("ALREADY_ENABLED")) throw e;
    }
  }

  /** How the backend names this GPU, e.g. {@code cuda:0 NVIDIA H200}. */
  String label() {
    return "cuda:" + ordinal + " " + name;
  }

  @Override
  public void close() {
    release(dev, ctx, module);
  }

  private static void release(CUdevice dev, CUcontext ctx, OsarModule module) {
    try {
      if (module != null) {
        cuCtxSetCurrent(ctx);
        cuModuleUnload(module.module);
      }
      cuDevicePrimaryCtxRelease(dev);
    } catch (RuntimeException ignored) {
      // context already gone
    }
  }
}
