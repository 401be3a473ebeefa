package io.collscope.flink.window;

/**
 * Count arrays as a compact window accumulator keeps them between deltas: each array as its length,
 * then per block of {@link #BLOCK} entries a bit mask of the non-zero ones and their values, all
 * varints (zigzag: a count never goes below zero, but nothing is lost if one did). The counts of a
 * 2 s window are mostly zeros or small — a latency histogram of 40 buckets fills one or two, a
 * peer's lateness histogram of 16 two to four — so 16 listed peers' histograms, their arrived-last
 * counts, the others' histogram and the latency histogram take about 150 bytes instead of 900.
 * Lossless.
 */
final class SparseCounts {

  /** Entries per bit mask: a peer's lateness histogram ({@code RankTotals.LATE_BUCKETS}). */
  static final int BLOCK = 16;

  private SparseCounts() {}

  /**
   * The arrays, encoded one after the other. Two passes, the size first, into one array: the
   * aggregate packs its accumulator after every delta, and writing byte by byte through a
   * ByteArrayOutputStream (synchronized, bounds-checked per byte) was a fifth of the job's task
   * time in a profile (docs/SCALE.md).
   */
  static byte[] encode(long[]... arrays) {
    int size = 0;
    for (long[] a : arrays) {
      size += varintSize(a.length);
      for (int from = 0; from < a.length; from += BLOCK) {
        int to = Math.min(a.length, from + BLOCK);
        size += varintSize(mask(a, from, to));
        for (int i = from; i < to; i++) if (a[i] != 0) size += varintSize(zigzag(a[i]));
      }
    }
    byte[] out = new byte[size];
    int at = 0;
    for (long[] a : arrays) {
      at = writeVarint(out, at, a.length);
      for (int from = 0; from < a.length; from += BLOCK) {
        int to = Math.min(a.length, from + BLOCK);
        at = writeVarint(out, at, mask(a, from, to));
        for (int i = from; i < to; i++) if (a[i] != 0) at = writeVarint(out, at, zigzag(a[i]));
      }
    }
    return out;
  }

  /** Bit i − from set where a[i] is not zero, for i in [from, to). */
  private static int mask(long[] a, int from, int to) {
    int mask = 0;
    for (int i = from; i < to; i++) if (a[i] != 0) mask |= 1 << (i - from);
    return mask;
  }

  /** The inverse of {@link #encode}: {@code count} arrays. */
  static long[][] decode(byte[] bytes, int count) {
    long[][] arrays = new long[count][];
    int[] at = {0};
    for (int k = 0; k < count; k++) {
      long[] a = new long[(int) readVarint(bytes, at)];
      for (int from = 0; from < a.length; from += BLOCK) {
        int mask = (int) readVarint(bytes, at);
        for (int i = from; i < Math.min(a.length, from + BLOCK); i++) {
          if ((mask & (1 << (i - from))) != 0) a[i] = unzigzag(readVarint(bytes, at));
        }
      }
      arrays[k] = a;
    }
    if (at[0] != bytes.length) {
      throw new IllegalStateException(
          "sparse counts: " + bytes.length + " bytes, " + at[0] + " read for " + count + " arrays");
    }
    return arrays;
  }

  private static long zigzag(long v) {
    return (v << 1) ^ (v >> 63);
  }

  private static long unzigzag(long v) {
    return (v >>> 1) ^ -(v & 1);
  }

  /** Bytes of v as a varint: 1 for 0..127, 10 for the largest. */
  static int varintSize(long v) {
    return v == 0 ? 1 : (63 - Long.numberOfLeadingZeros(v)) / 7 + 1;
  }

  /** Writes v at {@code at}; returns the index after it. */
  private static int writeVarint(byte[] out, int at, long v) {
    while ((v & ~0x7FL) != 0) {
      out[at++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out[at++] = (byte) v;
    return at;
  }

  private static long readVarint(byte[] in, int[] at) {
    long v = 0;
    for (int shift = 0; ; shift += 7) {
      byte b = in[at[0]++];
      v |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
  }
}
