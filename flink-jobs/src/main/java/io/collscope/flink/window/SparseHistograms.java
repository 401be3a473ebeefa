package io.collscope.flink.window;

import io.collscope.model.RankTotals;
import java.io.ByteArrayOutputStream;

/**
 * The listed peers' lateness histograms of a compact window accumulator, as the state backend keeps
 * them: per peer a varint bit mask of its non-empty buckets, then a varint count for each of them.
 * A 2 s window of a typical peer fills two to four of the {@link RankTotals#LATE_BUCKETS} buckets:
 * 5–10 bytes instead of 128 (16 longs). Lossless; the window's p99s are computed from the decoded
 * counts exactly as before.
 */
final class SparseHistograms {

  private static final int B = RankTotals.LATE_BUCKETS;

  private SparseHistograms() {}

  /** {@code peers} histograms of {@link #B} buckets each, from {@code hist}, encoded. */
  static byte[] encode(long[] hist, int peers) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(peers * 6);
    for (int p = 0; p < peers; p++) {
      int mask = 0;
      for (int b = 0; b < B; b++) if (hist[p * B + b] != 0) mask |= 1 << b;
      writeVarint(out, mask);
      for (int b = 0; b < B; b++) if ((mask & (1 << b)) != 0) writeVarint(out, hist[p * B + b]);
    }
    return out.toByteArray();
  }

  /** The inverse of {@link #encode}: {@code peers} × {@link #B} counts. */
  static long[] decode(byte[] bytes, int peers) {
    long[] hist = new long[peers * B];
    int[] at = {0};
    for (int p = 0; p < peers; p++) {
      int mask = (int) readVarint(bytes, at);
      for (int b = 0; b < B; b++)
        if ((mask & (1 << b)) != 0) hist[p * B + b] = readVarint(bytes, at);
    }
    if (at[0] != bytes.length) {
      throw new IllegalStateException(
          "sparse histograms: "
              + bytes.length
              + " bytes, "
              + at[0]
              + " read for "
              + peers
              + " peers");
    }
    return hist;
  }

  private static void writeVarint(ByteArrayOutputStream out, long v) {
    if (v < 0) throw new IllegalArgumentException("negative histogram count " + v);
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
