package io.collscope.spool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SpoolLogTest {

  @TempDir Path dir;

  private static byte[] rec(int i) {
    // Records of varying length, so frame boundaries fall everywhere.
    return ("record-" + i + "-" + "x".repeat(i % 37)).getBytes(StandardCharsets.UTF_8);
  }

  private static List<String> drainAll(SpoolLog log) throws Exception {
    List<String> out = new ArrayList<>();
    while (true) {
      SpoolLog.Batch b = log.peek(7, 0);
      if (b.records().isEmpty()) return out;
      for (byte[] r : b.records()) out.add(new String(r, StandardCharsets.UTF_8));
      log.commit(b);
    }
  }

  private static List<String> expected(int from, int to) {
    List<String> l = new ArrayList<>();
    for (int i = from; i < to; i++) l.add(new String(rec(i), StandardCharsets.UTF_8));
    return l;
  }

  private long segments() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(SpoolLog.SUFFIX)).count();
    }
  }

  @Test
  void recordsComeBackInOrderAcrossSegmentsAndConsumedSegmentsAreDeleted() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      for (int i = 0; i < 200; i++) log.append(rec(i));
      assertThat(log.pending()).isEqualTo(200);
      assertThat(segments()).isGreaterThan(5);
      assertThat(drainAll(log)).isEqualTo(expected(0, 200));
      assertThat(log.pending()).isZero();
      assertThat(segments()).as("only the segment being appended to is left").isEqualTo(1);
      assertThat(log.droppedRecords()).isZero();
    }
  }

  @Test
  void aReopenedSpoolResumesAfterTheLastCommitAndKeepsAppendingInOrder() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      for (int i = 0; i < 50; i++) log.append(rec(i));
      SpoolLog.Batch b = log.peek(20, 0);
      log.commit(b);
      log.peek(10, 0); // read, never committed: must come again
    }
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      assertThat(log.pending()).isEqualTo(30);
      for (int i = 50; i < 60; i++) log.append(rec(i));
      assertThat(drainAll(log)).isEqualTo(expected(20, 60));
    }
  }

  @Test
  void aTornTailAfterACrashIsCutOffAndCounted() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      for (int i = 0; i < 10; i++) log.append(rec(i));
    }
    Path seg;
    try (Stream<Path> s = Files.list(dir)) {
      seg = s.filter(p -> p.toString().endsWith(SpoolLog.SUFFIX)).findFirst().orElseThrow();
    }
    // A crash mid-append: the last frame's header is there, half its body is not.
    long size = Files.size(seg);
    try (RandomAccessFile f = new RandomAccessFile(seg.toFile(), "rw")) {
      f.setLength(size - 5);
    }
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      assertThat(log.tornRecords()).isEqualTo(1);
      assertThat(log.pending()).isEqualTo(9);
      log.append(rec(10)); // appends go on from the cut, framed right
      List<String> want = expected(0, 9);
      want.addAll(expected(10, 11));
      assertThat(drainAll(log)).isEqualTo(want);
    }
  }

  @Test
  void aCorruptFrameFailsItsChecksum() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      for (int i = 0; i < 10; i++) log.append(rec(i));
    }
    Path seg;
    try (Stream<Path> s = Files.list(dir)) {
      seg = s.filter(p -> p.toString().endsWith(SpoolLog.SUFFIX)).findFirst().orElseThrow();
    }
    byte[] bytes = Files.readAllBytes(seg);
    bytes[bytes.length - 3] ^= 0x40; // one bit in the last record's body
    Files.write(seg, bytes);
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      assertThat(log.tornRecords()).isEqualTo(1);
      assertThat(drainAll(log)).isEqualTo(expected(0, 9));
    }
  }

  /** Flips one bit in the body of the frame of {@code record} in {@code seg}; returns nothing. */
  private static void corrupt(Path seg, byte[] record) throws IOException {
    byte[] bytes = Files.readAllBytes(seg);
    int at = indexOf(bytes, record);
    assertThat(at).as("record in %s", seg).isNotNegative();
    try (RandomAccessFile f = new RandomAccessFile(seg.toFile(), "rw")) {
      f.seek(at + 2);
      f.write(bytes[at + 2] ^ 0x40);
    }
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int k = 0; k < needle.length; k++) if (hay[i + k] != needle[k]) continue outer;
      return i;
    }
    return -1;
  }

  private List<Path> segmentFiles() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(SpoolLog.SUFFIX)).sorted().toList();
    }
  }

  @Test
  void aFrameCorruptedInTheNewestSegmentWhileRunningNeitherStallsReadingNorHidesLaterFrames()
      throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      for (int i = 0; i < 10; i++) log.append(rec(i));
      corrupt(segmentFiles().get(0), rec(4)); // a disk error under the running spool
      for (int i = 10; i < 13; i++) log.append(rec(i));
      List<String> want = expected(0, 4);
      want.addAll(expected(5, 13));
      assertThat(drainAll(log)).as("every frame but the corrupt one").isEqualTo(want);
      assertThat(log.tornRecords()).isEqualTo(1);
      assertThat(log.pending()).isZero();
    }
  }

  @Test
  void aFrameCorruptedInAnOlderSegmentSkipsOnlyItselfNotTheRestOfItsSegment() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      for (int i = 0; i < 40; i++) log.append(rec(i));
      List<Path> segs = segmentFiles();
      assertThat(segs.size()).isGreaterThan(2);
      corrupt(segs.get(0), rec(2)); // record 2 sits in the first segment, records after it too
      List<String> want = expected(0, 2);
      want.addAll(expected(3, 40));
      assertThat(drainAll(log)).isEqualTo(want);
      assertThat(log.tornRecords()).isEqualTo(1);
    }
  }

  @Test
  void openCountsACorruptFrameInAnOlderSegmentAndKeepsTheFramesAfterIt() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      for (int i = 0; i < 40; i++) log.append(rec(i));
    }
    corrupt(segmentFiles().get(0), rec(2));
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      assertThat(log.tornRecords()).as("what scan() dropped, counted").isEqualTo(1);
      assertThat(log.pending()).isEqualTo(39);
      List<String> want = expected(0, 2);
      want.addAll(expected(3, 40));
      assertThat(drainAll(log)).isEqualTo(want);
      assertThat(log.tornRecords()).as("counted once, however often read").isEqualTo(1);
    }
  }

  @Test
  void aFrameCorruptedInsideTheNewestSegmentBeforeARestartCostsOnlyItself() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      for (int i = 0; i < 10; i++) log.append(rec(i));
    }
    corrupt(segmentFiles().get(0), rec(4));
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 1 << 16)) {
      assertThat(log.tornRecords()).isEqualTo(1);
      List<String> want = expected(0, 4);
      want.addAll(expected(5, 10));
      assertThat(drainAll(log)).isEqualTo(want);
    }
  }

  @Test
  void aFullSpoolDropsItsOldestRecordsAndCountsThem() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 4096, 1024)) {
      for (int i = 0; i < 500; i++) log.append(rec(i));
      assertThat(log.bytes()).isLessThanOrEqualTo(4096);
      long dropped = log.droppedRecords();
      assertThat(dropped).isPositive();
      assertThat(log.pending()).isEqualTo(500 - dropped);
      // What is left is the newest, in order, with nothing missing in between.
      assertThat(drainAll(log)).isEqualTo(expected((int) dropped, 500));
    }
  }

  @Test
  void recordsBeingSentWhenTheBoundDropsTheirSegmentAreNotCountedAsDroppedOnceDelivered()
      throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 4096, 1024)) {
      for (int i = 0; i < 20; i++) log.append(rec(i));
      SpoolLog.Batch sending = log.peek(5, 0); // the sender holds these while the broker is slow
      for (int i = 20; i < 500; i++) log.append(rec(i));
      log.commit(sending); // acknowledged after all
      List<String> rest = drainAll(log);
      long delivered = sending.records().size() + rest.size();
      assertThat(delivered + log.droppedRecords()).as("delivered + dropped").isEqualTo(500);
      assertThat(log.pending()).isZero();
    }
  }

  @Test
  void recordsBeingSentWhenTheBoundDropsTheirSegmentCountAsDroppedWhenTheSenderGivesThemUp()
      throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 4096, 1024)) {
      for (int i = 0; i < 20; i++) log.append(rec(i));
      log.peek(5, 0); // the send fails: the sender peeks again instead of committing
      for (int i = 20; i < 500; i++) log.append(rec(i));
      List<String> delivered = drainAll(log);
      assertThat(delivered.size() + log.droppedRecords()).as("delivered + dropped").isEqualTo(500);
      assertThat(log.pending()).isZero();
    }
  }

  @Test
  void aSecondOwnerIsRefused() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      assertThatThrownBy(() -> SpoolLog.open(dir, 1 << 20, 512))
          .isInstanceOf(IOException.class)
          .hasMessageContaining("in use");
    }
  }

  @Test
  void peekWaitsForAnAppend() throws Exception {
    try (SpoolLog log = SpoolLog.open(dir, 1 << 20, 512)) {
      Thread t =
          new Thread(
              () -> {
                try {
                  Thread.sleep(100);
                  log.append(rec(1));
                } catch (Exception e) {
                  throw new RuntimeException(e);
                }
              });
      t.start();
      SpoolLog.Batch b = log.peek(10, 10_000);
      t.join();
      assertThat(b.records()).hasSize(1);
    }
  }
}
