package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import jcuda.Pointer;

/**
 * Enqueues kernels on a rank's stream: its collective and, when {@link PublishPolicy} says the
 * rank's totals are due, {@code osar_publish}. The caller has the rank's context current.
 */
final class Launcher {

  private final DType dtype;
  private final int threadsPerBlock;
  private final PublishPolicy publishing;

  /**
   * Publications every {@code publishEvery} instrumented collectives or, when {@code
   * publishIntervalNanos} is positive, once that long has passed since the last, whichever first.
   */
  Launcher(
      DType dtype,
      int threadsPerBlock,
      int publishEvery,
      long publishIntervalNanos,
      int worldSize) {
    this.dtype = dtype;
    this.threadsPerBlock = threadsPerBlock;
    this.publishing =
        new PublishPolicy(worldSize, publishEvery, publishIntervalNanos, System.nanoTime());
  }

  /**
   * Enqueues one collective on the rank's stream. Instrumented, the host takes the kernel's sample
   * itself: the instrumented kernel for the collectives it accounts, the plain kernel for the
   * others, which so run the plain kernel's code and cost what it costs, whatever ptxas made of the
   * instrumented kernel's other paths (docs/GPU.md, "The sample on the host"). The plain kernel
   * keeps the same sequence, ring, flags and acks, counts a timeout as the instrumented one does,
   * and adds nothing to the totals an unsampled collective would not add; calls and bytes are
   * derived from the sequence by osar_publish.
   */
  void collective(RankBuffers r, boolean instrumented) {
    launch(r, r.enqueueOne(instrumented));
    countForPublication(r, instrumented);
  }

  /**
   * Enqueues one collective into a graph being captured on the rank's stream. A graph fixes each
   * node's kernel while its replays run other sequences, so an instrumented collective is the
   * instrumented kernel, which takes the sample on the device (osar.cu, osar); the caller counts
   * the replays ({@link RankBuffers#enqueuedByGraph}).
   */
  void capturedCollective(RankBuffers r, boolean instrumented) {
    launch(r, instrumented);
    countForPublication(r, instrumented);
  }

  /** An instrumented collective counts toward the rank's next publication, enqueued when due. */
  private void countForPublication(RankBuffers r, boolean instrumented) {
    if (instrumented && publishing.countAndCheck(r.rank(), now())) publish(r);
  }

  /**
   * Enqueues a publication if the rank ran instrumented collectives since its last one. The
   * kernels' ring of sample records must be folded at least every {@link OsarLayout#RECORDS}
   * collectives ({@link PublishPolicy}); where the count is about to start again (a new interval)
   * or to repeat (the end of a graph's capture, whose replays would otherwise carry the unpublished
   * tail into the next replay's count), this keeps that bound.
   */
  void publishPending(RankBuffers r) {
    if (publishing.unpublished(r.rank())) publish(r);
  }

  private void launch(RankBuffers r, boolean instrumentedKernel) {
    cuLaunchKernel(
        r.device().module.kernel(dtype, instrumentedKernel, r.algorithm()),
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
  }

  /** The host clock where the policy has a time bound; it is not read otherwise. */
  private long now() {
    return publishing.timed() ? System.nanoTime() : 0;
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
    publishing.published(r.rank(), now());
  }

  /**
   * Every {@code k} collectives from now on and no time bound, for launches and graph captures
   * alike (a graph must hold a whole number of intervals).
   */
  void setPublishEvery(int k) {
    publishing.countOnly(k);
  }
}
