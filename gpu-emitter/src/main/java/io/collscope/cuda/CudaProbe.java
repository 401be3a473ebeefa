package io.collscope.cuda;

import jcuda.driver.JCudaDriver;

/**
 * Whether the CUDA driver and at least one GPU are usable from this JVM. Needs only libcuda.so.1
 * and JCuda's driver-API library; any failure (no driver, no device, no native library) means zero
 * GPUs rather than an error, so {@code --backend auto} falls back to the CPU.
 */
public final class CudaProbe {

  private static volatile Integer cached;
  private static volatile String reason = "not probed";

  private CudaProbe() {}

  public static int gpuCount() {
    Integer c = cached;
    if (c == null) {
      synchronized (CudaProbe.class) {
        if (cached == null) {
          cached = probe();
        }
        c = cached;
      }
    }
    return c;
  }

  /** Whether a GPU is usable here (tests are conditioned on it: skipped, not failed, in CI). */
  public static boolean available() {
    return gpuCount() > 0;
  }

  /**
   * Fails with the reason when no GPU is usable: the one check the CUDA backend, the collectives
   * and the GPU benchmarks make before any GPU work.
   *
   * @throws io.collscope.collective.BackendUnavailableException without a usable GPU
   */
  public static void requireGpu() {
    if (gpuCount() == 0) {
      throw new io.collscope.collective.BackendUnavailableException("cuda", reason());
    }
  }

  /** Why {@link #gpuCount()} is zero, for skip messages and errors. */
  public static String reason() {
    gpuCount();
    return reason;
  }

  /** JCuda's link errors carry whole nested stack traces; keep the line that says why. */
  static String firstCause(Throwable t) {
    String m = String.valueOf(t.getMessage());
    int i = m.lastIndexOf("UnsatisfiedLinkError: ");
    if (i >= 0) {
      String tail = m.substring(i + "UnsatisfiedLinkError: ".length());
      int nl = tail.indexOf('\n');
      return nl < 0 ? tail.trim() : tail.substring(0, nl).trim();
    }
    int nl = m.indexOf('\n');
    return t.getClass().getSimpleName() + ": " + (nl < 0 ? m : m.substring(0, nl));
  }

  private static int probe() {
    try {
      JCudaDriver.setExceptionsEnabled(true);
      JCudaDriver.cuInit(0);
      int[] n = new int[1];
      JCudaDriver.cuDeviceGetCount(n);
      reason = n[0] + " CUDA device(s)";
      return n[0];
    } catch (Throwable t) {
      reason = "no usable CUDA driver or device (" + firstCause(t) + ")";
      return 0;
    }
  }
}
