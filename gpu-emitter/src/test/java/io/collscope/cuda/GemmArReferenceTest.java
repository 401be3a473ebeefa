package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The host reference's bound: what it lets through from each main loop and what it still catches.
 */
class GemmArReferenceTest {

  private static final GemmAllReduce.Shape SHAPE = new GemmAllReduce.Shape(256, 384, 256);
  private static final double WGMMA_TERM = Math.scalb(1.0, -14);

  private static GemmArReference.Inputs[] inputs(long call) {
    return new GemmArReference.Inputs[] {
      GemmArReference.random(SHAPE, 0, call), GemmArReference.random(SHAPE, 1, call)
    };
  }

  /** Row {@code m} of the sum over ranks, exactly, then rounded to BF16 bits (nearest even). */
  private static short[] row(GemmArReference.Inputs[] in, int m) {
    int n = SHAPE.n(), k = SHAPE.k();
    short[] out = new short[n];
    for (int j = 0; j < n; j++) {
      double sum = 0;
      for (GemmArReference.Inputs r : in) {
        double acc = 0;
        for (int q = 0; q < k; q++) {
          acc += GemmArReference.e4m3(r.a()[m * k + q]) * GemmArReference.e4m3(r.w()[j * k + q]);
        }
        sum += acc * r.sa()[m] * r.sw()[j];
      }
      out[j] = bf16((float) sum);
    }
    return out;
  }

  private static short bf16(float f) {
    int b = Float.floatToIntBits(f);
    return (short) ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16);
  }

  @Test
  void theExactSumRoundedToBf16PassesEitherBound() {
    GemmArReference.Inputs[] in = inputs(1);
    for (int m : new int[] {0, 22, 255}) {
      assertThat(GemmArReference.check(SHAPE, in, m, row(in, m), 0)).isNull();
      assertThat(GemmArReference.check(SHAPE, in, m, row(in, m), WGMMA_TERM)).isNull();
    }
  }

  /**
   * Output [22][276] of this shape cancels to -0.136 from partial sums that reach 82 along K: run
   * 94's wgmma kernel (promoted every k32 step) wrote -0.138671875, 2^-18.4 of its sum of
   * |products| away, which the BF16-only bound (0.0016 here) refuses and the tensor-core term
   * admits; mma.sync's output of the same element is within the BF16-only bound (runs 71, 93, 94).
   */
  @Test
  void aTensorCoreAccumulationErrorPassesOnlyWithTheTensorCoreTerm() {
    GemmArReference.Inputs[] in = inputs(1);
    short[] got = row(in, 22);
    got[276] = bf16(-0.138671875f);
    assertThat(GemmArReference.check(SHAPE, in, 22, got, 0))
        .startsWith("out[22][276] = -0.138671875");
    assertThat(GemmArReference.check(SHAPE, in, 22, got, WGMMA_TERM)).isNull();
  }

  /** Rank 1's partial from another call (a stale buffer) fails the looser bound too. */
  @Test
  void aStalePartialFailsEvenWithTheTensorCoreTerm() {
    GemmArReference.Inputs[] in = inputs(1);
    GemmArReference.Inputs[] stale = {in[0], GemmArReference.random(SHAPE, 1, 2)};
    for (int m : new int[] {0, 22, 255}) {
      assertThat(GemmArReference.check(SHAPE, in, m, row(stale, m), WGMMA_TERM)).isNotNull();
    }
  }

  /** One K chunk of 32 products missing from rank 0's partial (a wrong stage) fails it too. */
  @Test
  void aMissingKChunkFailsEvenWithTheTensorCoreTerm() {
    GemmArReference.Inputs[] in = inputs(1);
    byte[] a = in[0].a().clone();
    for (int m = 0; m < SHAPE.m(); m++) {
      for (int q = 64; q < 96; q++) a[m * SHAPE.k() + q] = 0;
    }
    GemmArReference.Inputs[] wrong = {
      new GemmArReference.Inputs(a, in[0].w(), in[0].sa(), in[0].sw()), in[1]
    };
    for (int m : new int[] {0, 22, 255}) {
      assertThat(GemmArReference.check(SHAPE, in, m, row(wrong, m), WGMMA_TERM)).isNotNull();
    }
  }
}
