package io.collscope.flink.window;

import java.io.ByteArrayOutputStream;

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

  /** The arrays, encoded one after the other. */
  static byte[] encode(long[]... arrays) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(64);
    for (long[] a : arrays) {
      writeVarint(out, a.length);
      for (int from = 0; from < a.length; from += BLOCK) {
        int to = Math.min(a.length, from + BLOCK);
        int mask = 0;
        for (int i = from; i < to; i++) if (a[i] != 0) mask |= 1 << (i - from);
        writeVarint(out, mask);
        for (int i = from; i < to; i++) if (a[i] != 0) writeVarint(out, zigzag(a[i]));
      }
    }
    return out.toByteArray();
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

  private static void writeVarint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
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
