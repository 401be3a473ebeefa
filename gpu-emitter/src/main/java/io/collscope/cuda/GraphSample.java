package io.collscope.cuda;

import io.collscope.collective.Sampling;
import java.util.Arrays;

/**
 * Which kernel each instrumented collective captured in one rank's CUDA graph runs in its next
 * replay: the instrumented kernel where the kernel's hash samples the sequence the node will run,
 * the plain kernel elsewhere, as {@link Launcher#collective} chooses for a host launch.
 *
 * <p>Why: a graph fixes each node's kernel at capture while every replay runs the next sequences,
 * so a captured instrumented collective would otherwise always be the instrumented kernel, which
 * takes the sample on the device and costs an unsampled collective whatever ptxas made of its
 * unsampled path (the f32 one-shot push kernel at 8 MB: +170 ns over the plain kernel on the mean
 * of 14 passes, runs 188–193, against +42 ns for host launches in run 191). The host knows the
 * sequences a replay will run ({@link RankBuffers#nextSequence}), so before each replay it points
 * the nodes whose choice changed since the last replay at the other kernel ({@code
 * cuGraphExecKernelNodeSetParams}, which affects later launches only): about {@code 2 n / every} of
 * a graph's {@code n} collectives per replay.
 *
 * <p>The instrumented kernel still tests its sample on the device, so a graph replayed without this
 * (every node instrumented) is billed exactly as before, only slower; and a node pointed at the
 * instrumented kernel by mistake bills nothing more, while one pointed at the plain kernel for a
 * sampled sequence would lose that sample, which the GPU test of exact billing catches.
 */
final class GraphSample {

  private final Sampling sampling;
  // each node's kernel in the executable graph now: as captured, the instrumented one everywhere
  private final boolean[] instrumented;

  GraphSample(Sampling sampling, int collectives) {
    this.sampling = sampling;
    this.instrumented = new boolean[collectives];
    Arrays.fill(instrumented, true);
  }

  /**
   * The nodes, in capture order, whose kernel must change for a replay whose first collective is
   * sequence {@code firstSeq}; takes the change as made ({@link #instrumented(int)} answers for
   * that replay from now on).
   */
  int[] retarget(long firstSeq) {
    int[] changed = new int[instrumented.length];
    int n = 0;
    for (int i = 0; i < instrumented.length; i++) {
      boolean sampled = sampling.accounts(firstSeq + i);
      if (sampled != instrumented[i]) {
        instrumented[i] = sampled;
        changed[n++] = i;
      }
    }
    return Arrays.copyOf(changed, n);
  }

  /** Whether node {@code node} (in capture order) runs the instrumented kernel. */
  boolean instrumented(int node) {
    return instrumented[node];
  }
}
