package io.collscope.cuda;

/** Element types the GPU all-reduce supports (fp32 accumulation for both). */
public enum DType {
  F32(4, "f32"),
  BF16(2, "bf16");

  public final int bytes;
  public final String suffix;

  DType(int bytes, String suffix) {
    this.bytes = bytes;
    this.suffix = suffix;
  }

  /** bf16 bits of a float that bf16 holds exactly (the test pattern's small integers). */
  static short toBf16(float f) {
    return (short) (Float.floatToRawIntBits(f) >>> 16);
  }

  static float fromBf16(short b) {
    return Float.intBitsToFloat((b & 0xffff) << 16);
  }
}
