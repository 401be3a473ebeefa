package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuGraphAddKernelNode;
import static jcuda.driver.JCudaDriver.cuGraphCreate;
import static jcuda.driver.JCudaDriver.cuGraphExecKernelNodeSetParams;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import jcuda.Pointer;
import jcuda.driver.CUDA_KERNEL_NODE_PARAMS;
import jcuda.driver.CUfunction;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUgraphNode;

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
    if (due(r, instrumented)) publish(r);
  }

  /**
   * Adds one collective to a rank's graph being built and returns its node, followed by a node of
   * {@code osar_publish} when a publication is due. A graph fixes each node's kernel while its
   * replays run other sequences: an instrumented collective is added as the instrumented kernel,
   * which takes the sample on the device (osar.cu, osar), until {@link #retarget} points the node
   * at the kernel its next sequence needs ({@link GraphSample}); the caller counts the replays
   * ({@link RankBuffers#enqueuedByGraph}).
   */
  CUgraphNode addCollective(Chain chain, RankBuffers r, boolean instrumented) {
    CUgraphNode node = chain.add(collectiveKernel(r, instrumented));
    if (due(r, instrumented)) addPublication(chain, r);
    return node;
  }

  /** An instrumented collective counts toward the rank's next publication: whether one is due. */
  private boolean due(RankBuffers r, boolean instrumented) {
    return instrumented && publishing.countAndCheck(r.rank(), now());
  }

  /**
   * Enqueues a publication if the rank ran instrumented collectives since its last one. The
   * kernels' ring of sample records must be folded at least every {@link OsarLayout#RECORDS}
   * collectives ({@link PublishPolicy}); where the count is about to start again (a new interval)
   * this keeps that bound.
   */
  void publishPending(RankBuffers r) {
    if (publishing.unpublished(r.rank())) publish(r);
  }

  /**
   * Ends a rank's graph with a publication if its last collectives have none: its replays would
   * otherwise carry the unpublished tail into the next replay's count, past the ring's bound.
   */
  void addPendingPublication(Chain chain, RankBuffers r) {
    if (publishing.unpublished(r.rank())) addPublication(chain, r);
  }

  /**
   * Points a collective's node of an instantiated graph at the instrumented or the plain kernel,
   * with the arguments it was added with, from the graph's next launch on (launches already
   * enqueued keep theirs). The rank's context is current.
   */
  void retarget(CUgraphExec exec, CUgraphNode node, RankBuffers r, boolean instrumentedKernel) {
    cuGraphExecKernelNodeSetParams(exec, node, collectiveKernel(r, instrumentedKernel));
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

  /** {@link #launch}'s kernel and arguments as a graph node's. */
  private CUDA_KERNEL_NODE_PARAMS collectiveKernel(RankBuffers r, boolean instrumentedKernel) {
    return kernelNode(
        r.device().module.kernel(dtype, instrumentedKernel, r.algorithm()),
        r.blocks(),
        threadsPerBlock,
        r.device().smemPerBlock,
        r);
  }

  private static CUDA_KERNEL_NODE_PARAMS kernelNode(
      CUfunction f, int blocks, int threads, int smem, RankBuffers r) {
    CUDA_KERNEL_NODE_PARAMS p = new CUDA_KERNEL_NODE_PARAMS();
    p.func = f;
    p.gridDimX = blocks;
    p.gridDimY = 1;
    p.gridDimZ = 1;
    p.blockDimX = threads;
    p.blockDimY = 1;
    p.blockDimZ = 1;
    p.sharedMemBytes = smem;
    p.kernelParams = Pointer.to(Pointer.to(r.params()));
    return p;
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

  /** {@link #publish} as a node of a graph being built. */
  private void addPublication(Chain chain, RankBuffers r) {
    chain.add(kernelNode(r.device().module.publish, 1, OsarLayout.PUBLISH_THREADS, 0, r));
    publishing.published(r.rank(), now());
  }

  /**
   * A rank's graph being built: kernel nodes in a chain, each after the one before, as a capture of
   * the rank's stream would make them. Built node by node rather than captured so the host holds
   * every collective's node to {@link #retarget} (JCuda 12.0's calls that list a captured graph's
   * nodes pass the driver an uninitialized array size).
   */
  static final class Chain {
    private final CUgraph graph = new CUgraph();
    private CUgraphNode last;

    /** An empty graph in the current context. */
    Chain() {
      cuGraphCreate(graph, 0);
    }

    CUgraphNode add(CUDA_KERNEL_NODE_PARAMS kernel) {
      CUgraphNode node = new CUgraphNode();
      if (last == null) cuGraphAddKernelNode(node, graph, null, 0, kernel);
      else cuGraphAddKernelNode(node, graph, new CUgraphNode[] {last}, 1, kernel);
      last = node;
      return node;
    }

    CUgraph graph() {
      return graph;
    }
  }

  /**
   * Every {@code k} collectives from now on and no time bound, for launches and graph captures
   * alike (a graph must hold a whole number of intervals).
   */
  void setPublishEvery(int k) {
    publishing.countOnly(k);
  }
}
