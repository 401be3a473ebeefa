package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.cuda.GemmAllReduce.Shape;
import org.junit.jupiter.api.Test;

/**
 * The CTA pairs' shared operand ({@link GemmAllReduce#share}) against the tile order itself: for
 * every pair of tiles (t, t ^ 1) that a pair of CTAs takes, the operand the host says they share
 * must be the same tile row (A) or column (W). A wrong answer would have the kernel multicast the
 * wrong half-tile (it traps on that), so this walks the order as {@code gemm_ar.cu}'s {@code
 * tile_coords} does. No GPU needed.
 */
class GemmArPairTest {

  /** {@code gemm_ar.cu}'s tile_coords: {row, column} of tile t. */
  private static int[] coords(int t, int tilesM, int tilesN, int groupM) {
    int perGroup = groupM * tilesN;
    int g = t / perGroup;
    int first = g * groupM;
    int rows = Math.min(tilesM - first, groupM);
    int r = t - g * perGroup;
    return new int[] {first + r % rows, r / rows};
  }

  @Test
  void everyPairSharesWhatTheHostSays() {
    int checked = 0;
    for (int tilesM : new int[] {1, 2, 3, 8, 12, 32, 33})
      for (int tilesN : new int[] {1, 2, 3, 48, 64})
        for (int groupM : new int[] {1, 2, 8})
          for (int grid : new int[] {7, 132, 264}) {
            Shape s = new Shape(tilesM * 128, tilesN * 128, 4096);
            int share = GemmAllReduce.share(s, groupM, grid);
            if (share == GemmAllReduce.SHARE_NONE) continue;
            int tiles = tilesM * tilesN;
            assertThat(tiles % 2).isZero();
            assertThat(grid % 2).isZero();
            for (int t = 0; t < tiles; t += 2) {
              int[] a = coords(t, tilesM, tilesN, groupM);
              int[] b = coords(t + 1, tilesM, tilesN, groupM);
              if (share == GemmAllReduce.SHARE_W)
                assertThat(b[1]).as("column of %d", t).isEqualTo(a[1]);
              else assertThat(b[0]).as("row of %d", t).isEqualTo(a[0]);
            }
            checked++;
          }
    assertThat(checked).isGreaterThan(20);
  }

  @Test
  void theDispatchedShapesShareW() {
    // raster group 8 at K = 4096, 264 CTAs on an H200
    assertThat(GemmAllReduce.share(new Shape(65536, 8192, 4096), 8, 264))
        .isEqualTo(GemmAllReduce.SHARE_W);
    assertThat(GemmAllReduce.share(new Shape(16384, 8192, 1024), 1, 264))
        .isEqualTo(GemmAllReduce.SHARE_A);
    // 12 tile rows in groups of 8: the last group has 4, still even, but the rule asks for whole
    // groups; an odd grid shares nothing
    assertThat(GemmAllReduce.share(new Shape(1536, 8192, 4096), 8, 264))
        .isEqualTo(GemmAllReduce.SHARE_NONE);
    assertThat(GemmAllReduce.share(new Shape(65536, 8192, 4096), 8, 263))
        .isEqualTo(GemmAllReduce.SHARE_NONE);
  }
}
