package io.collscope.spool;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The program {@link SpoolDiskFullITCase} runs on a small tmpfs of its own: appends numbered
 * records until the filesystem is full (a real ENOSPC, mid-frame), drains what was acknowledged
 * (which deletes consumed segments and frees space), appends more, drains again, reopens the spool
 * and drains once more. Prints what it counted, one {@code key value} a line.
 */
public final class SpoolDiskFullChild {

  private SpoolDiskFullChild() {}

  /** Record {@code i}: its number and 600..3000 bytes of padding, so writes cross page ends. */
  static byte[] record(int i) {
    int pad = 600 + (i * 977) % 2400;
    ByteBuffer b = ByteBuffer.allocate(4 + pad);
    b.putInt(i);
    for (int k = 0; k < pad; k++) b.put((byte) (i + k));
    return b.array();
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    long maxBytes = 64L << 20; // far above the filesystem: the disk fills first, not the bound
    long segmentBytes = 16 << 10;
    List<Integer> acked = new ArrayList<>();
    List<Integer> delivered = new ArrayList<>();
    int appendErrors = 0;
    String firstError = "";
    int next = 0;
    SpoolLog log = SpoolLog.open(dir, maxBytes, segmentBytes);
    // 1. Fill the disk: append until ENOSPC, then a few more tries, which fail too.
    while (appendErrors < 5 && next < 100_000) {
      int i = next++;
      try {
        log.append(record(i));
        acked.add(i);
      } catch (IOException e) {
        if (appendErrors++ == 0) firstError = e.toString();
      }
    }
    // 2. Deliver what is there: consumed segments are deleted, which frees space.
    drain(log, delivered);
    // 3. Append more now that there is room, and deliver it.
    int errorsAfter = 0;
    for (int k = 0; k < 40; k++) {
      int i = next++;
      try {
        log.append(record(i));
        acked.add(i);
      } catch (IOException e) {
        errorsAfter++;
      }
    }
    drain(log, delivered);
    long tornWhileRunning = log.tornRecords();
    long pendingAtClose = log.pending();
    log.close();
    // 4. A restart finds nothing corrupt and nothing left to send.
    try (SpoolLog again = SpoolLog.open(dir, maxBytes, segmentBytes)) {
      drain(again, delivered);
      System.out.println("tornAfterReopen " + again.tornRecords());
    }
    Set<Integer> seen = new LinkedHashSet<>();
    int duplicated = 0;
    for (int i : delivered) if (!seen.add(i)) duplicated++;
    int lost = 0;
    for (int i : acked) if (!seen.contains(i)) lost++;
    boolean inOrder = true;
    for (int k = 1; k < delivered.size(); k++) {
      if (delivered.get(k) <= delivered.get(k - 1)) inOrder = false;
    }
    System.out.println("appendErrors " + appendErrors);
    System.out.println("firstError " + firstError);
    System.out.println("appendErrorsAfterSpaceFreed " + errorsAfter);
    System.out.println("acked " + acked.size());
    System.out.println("delivered " + delivered.size());
    System.out.println("lost " + lost);
    System.out.println("duplicated " + duplicated);
    System.out.println("inOrder " + inOrder);
    System.out.println("tornWhileRunning " + tornWhileRunning);
    System.out.println("pendingAtClose " + pendingAtClose);
  }

  /** Peeks and commits until a peek comes back empty; checks every record's bytes. */
  private static void drain(SpoolLog log, List<Integer> out) throws Exception {
    while (true) {
      SpoolLog.Batch b = log.peek(16, 0);
      if (b.records().isEmpty()) return;
      for (byte[] r : b.records()) {
        int i = ByteBuffer.wrap(r).getInt();
        if (!java.util.Arrays.equals(r, record(i))) throw new AssertionError("record " + i);
        out.add(i);
      }
      log.commit(b);
    }
  }
}
