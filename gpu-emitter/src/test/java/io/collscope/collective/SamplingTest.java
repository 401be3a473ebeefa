package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.cuda.CudaCollective;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class SamplingTest {

  private static final Sampling KERNELS = CudaCollective.Options.defaults(2).samplingFor(4096);

  @Test
  void theKernelsSamplingIsOneInSixteenByItsHash() {
    assertThat(KERNELS.every()).isEqualTo(16);
    for (long seq = 1; seq <= 5000; seq++) {
      assertThat(KERNELS.accounts(seq)).isEqualTo(CudaCollective.Options.sampled(seq, 16));
    }
    // 16 MiB is sampled too; from 64 MiB every collective is accounted
    assertThat(CudaCollective.Options.defaults(2).samplingFor(16L << 20)).isEqualTo(KERNELS);
    assertThat(CudaCollective.Options.defaults(2).samplingFor(64L << 20)).isEqualTo(Sampling.EVERY);
  }

  @Test
  void aRangeCountsTheCollectivesItHolds() {
    long brute = LongStream.rangeClosed(101, 4000).filter(KERNELS::accounts).count();
    assertThat(KERNELS.accountedIn(100, 4000)).isEqualTo(brute);
    // about 1 in 16, not every 16th: a hash, so no period of the job's own collectives aliases
    assertThat(brute).isBetween(3900 / 16 - 60L, 3900 / 16 + 60L);
    assertThat(Sampling.EVERY.accountedIn(100, 4000)).isEqualTo(3900);
    assertThat(KERNELS.accountedIn(50, 50)).isZero();
  }

  @Test
  void theRunningCountGrowsWithTheCompletedCollectivesAndStartsOverWhenTheyDo() {
    Sampling.Counter c = new Sampling.Counter(KERNELS);
    long a = c.accountedUpTo(1000);
    long b = c.accountedUpTo(2500);
    assertThat(a).isEqualTo(KERNELS.accountedIn(0, 1000));
    assertThat(b).isEqualTo(KERNELS.accountedIn(0, 2500));
    assertThat(c.accountedUpTo(2500)).isEqualTo(b);
    // counters that started again (a new incarnation): the count starts from them
    assertThat(c.accountedUpTo(300)).isEqualTo(KERNELS.accountedIn(0, 300));
  }

  @Test
  void theIntervalIsAPowerOfTwo() {
    assertThatThrownBy(() -> new Sampling(12, 1)).hasMessageContaining("power of two");
    assertThatThrownBy(() -> new Sampling(0, 1)).hasMessageContaining("power of two");
  }
}
