package io.collscope.spool;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * A bounded, crash-safe FIFO of byte records on disk: what the emitter keeps while the broker is
 * down or slow, drained in order when it returns. The shape of Vector's disk buffer and the
 * OpenTelemetry Collector's persistent queue, small enough to read in one sitting:
 *
 * <ul>
 *   <li><b>Segments</b> {@code 00000000000000000001.seg}, ... each a run of frames {@code [int
 *       length][int crc32c][length bytes]}; a new segment starts when the current one passes {@code
 *       segmentBytes}. Appends go to the newest, reads come from the oldest.
 *   <li><b>Cursor</b> ({@code cursor}: segment number and byte offset of the first unconsumed
 *       frame), replaced atomically on {@link #commit}; fully consumed segments are deleted. After
 *       a crash the records after the last commit are read again: at least once, and the consumer
 *       of the topic drops what it has seen (the job keys snapshots by rank, boot and sequence).
 *   <li><b>Torn tail</b>: a crash mid-append leaves a short or corrupt last frame. {@link #open}
 *       checks every frame against its checksum and cuts the newest segment after its last good
 *       frame, counting the loss ({@link #tornRecords}).
 *   <li><b>Write errors</b>: an append that fails part-way (a full disk, a file-size limit) cuts
 *       its half-written frame back off before it throws, so the segment ends on a frame boundary
 *       and later appends are readable; nothing acknowledged before it is touched.
 *   <li><b>Corruption</b> inside a segment (a disk error, a bit flip): readers skip to the next
 *       frame whose length and checksum hold and count the stretch once ({@link #tornRecords},
 *       {@link #tornBytes}); the good frames after it are read, never dropped with it. The tail
 *       segment is read only up to its last complete append, so a frame being written is never
 *       mistaken for corruption and a reader never waits on one.
 *   <li><b>Bound</b>: when the spool would pass {@code maxBytes}, whole oldest segments are dropped
 *       (the cursor moves past them) and their records counted ({@link #droppedRecords}): during a
 *       long outage the newest counters are worth more than the oldest, and the next snapshot's
 *       cumulative counters still cover the dropped interval.
 *   <li><b>One owner</b>: a lock file keeps a second process from using the same directory.
 * </ul>
 *
 * Appends are not fsync'd one by one ({@link #sync} does it): a snapshot is a cumulative counter
 * read, so losing the last ones to a power cut costs resolution, not totals. Thread-safe: one
 * appender and one reader may work at once. A peek holds the lock while it reads (at most one
 * batch, from the page cache as a rule), so the bound can never drop a segment under it and the
 * dropped count stays exact; records peeked and not yet committed count as dropped only once the
 * reader gives them up (its next peek).
 *
 * <p>Hand-written rather than a library: Tape 2 (Square's QueueFile) is a beta single file without
 * per-record checksums, Chronicle Queue needs JVM module opens and memory-maps gigabytes; neither
 * counts a torn tail or bounds itself by dropping the oldest.
 */
public final class SpoolLog implements AutoCloseable {

  static final String SUFFIX = ".seg";
  static final String CURSOR = "cursor";
  static final int HEADER = 8;

  /** No single record may be larger: a length beyond it is read as corruption. */
  public static final int MAX_RECORD = 64 << 20;

  private final Path dir;
  private final long maxBytes;
  private final long segmentBytes;
  private final FileChannel lockChannel;
  private final FileLock lock;

  /** Segment number → its record count (appended or found on open). Guarded by this. */
  private final TreeMap<Long, Long> segments = new TreeMap<>();

  private FileChannel tail;
  private long tailNumber;
  private long totalBytes;
  private long pending;
  private long droppedRecords;
  private long tornRecords;
  private long tornBytes;

  /**
   * The batch the reader peeked and has not committed (one reader): where it ends, and how many of
   * its records sit in segments the bound dropped since. Guarded by this.
   */
  private boolean peeked;

  private long peekEndSegment;
  private long peekEndOffset;
  private long inFlightDropped;

  /** End of the last complete frame in the tail segment: readers stop there. Guarded by this. */
  private long tailEnd;

  /**
   * Corrupt stretches found, segment → (start → end): every reader skips them, and each is counted
   * once however often it is read over. Guarded by this.
   */
  private final java.util.Map<Long, TreeMap<Long, Long>> corrupt = new java.util.HashMap<>();

  /** Read position: segment and offset; advanced by {@link #commit}. */
  private long cursorSegment;

  private long cursorOffset;

  private SpoolLog(
      Path dir, long maxBytes, long segmentBytes, FileChannel lockChannel, FileLock lock) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    this.segmentBytes = segmentBytes;
    this.lockChannel = lockChannel;
    this.lock = lock;
  }

  /**
   * Opens (creating if needed) the spool in {@code dir}, recovering what a previous process left:
   * its unconsumed records come first.
   *
   * @throws IOException when the directory is unusable or another process owns it
   */
  public static SpoolLog open(Path dir, long maxBytes, long segmentBytes) throws IOException {
    if (segmentBytes <= HEADER || maxBytes < 2 * segmentBytes) {
      throw new IllegalArgumentException(
          "spool: need maxBytes >= 2 x segmentBytes > 8, got " + maxBytes + ", " + segmentBytes);
    }
    Files.createDirectories(dir);
    FileChannel lc =
        FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    FileLock lock;
    try {
      lock = lc.tryLock();
    } catch (OverlappingFileLockException e) {
      lock = null;
    }
    if (lock == null) {
      lc.close();
      throw new IOException("spool " + dir + " is in use by another process");
    }
    SpoolLog log = new SpoolLog(dir, maxBytes, segmentBytes, lc, lock);
    try {
      log.recover();
    } catch (IOException | RuntimeException e) {
      log.close();
      throw e;
    }
    return log;
  }

  private void recover() throws IOException {
    List<Long> numbers = new ArrayList<>();
    try (Stream<Path> s = Files.list(dir)) {
      s.map(p -> p.getFileName().toString())
          .filter(n -> n.endsWith(SUFFIX))
          .forEach(n -> numbers.add(Long.parseLong(n.substring(0, n.length() - SUFFIX.length()))));
    }
    numbers.sort(null);
    long[] cursor = readCursor();
    for (long n : numbers) {
      if (n < cursor[0]) {
        Files.deleteIfExists(segment(n)); // consumed; its deletion did not happen before the crash
        continue;
      }
      boolean newest = n == numbers.get(numbers.size() - 1);
      long count = scan(n, newest);
      segments.put(n, count);
      totalBytes += Files.size(segment(n));
    }
    if (segments.isEmpty()) {
      cursorSegment = Math.max(cursor[0], 1);
      cursorOffset = 0;
      tailNumber = cursorSegment;
      segments.put(tailNumber, 0L);
    } else {
      cursorSegment = Math.max(cursor[0], segments.firstKey());
      cursorOffset = cursorSegment == cursor[0] ? cursor[1] : 0;
      tailNumber = segments.lastKey();
    }
    tail = openTail(tailNumber);
    tailEnd = tail.size();
    pending = countFrom(cursorSegment, cursorOffset);
  }

  /**
   * Good frames in a segment. Corrupt stretches are skipped and counted; in the newest segment a
   * bad end with no good frame after it is the append a crash cut short: the file is cut there, so
   * appends go on from a frame boundary.
   */
  private long scan(long n, boolean newest) throws IOException {
    try (FileChannel ch =
        FileChannel.open(segment(n), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long size = ch.size();
      long[] count = {0};
      walk(ch, n, 0, size, (pos, len) -> count[0]++);
      TreeMap<Long, Long> bad = corrupt.get(n);
      if (newest && bad != null && bad.lastEntry().getValue() == size) {
        ch.truncate(bad.lastKey()); // counted by walk, like every corrupt stretch
        bad.pollLastEntry();
        if (bad.isEmpty()) corrupt.remove(n);
      }
      return count[0];
    }
  }

  /** A good frame at {@code pos}, given its length. */
  private interface FrameVisitor {
    void frame(long pos, int len) throws IOException;
  }

  /**
   * Visits the good frames of segment {@code n} in [{@code from}, {@code end}), skipping corrupt
   * stretches (a new one is recorded and counted); returns {@code end}.
   */
  private long walk(FileChannel ch, long n, long from, long end, FrameVisitor v)
      throws IOException {
    long pos = from;
    while (pos < end) {
      int len = frameAt(ch, pos, end);
      if (len < 0) {
        pos = skipCorrupt(ch, n, pos, end);
        continue;
      }
      v.frame(pos, len);
      pos += HEADER + len;
    }
    return end;
  }

  /**
   * The end of the corrupt stretch that starts at {@code pos}: the next offset where a frame's
   * length and checksum hold, or {@code end}. A stretch seen for the first time is recorded and
   * counted. (A false match needs a plausible length and a CRC-32C collision: about 2^-32 per
   * offset.)
   */
  private long skipCorrupt(FileChannel ch, long n, long pos, long end) throws IOException {
    synchronized (this) {
      TreeMap<Long, Long> known = corrupt.get(n);
      Long knownEnd = known == null ? null : known.get(pos);
      if (knownEnd != null) return Math.min(knownEnd, end);
    }
    ByteBuffer rest = ByteBuffer.allocate(Math.toIntExact(end - pos));
    readFully(ch, rest, pos);
    byte[] b = rest.array();
    long stretchEnd = end;
    for (int q = 1; q + HEADER <= b.length; q++) {
      int len = ByteBuffer.wrap(b, q, HEADER).getInt();
      if (len < 1 || len > b.length - q - HEADER) continue;
      CRC32C c = new CRC32C();
      c.update(b, q + HEADER, len);
      if ((int) c.getValue() == ByteBuffer.wrap(b, q + 4, 4).getInt()) {
        stretchEnd = pos + q;
        break;
      }
    }
    synchronized (this) {
      if (corrupt.computeIfAbsent(n, k -> new TreeMap<>()).putIfAbsent(pos, stretchEnd) == null) {
        tornRecords++;
        tornBytes += stretchEnd - pos;
      }
    }
    return stretchEnd;
  }

  /** The length of a good frame at {@code pos}, or -1 when it is short or fails its checksum. */
  private static int frameAt(FileChannel ch, long pos, long size) throws IOException {
    if (size - pos < HEADER) return -1;
    ByteBuffer h = ByteBuffer.allocate(HEADER);
    readFully(ch, h, pos);
    int len = h.getInt(0);
    int crc = h.getInt(4);
    // Length 0 is never appended: a zero-filled stretch (what some filesystems leave after a crash)
    // would otherwise read as empty records whose checksum, 0, holds.
    if (len < 1 || len > MAX_RECORD || size - pos - HEADER < len) return -1;
    ByteBuffer body = ByteBuffer.allocate(len);
    readFully(ch, body, pos + HEADER);
    return crc(body.array()) == crc ? len : -1;
  }

  /** Records from (segment, offset) to the end of the spool. */
  private long countFrom(long seg, long offset) throws IOException {
    long n = 0;
    for (var e : segments.tailMap(seg, true).entrySet()) {
      n += e.getKey() == seg && offset > 0 ? countInSegment(seg, offset) : e.getValue();
    }
    return n;
  }

  /** Good frames of one segment from {@code offset} on. */
  private long countInSegment(long seg, long offset) throws IOException {
    long[] n = {0};
    try (FileChannel ch = FileChannel.open(segment(seg), StandardOpenOption.READ)) {
      long end = seg == tailNumber ? Math.min(tailEnd, ch.size()) : ch.size();
      walk(ch, seg, offset, end, (pos, len) -> n[0]++);
    }
    return n[0];
  }

  /** Appends one record; drops the oldest segments first when the spool is full. */
  public synchronized void append(byte[] record) throws IOException {
    if (record.length > MAX_RECORD || record.length == 0) {
      throw new IllegalArgumentException("spool: record of " + record.length + " bytes");
    }
    if (tailEnd >= segmentBytes) roll();
    ByteBuffer frame = ByteBuffer.allocate(HEADER + record.length);
    frame.putInt(record.length).putInt(crc(record)).put(record).flip();
    long start = tailEnd;
    try {
      while (frame.hasRemaining()) tail.write(frame, start + frame.position());
    } catch (IOException e) {
      cutBack(start, e);
      throw e;
    }
    tailEnd = start + frame.limit();
    segments.merge(tailNumber, 1L, Long::sum);
    totalBytes += HEADER + record.length;
    pending++;
    while (totalBytes > maxBytes && segments.size() > 1) dropOldest();
    notifyAll();
  }

  /**
   * After a failed append: cuts the tail back to {@code start}, its last frame boundary, so the
   * half-written frame neither hides the appends after it nor reads as corruption. Should the cut
   * fail too, the stretch is recorded as skipped (not counted: nothing acknowledged is in it) and
   * the next append starts a new segment.
   */
  private void cutBack(long start, IOException cause) {
    try {
      tail.truncate(start);
    } catch (IOException e) {
      cause.addSuppressed(e);
      try {
        corrupt.computeIfAbsent(tailNumber, k -> new TreeMap<>()).put(start, tail.size());
      } catch (IOException ignored) {
        corrupt.computeIfAbsent(tailNumber, k -> new TreeMap<>()).put(start, Long.MAX_VALUE);
      }
      tailEnd = segmentBytes; // roll on the next append
    }
  }

  private void roll() throws IOException {
    tail.close();
    tailNumber++;
    segments.put(tailNumber, 0L);
    tail = openTail(tailNumber);
    tailEnd = 0;
  }

  /**
   * Drops the oldest segment: the bound wins over the oldest records. Consumed segments are deleted
   * at commit, so the oldest is the one the cursor is in; what it held after the cursor is lost.
   */
  private void dropOldest() throws IOException {
    long n = segments.firstKey();
    long from = n == cursorSegment ? cursorOffset : 0;
    long unread = countInSegment(n, from);
    // Records the reader has peeked and is sending are not lost yet: they count as dropped only if
    // the reader gives the batch up (its next peek), not if it commits it.
    long inFlight = 0;
    if (peeked && peekEndSegment > n) inFlight = unread;
    else if (peeked && peekEndSegment == n) inFlight = unread - countInSegment(n, peekEndOffset);
    segments.remove(n);
    corrupt.remove(n);
    droppedRecords += unread - inFlight;
    inFlightDropped += inFlight;
    pending -= unread - inFlight;
    totalBytes -= Files.size(segment(n));
    Files.deleteIfExists(segment(n));
    if (cursorSegment <= n) {
      cursorSegment = segments.firstKey();
      cursorOffset = 0;
      writeCursor();
    }
  }

  /**
   * Up to {@code max} records from the read position on, without consuming them; waits up to {@code
   * waitMs} for one when there is none. Hand the batch to {@link #commit} once they are delivered;
   * the next peek gives up a batch that was not committed (it is read again from the cursor).
   */
  public synchronized Batch peek(int max, long waitMs) throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + waitMs;
    long seg;
    long off;
    synchronized (this) {
      abandonPeeked();
      while (pending == 0) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) return new Batch(List.of(), cursorSegment, cursorOffset);
        wait(left);
      }
      seg = cursorSegment;
      off = cursorOffset;
    }
    List<byte[]> out = new ArrayList<>();
    long tornBefore = tornRecords();
    while (out.size() < max) {
      boolean hasNext;
      long limit;
      synchronized (this) {
        if (!segments.containsKey(seg)) break; // dropped under us: the next peek starts afresh
        hasNext = segments.higherKey(seg) != null;
        // The tail is read up to its last complete append: a frame being written is not there yet.
        limit = seg == tailNumber ? tailEnd : Long.MAX_VALUE;
      }
      long end;
      try (FileChannel ch = FileChannel.open(segment(seg), StandardOpenOption.READ)) {
        end = Math.min(limit, ch.size());
        while (out.size() < max && off < end) {
          int len = frameAt(ch, off, end);
          if (len < 0) {
            off = skipCorrupt(ch, seg, off, end); // corruption: skipped, counted, never waited on
            continue;
          }
          ByteBuffer body = ByteBuffer.allocate(len);
          readFully(ch, body, off + HEADER);
          out.add(body.array());
          off += HEADER + len;
        }
      }
      if (off >= end && hasNext) {
        seg++;
        off = 0;
        continue;
      }
      break;
    }
    if (tornRecords() != tornBefore) recount(); // frames lost to the new stretch leave pending
    synchronized (this) {
      peeked = !out.isEmpty();
      peekEndSegment = seg;
      peekEndOffset = off;
    }
    return new Batch(out, seg, off);
  }

  /**
   * A new peek gives up the batch peeked before and not committed: what of it the bound dropped
   * meanwhile is lost now, counted.
   */
  private void abandonPeeked() {
    droppedRecords += inFlightDropped;
    pending -= inFlightDropped;
    inFlightDropped = 0;
    peeked = false;
  }

  /** Recounts every segment's frames and the pending ones, after corruption turned up. */
  private synchronized void recount() throws IOException {
    for (var e : segments.entrySet()) e.setValue(countInSegment(e.getKey(), 0));
    pending = countFrom(cursorSegment, cursorOffset);
  }

  /** Records read up to (segment, offset), exclusive. */
  public record Batch(List<byte[]> records, long endSegment, long endOffset) {}

  /** Marks a peeked batch consumed: moves the cursor and deletes the segments it left. */
  public synchronized void commit(Batch b) throws IOException {
    if (b.records().isEmpty()) return;
    // Delivered: records of it in segments the bound dropped meanwhile were kept out of the dropped
    // count (in flight) and are still pending.
    pending = Math.max(0, pending - b.records().size());
    inFlightDropped = 0;
    peeked = false;
    if (b.endSegment() < cursorSegment
        || (b.endSegment() == cursorSegment && b.endOffset() <= cursorOffset)) {
      return; // its segments were dropped meanwhile; the cursor is already past them
    }
    cursorSegment = b.endSegment();
    cursorOffset = b.endOffset();
    // Consumed segments go before the cursor is written: on a full disk the deletion is what makes
    // room for the cursor file. A crash in between leaves the old cursor naming a deleted segment;
    // open() then starts at the oldest segment left: a resend (at least once), never a loss.
    while (segments.firstKey() < cursorSegment) {
      long n = segments.pollFirstEntry().getKey();
      totalBytes -= Files.size(segment(n));
      Files.deleteIfExists(segment(n));
      corrupt.remove(n);
    }
    writeCursor();
  }

  /** Forces appended records to disk. */
  public synchronized void sync() throws IOException {
    tail.force(false);
  }

  /** Records appended and not yet committed. */
  public synchronized long pending() {
    return pending;
  }

  /** Records dropped unread because the spool was full. */
  public synchronized long droppedRecords() {
    return droppedRecords;
  }

  /**
   * Torn or corrupt stretches skipped (a crash mid-append, a disk error), each at least one frame.
   */
  public synchronized long tornRecords() {
    return tornRecords;
  }

  /** Bytes of the torn or corrupt stretches skipped. */
  public synchronized long tornBytes() {
    return tornBytes;
  }

  public synchronized long bytes() {
    return totalBytes;
  }

  public Path dir() {
    return dir;
  }

  @Override
  public synchronized void close() throws IOException {
    try {
      if (tail != null) {
        tail.force(false);
        tail.close();
      }
    } finally {
      try {
        lock.release();
      } finally {
        lockChannel.close();
      }
    }
  }

  private FileChannel openTail(long n) throws IOException {
    FileChannel ch =
        FileChannel.open(
            segment(n),
            StandardOpenOption.CREATE,
            StandardOpenOption.WRITE,
            StandardOpenOption.READ);
    ch.position(ch.size());
    return ch;
  }

  private Path segment(long n) {
    return dir.resolve(String.format("%020d%s", n, SUFFIX));
  }

  private long[] readCursor() throws IOException {
    Path c = dir.resolve(CURSOR);
    if (!Files.exists(c)) return new long[] {0, 0};
    String[] f = Files.readString(c).trim().split(" ");
    try {
      return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])};
    } catch (RuntimeException e) {
      // A cursor that cannot be read: start from the oldest segment, re-sending rather than losing.
      return new long[] {0, 0};
    }
  }

  private void writeCursor() throws IOException {
    Path tmp = dir.resolve(CURSOR + ".tmp");
    try {
      Files.writeString(tmp, cursorSegment + " " + cursorOffset + "\n");
    } catch (IOException e) {
      Files.deleteIfExists(tmp); // a half-written file holds space a full disk needs
      throw e;
    }
    try {
      Files.move(
          tmp,
          dir.resolve(CURSOR),
          StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(tmp, dir.resolve(CURSOR), StandardCopyOption.REPLACE_EXISTING);
    }
  }

  private static void readFully(FileChannel ch, ByteBuffer b, long pos) throws IOException {
    while (b.hasRemaining()) {
      int n = ch.read(b, pos + b.position());
      if (n < 0) throw new IOException("unexpected end of spool segment");
    }
  }

  static int crc(byte[] b) {
    CRC32C c = new CRC32C();
    c.update(b, 0, b.length);
    return (int) c.getValue();
  }
}
