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
