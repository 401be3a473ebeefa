package io.collscope.cuda;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * The TMA programs' tensor maps ({@code gemm_ar.cu}, {@code *_tma}): a 2-D map of an FP8 operand, A
 * [M][K] or W [N][K] row-major, whose box is one pipeline stage's tile, {@link GemmArLayout#BK}
 * bytes of K by {@link GemmArLayout#BM} rows, with the 64-byte swizzle — the shared-memory layout
 * the cp.async programs write by hand, so both main loops share the wgmma descriptors. JCuda 12.0.0
 * has no {@code cuTensorMapEncodeTiled}; JNA calls it in the driver library. The 128-byte map is
 * passed by value as a {@code __grid_constant__} kernel parameter.
 */
final class GemmArTensorMaps {
  private GemmArTensorMaps() {}

  /** sizeof(CUtensorMap). */
  static final int MAP_BYTES = 128;

  /** alignof(CUtensorMap): the encoder writes into memory aligned so. */
  private static final int ALIGN = 64;

  // cuda.h's enums (CUDA 12)
  static final int DATA_TYPE_UINT8 = 0;
  static final int INTERLEAVE_NONE = 0;
  static final int SWIZZLE_64B = 2;
  static final int L2_PROMOTION_256B = 3;
  static final int OOB_FILL_NONE = 0;

  /** The driver's encoder, bound through JNA. */
  interface Driver extends Library {
    int cuTensorMapEncodeTiled(
        Pointer tensorMap,
        int tensorDataType,
        int tensorRank,
        Pointer globalAddress,
        long[] globalDim,
        long[] globalStrides,
        int[] boxDim,
        int[] elementStrides,
        int interleave,
        int swizzle,
        int l2Promotion,
        int oobFill);
  }

  private static final class Holder {
    // libcuda.so.1: the versioned name every driver installs (the bare .so comes with dev packages)
    static final Driver DRIVER = Native.load("libcuda.so.1", Driver.class);
  }

  /**
   * The encoder's arguments for an operand of {@code rows} x {@code k} bytes at device address
   * {@code address}: dimensions innermost first (K, rows), the row stride, the box (one stage's
   * tile). Separate from the call so that a test can check them without a driver.
   */
  record Args(long address, long[] globalDim, long[] globalStrides, int[] boxDim) {}

  static Args operand(long address, long rows, long k) {
    if (address % 16 != 0) throw new IllegalArgumentException("address not 16-byte aligned");
    if (k % GemmArLayout.BK != 0 || rows % GemmArLayout.BM != 0) {
      throw new IllegalArgumentException(
          "a "
              + rows
              + " x "
              + k
              + " operand is not whole "
              + GemmArLayout.BM
              + " x "
              + GemmArLayout.BK
              + " tiles");
    }
    return new Args(
        address,
        new long[] {k, rows},
        new long[] {k}, // bytes between rows; the innermost stride is the element's, implied
        new int[] {GemmArLayout.BK, GemmArLayout.BM});
  }

  /** Encodes the map: 128 bytes to pass by value. */
  static byte[] encode(Args a) {
    try (Memory raw = new Memory(MAP_BYTES + ALIGN)) {
      Pointer map = raw.align(ALIGN);
      int rc =
          Holder.DRIVER.cuTensorMapEncodeTiled(
              map,
              DATA_TYPE_UINT8,
              2,
              new Pointer(a.address()),
              a.globalDim(),
              a.globalStrides(),
              a.boxDim(),
              new int[] {1, 1},
              INTERLEAVE_NONE,
              SWIZZLE_64B,
              L2_PROMOTION_256B,
              OOB_FILL_NONE);
      if (rc != 0) {
        throw new IllegalStateException(
            "cuTensorMapEncodeTiled failed with CUresult " + rc + " for " + describe(a));
      }
      return map.getByteArray(0, MAP_BYTES);
    }
  }

  static String describe(Args a) {
    return a.globalDim()[1]
        + " x "
        + a.globalDim()[0]
        + " bytes, box "
        + a.boxDim()[1]
        + " x "
        + a.boxDim()[0];
  }
}
