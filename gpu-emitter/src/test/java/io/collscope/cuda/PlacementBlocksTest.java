package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How many data blocks a rank gets: by size, and never more than its GPU can hold at once. */
class PlacementBlocksTest {

  private static final int H200_SMS = 132;

  @Test
  void oneRankPerGpuGetsTheSizesDefault() {
    assertThat(Placement.blocksPerRank(0, 4 << 10, H200_SMS, 1)).isEqualTo(1);
    assertThat(Placement.blocksPerRank(0, 64 << 10, H200_SMS, 1)).isEqualTo(16);
    assertThat(Placement.blocksPerRank(0, 1 << 20, H200_SMS, 1)).isEqualTo(128);
    assertThat(Placement.blocksPerRank(0, 16 << 20, H200_SMS, 1)).isEqualTo(128);
  }

  @Test
  void ranksSharingAGpuAreAllResidentWithAnSmSpareEach() {
    for (int ranks = 1; ranks <= 32; ranks++) {
      int blocks = Placement.blocksPerRank(0, 16 << 20, H200_SMS, ranks);
      assertThat(blocks).as("%d ranks", ranks).isPositive();
      if (ranks <= H200_SMS / 2) assertThat(ranks * (blocks + 1)).isLessThanOrEqualTo(H200_SMS);
    }
    assertThat(Placement.blocksPerRank(0, 16 << 20, H200_SMS, 8)).isEqualTo(15);
  }

  @Test
  void anExplicitCountIsKept() {
    assertThat(Placement.blocksPerRank(3, 16 << 20, H200_SMS, 8)).isEqualTo(3);
  }
}
