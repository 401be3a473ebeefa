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
  void theBytesAreTheFormatStateWasWrittenIn() {
    // Accumulators in checkpoints were packed byte by byte (the reference below, the encoder as
    // first written); the faster encoder must write the same bytes, or restored state misreads.
    Random random = new Random(29);
    for (int round = 0; round < 500; round++) {
      long[][] arrays = new long[1 + random.nextInt(9)][];
      for (int k = 0; k < arrays.length; k++) {
        arrays[k] = new long[random.nextInt(50)];
        for (int i = 0; i < arrays[k].length; i++) {
          int shift = random.nextInt(64);
          arrays[k][i] = random.nextInt(3) == 0 ? 0 : random.nextLong() >> shift;
        }
      }
      assertThat(SparseCounts.encode(arrays)).isEqualTo(reference(arrays));
    }
    assertThat(SparseCounts.encode(new long[] {Long.MIN_VALUE, Long.MAX_VALUE, -1, 1}))
        .isEqualTo(reference(new long[][] {{Long.MIN_VALUE, Long.MAX_VALUE, -1, 1}}));
  }

  private static byte[] reference(long[]... arrays) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    java.util.function.LongConsumer varint =
        v -> {
          while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
          }
          out.write((int) v);
        };
    for (long[] a : arrays) {
      varint.accept(a.length);
      for (int from = 0; from < a.length; from += SparseCounts.BLOCK) {
        int to = Math.min(a.length, from + SparseCounts.BLOCK);
        int mask = 0;
        for (int i = from; i < to; i++) if (a[i] != 0) mask |= 1 << (i - from);
        varint.accept(mask);
        for (int i = from; i < to; i++) if (a[i] != 0) varint.accept((a[i] << 1) ^ (a[i] >> 63));
      }
    }
    return out.toByteArray();
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
