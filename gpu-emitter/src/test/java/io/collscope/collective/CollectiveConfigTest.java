package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The test pattern's host-side check, without a GPU: it tells the collective it checks from the
 * ones before it, so a stale slot or a stale output fails it, and bf16 holds every value exactly.
 */
class CollectiveConfigTest {

  private static final int ELEMENTS = 7; // the element pattern's period

  /**
   * What a rank's output holds when rank {@code staleRank}'s slot was read as it was at collective
   * {@code staleSeq} while every other rank's slot held collective {@code seq}'s data.
   */
  private static float[] reduced(int world, long seq, int staleRank, long staleSeq) {
    float[] out = new float[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) {
      for (int r = 0; r < world; r++) {
        out[i] += CollectiveConfig.inputValue(r, r == staleRank ? staleSeq : seq, i);
      }
    }
    return out;
  }

  @Test
  void theExpectedSumIsTheSumOfEveryRanksInput() {
    for (int world = 1; world <= 32; world++) {
      for (long seq = 1; seq <= 3 * CollectiveConfig.SEQUENCE_PERIOD; seq++) {
        assertThat(CollectiveConfig.firstMismatch(reduced(world, seq, -1, 0), world, seq))
            .as("world %d seq %d", world, seq)
            .isEqualTo(-1);
      }
    }
  }

  @Test
  void anOutputLeftFromThePreviousCollectiveFailsTheCheck() {
    for (int world = 1; world <= 32; world++) {
      for (long seq = 2; seq <= 3 * CollectiveConfig.SEQUENCE_PERIOD; seq++) {
        assertThat(CollectiveConfig.firstMismatch(reduced(world, seq - 1, -1, 0), world, seq))
            .as("world %d: seq %d checked against the output of seq %d", world, seq, seq - 1)
            .isNotNegative();
      }
    }
  }

  @Test
  void aSlotLeftFromTheRingsPreviousTurnFailsTheCheck() {
    int ring = CollectiveConfig.of(2).ringSlots();
    for (int world = 2; world <= 32; world++) {
      for (long seq = ring + 1; seq <= ring + 3 * CollectiveConfig.SEQUENCE_PERIOD; seq++) {
        for (int stale = 0; stale < world; stale++) {
          assertThat(
                  CollectiveConfig.firstMismatch(
                      reduced(world, seq, stale, seq - ring), world, seq))
              .as("world %d seq %d: rank %d's slot from seq %d", world, seq, stale, seq - ring)
              .isNotNegative();
        }
      }
    }
    // Other rings too, except multiples of the sequence term's period, whose previous turn looks
    // alike (CollectiveConfig.inputValue says so).
    for (int slots = 2; slots < 32; slots++) {
      if (slots % CollectiveConfig.SEQUENCE_PERIOD == 0) continue;
      assertThat(CollectiveConfig.firstMismatch(reduced(4, 100, 1, 100 - slots), 4, 100))
          .as("a ring of %d slots", slots)
          .isNotNegative();
    }
  }

  @Test
  void bf16HoldsEveryInputAndEverySumUpToEightRanks() {
    for (int world = 1; world <= 8; world++) {
      for (long seq = 0; seq < CollectiveConfig.SEQUENCE_PERIOD; seq++) {
        for (int i = 0; i < ELEMENTS; i++) {
          for (int r = 0; r < world; r++) {
            float v = CollectiveConfig.inputValue(r, seq, i);
            assertThat(isBf16(v)).as("input %s of rank %d", v, r).isTrue();
          }
          float sum = CollectiveConfig.expectedSum(world, seq, i);
          assertThat(isBf16(sum)).as("sum %s of %d ranks", sum, world).isTrue();
        }
      }
    }
  }

  /** bf16 is a float's upper 16 bits: it holds a float exactly when the lower 16 are zero. */
  private static boolean isBf16(float f) {
    return (Float.floatToRawIntBits(f) & 0xffff) == 0;
  }
}
