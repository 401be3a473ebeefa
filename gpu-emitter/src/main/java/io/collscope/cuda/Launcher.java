package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import java.util.Arrays;
import jcuda.Pointer;

/**
 * Enqueues kernels on a rank's stream: its collective and, after every k-th instrumented one,
 * {@code osar_publish}. The caller has the rank's context current.
 */
final class Launcher {

  private final DType dtype;
  private final int threadsPerBlock;
  private final int[] sincePublish; // by rank: instrumented collectives since its last publish
  private volatile int publishEvery;

  Launcher(DType dtype, int threadsPerBlock, int publishEvery, int worldSize) {
    this.dtype = dtype;
    this.threadsPerBlock = threadsPerBlock;
    this.sincePublish = new int[worldSize];
    this.publishEvery = Math.max(1, publishEvery);
  }

  void collective(RankBuffers r, boolean instrumented) {
    cuLaunchKernel(
        r.device().module.kernel(dtype, instrumented, r.push()),
        r.blocks(),
        1,
        1,
        threadsPerBlock,
        1,
        1,
        r.device().smemPerBlock,
        r.stream(),
        Pointer.to(Pointer.to(r.params())),
        null);
    if (instrumented && ++sincePublish[r.rank()] >= publishEvery) publish(r);
  }

  /** Enqueues osar_publish: the counter block gets the totals of every collective before it. */
  void publish(RankBuffers r) {
    cuLaunchKernel(
        r.device().module.publish,
        1,
        1,
        1,
        OsarLayout.PUBLISH_THREADS,
        1,
        1,
        0,
        r.stream(),
        Pointer.to(Pointer.to(r.params())),
        null);
    sincePublish[r.rank()] = 0;
  }

  /** Collectives between publications from now on, for launches and graph captures alike. */
  void setPublishEvery(int k) {
    publishEvery = Math.max(1, k);
    Arrays.fill(sincePublish, 0);
  }
}
