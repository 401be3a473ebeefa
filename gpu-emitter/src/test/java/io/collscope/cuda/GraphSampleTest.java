package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.collective.Sampling;
import org.junit.jupiter.api.Test;

class GraphSampleTest {

  /**
   * Replays of a 50-collective graph (not a multiple of the rate, so the sampled nodes move from
   * replay to replay) after 37 host launches: before each, every node runs the instrumented kernel
   * exactly where the kernel's hash samples the sequence it will run.
   */
  @Test
  void everyReplayRunsTheInstrumentedKernelExactlyWhereTheKernelsHashSamples() {
    Sampling sampling = CudaCollective.Options.samplingFor(16);
    int nodes = 50;
    GraphSample sample = new GraphSample(sampling, nodes);
    long next = 38;
    long instrumentedRuns = 0, sampled = 0;
    for (int replay = 0; replay < 40; replay++, next += nodes) {
      sample.retarget(next);
      for (int i = 0; i < nodes; i++) {
        assertThat(sample.instrumented(i))
            .as("replay %d, node %d (sequence %d)", replay, i, next + i)
            .isEqualTo(sampling.accounts(next + i));
        if (sample.instrumented(i)) instrumentedRuns++;
      }
      sampled += sampling.accountedIn(next - 1, next - 1 + nodes);
    }
    assertThat(instrumentedRuns).isEqualTo(sampled).isBetween(40L * nodes / 32, 40L * nodes / 8);
  }

  @Test
  void onlyTheNodesWhoseChoiceChangedAreTouched() {
    Sampling sampling = CudaCollective.Options.samplingFor(16);
    int nodes = 50;
    GraphSample sample = new GraphSample(sampling, nodes);
    // as built, every node is the instrumented kernel: the first replay turns the unsampled ones
    int[] first = sample.retarget(1);
    assertThat(first).hasSize((int) (nodes - sampling.accountedIn(0, nodes)));
    long next = 1 + nodes;
    for (int replay = 1; replay < 20; replay++, next += nodes) {
      boolean[] before = new boolean[nodes];
      for (int i = 0; i < nodes; i++) before[i] = sample.instrumented(i);
      int[] changed = sample.retarget(next);
      int differing = 0;
      for (int i = 0; i < nodes; i++) if (before[i] != sampling.accounts(next + i)) differing++;
      assertThat(changed).as("replay %d", replay).hasSize(differing);
      for (int i : changed) assertThat(sample.instrumented(i)).isNotEqualTo(before[i]);
    }
    // the same sequences again: nothing to change
    assertThat(sample.retarget(next - nodes)).isEmpty();
  }

  @Test
  void aGraphThatAccountsEveryCollectiveKeepsItsNodes() {
    GraphSample sample = new GraphSample(Sampling.EVERY, 50);
    for (long next = 1; next < 1000; next += 50) assertThat(sample.retarget(next)).isEmpty();
  }
}
