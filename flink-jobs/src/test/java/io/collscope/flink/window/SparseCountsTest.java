package io.collscope.flink.window;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SparseCountsTest {

  @Test
  void arraysOfAnyLengthComeBackValueForValue() {
    Random random = new Random(13);
    for (int round = 0; round < 200; round++) {
      long[][] arrays = new long[4][];
      for (int k = 0; k < arrays.length; k++) {
        arrays[k] = new long[random.nextInt(70)];
        for (int i = 0; i < arrays[k].length; i++) {
          int kind = random.nextInt(6);
          arrays[k][i] =
              kind == 0
                  ? random.nextLong()
                  : kind == 1 ? -random.nextInt(1000) : kind == 2 ? random.nextInt(1 << 20) : 0;
        }
      }
      long[][] back = SparseCounts.decode(SparseCounts.encode(arrays), arrays.length);
      for (int k = 0; k < arrays.length; k++) {
        assertThat(back[k]).as(Arrays.toString(arrays[k])).isEqualTo(arrays[k]);
      }
    }
  }

  @Test
  void zerosCostABitMaskPerSixteen() {
    long[] peers = new long[16 * 16];
    peers[3] = 340;
    // 2 bytes of length, 16 masks of one byte, one count of two bytes.
    assertThat(SparseCounts.encode(peers)).hasSize(2 + 16 + 2);
  }

  @Test
  void aShortBufferIsAnErrorNotAGuess() {
    byte[] b = SparseCounts.encode(new long[] {1, 2, 3}, new long[] {4});
    assertThatThrownBy(() -> SparseCounts.decode(b, 3))
        .isInstanceOf(ArrayIndexOutOfBoundsException.class);
    assertThatThrownBy(() -> SparseCounts.decode(b, 1)).isInstanceOf(IllegalStateException.class);
  }
}
