package io.collscope.cuda;

import java.util.SplittableRandom;

/**
 * Inputs for the fused FP8 GEMM + all-reduce and its host reference: FP8 e4m3 decoding, random
 * inputs that differ per rank and per call (so an output left over from another call fails the
 * check), and the check itself, within the kernel's rounding (BF16 partials, BF16 sum).
 */
public final class GemmArReference {
  private GemmArReference() {}

  /** One rank's inputs: A [M][K], W [N][K] as e4m3 bytes, and FP32 row / column scales. */
  public record Inputs(byte[] a, byte[] w, float[] sa, float[] sw) {}

  private static final float[] E4M3 = new float[256];

  static {
    for (int b = 0; b < 256; b++) {
      int sign = b >> 7, exp = (b >> 3) & 15, man = b & 7;
      float v;
      if (exp == 15 && man == 7) v = Float.NaN;
      else if (exp == 0) v = man / 8f * (float) Math.pow(2, -6);
      else v = (1 + man / 8f) * (float) Math.pow(2, exp - 7);
      E4M3[b] = sign == 1 ? -v : v;
    }
  }

  /** The value of an e4m3 byte. */
  public static float e4m3(byte b) {
    return E4M3[b & 0xff];
  }

  /**
   * Random inputs of {@code shape} for rank {@code rank}, call {@code call}: e4m3 values of
   * magnitude 1/8 to 3.75 (one in 16 zero), scales in [0.5, 1.5).
   */
  public static Inputs random(GemmAllReduce.Shape shape, int rank, long call) {
    SplittableRandom rnd = new SplittableRandom(0x5eed_0000L + 1_000_003L * call + rank);
    byte[] a = fp8(rnd, (long) shape.m() * shape.k());
    byte[] w = fp8(rnd, (long) shape.n() * shape.k());
    float[] sa = new float[shape.m()];
    float[] sw = new float[shape.n()];
    for (int i = 0; i < sa.length; i++) sa[i] = 0.5f + (float) rnd.nextDouble();
    for (int i = 0; i < sw.length; i++) sw[i] = 0.5f + (float) rnd.nextDouble();
    return new Inputs(a, w, sa, sw);
  }

  private static byte[] fp8(SplittableRandom rnd, long n) {
    byte[] b = new byte[Math.toIntExact(n)];
    for (int i = 0; i < b.length; i++) {
      int r = rnd.nextInt();
      if ((r & 15) == 0) continue; // zero
      int sign = (r >>> 4) & 1, exp = 4 + ((r >>> 5) & 0x7fff) % 5, man = (r >>> 20) & 7;
      b[i] = (byte) (sign << 7 | exp << 3 | man);
    }
    return b;
  }

  /** The float value of BF16 bits. */
  public static float bf16(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /**
   * The tensor cores' share of the bound, per unit of sum |products|, for the main loop this
   * process runs ({@link GemmArModule#MAIN_LOOP}): 0 for {@code mma.sync}, whose FP8 products reach
   * FP32 accumulators exactly enough that only the BF16 roundings count; 2^-14 for {@code wgmma},
   * whose tensor cores add FP8 products into their accumulator keeping about 14 bits (DeepSeek-V3's
   * report, section 3.3.2; runs 93-94 here: 2^-14.4 of sum |products| with no promotion at K = 128,
   * 2^-15.4 promoted every 64). A wrong or stale K chunk errs by about the output's own size,
   * sqrt(K) products, so it still fails by orders of magnitude.
   */
  public static double productTerm() {
    return GemmArModule.wgmma() ? Math.scalb(1.0, -14) : 0;
  }

  /**
   * {@link #check(GemmAllReduce.Shape, Inputs[], int, short[], double)} at {@link #productTerm}.
   */
  public static String check(GemmAllReduce.Shape s, Inputs[] in, int row0, short[] got) {
    return check(s, in, row0, got, productTerm());
  }

  /**
   * Checks rows {@code [row0, row0 + got.length / N)} of one rank's output against the reference
   * sum over ranks. Returns null when every element is within the bound, else a description of the
   * first element outside it. The bound: each rank's partial is rounded to BF16 and so is the sum
   * (2^-9 relative each), so 2^-8 of (sum of |partial| + |sum|), plus {@code productTerm} times the
   * sum of |product| over K and ranks (the tensor cores' accumulation), plus a tiny absolute term.
   */
  public static String check(
      GemmAllReduce.Shape s, Inputs[] in, int row0, short[] got, double productTerm) {
    int n = s.n(), k = s.k();
    int rows = got.length / n;
    float[][] wf = new float[in.length][];
    for (int r = 0; r < in.length; r++) {
      wf[r] = new float[n * k];
      for (int i = 0; i < wf[r].length; i++) wf[r][i] = e4m3(in[r].w()[i]);
    }
    float[] arow = new float[k];
    double[] ref = new double[n];
    double[] mag = new double[n];
    double[] products = new double[n];
    for (int i = 0; i < rows; i++) {
      int m = row0 + i;
      java.util.Arrays.fill(ref, 0);
      java.util.Arrays.fill(mag, 0);
      java.util.Arrays.fill(products, 0);
      for (int r = 0; r < in.length; r++) {
        for (int q = 0; q < k; q++) arow[q] = e4m3(in[r].a()[m * k + q]);
        for (int j = 0; j < n; j++) {
          double acc = 0;
          double abs = 0;
          int base = j * k;
          for (int q = 0; q < k; q++) {
            double x = arow[q] * wf[r][base + q];
            acc += x;
            abs += Math.abs(x);
          }
          double scale = in[r].sa()[m] * in[r].sw()[j];
          double p = acc * scale;
          ref[j] += p;
          mag[j] += Math.abs(p);
          products[j] += abs * Math.abs(scale);
        }
      }
      for (int j = 0; j < n; j++) {
        double v = bf16(got[i * n + j]);
        double bound = Math.scalb(mag[j] + Math.abs(ref[j]), -8) + productTerm * products[j] + 1e-6;
        if (!(Math.abs(v - ref[j]) <= bound)) {
          return String.format(
              "out[%d][%d] = %s, reference %s (bound %.3g)", m, j, v, ref[j], bound);
        }
      }
    }
    return null;
  }
}
