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
 *       checks every frame of the newest segment against its checksum, cuts the file at the first
 *       bad one and counts the frames lost ({@link #tornRecords}); a bad frame met while reading an
 *       older segment (a disk error) ends that segment, counted the same way.
 *   <li><b>Bound</b>: when the spool would pass {@code maxBytes}, whole oldest segments are dropped
 *       (the cursor moves past them) and their records counted ({@link #droppedRecords}): during a
 *       long outage the newest counters are worth more than the oldest, and the next snapshot's
 *       cumulative counters still cover the dropped interval.
 *   <li><b>One owner</b>: a lock file keeps a second process from using the same directory.
 * </ul>
 *
 * Appends are not fsync'd one by one ({@link #sync} does it): a snapshot is a cumulative counter
 * read, so losing the last ones to a power cut costs resolution, not totals. Thread-safe: one
 * appender and one reader may work at once.
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
    pending = countFrom(cursorSegment, cursorOffset);
  }

  /** Frames in a segment; in the newest, cuts the file at the first bad frame (a torn tail). */
  private long scan(long n, boolean newest) throws IOException {
    try (FileChannel ch =
        FileChannel.open(segment(n), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long pos = 0;
      long count = 0;
      long size = ch.size();
      while (pos < size) {
        int len = frameAt(ch, pos, size);
        if (len < 0) {
          // A torn or corrupt frame: nothing after it can be trusted to be framed right. In the
          // newest segment it is the append a crash cut short: cut it off so appends go on from a
          // frame boundary. In an older one (a disk error) reading skips the rest and counts it.
          if (newest) {
            tornRecords++;
            ch.truncate(pos);
          }
          break;
        }
        pos += HEADER + len;
        count++;
      }
      return count;
    }
  }

  /** The length of a good frame at {@code pos}, or -1 when it is short or fails its checksum. */
  private static int frameAt(FileChannel ch, long pos, long size) throws IOException {
    if (size - pos < HEADER) return -1;
    ByteBuffer h = ByteBuffer.allocate(HEADER);
    readFully(ch, h, pos);
    int len = h.getInt(0);
    int crc = h.getInt(4);
    if (len < 0 || len > MAX_RECORD || size - pos - HEADER < len) return -1;
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
    long n = 0;
    try (FileChannel ch = FileChannel.open(segment(seg), StandardOpenOption.READ)) {
      long pos = offset;
      long size = ch.size();
      while (pos < size) {
        int len = frameAt(ch, pos, size);
        if (len < 0) break;
        pos += HEADER + len;
        n++;
      }
    }
    return n;
  }

  /** Appends one record; drops the oldest segments first when the spool is full. */
  public synchronized void append(byte[] record) throws IOException {
    if (record.length > MAX_RECORD) {
      throw new IllegalArgumentException("spool: record of " + record.length + " bytes");
    }
    if (tail.size() >= segmentBytes) roll();
    ByteBuffer frame = ByteBuffer.allocate(HEADER + record.length);
    frame.putInt(record.length).putInt(crc(record)).put(record).flip();
    while (frame.hasRemaining()) tail.write(frame);
    segments.merge(tailNumber, 1L, Long::sum);
    totalBytes += HEADER + record.length;
    pending++;
    while (totalBytes > maxBytes && segments.size() > 1) dropOldest();
    notifyAll();
  }

  private void roll() throws IOException {
    tail.close();
    tailNumber++;
    segments.put(tailNumber, 0L);
    tail = openTail(tailNumber);
  }

  /**
   * Drops the oldest segment: the bound wins over the oldest records. Consumed segments are deleted
   * at commit, so the oldest is the one the cursor is in; what it held after the cursor is lost.
   */
  private void dropOldest() throws IOException {
    long n = segments.firstKey();
    long unread = countInSegment(n, n == cursorSegment ? cursorOffset : 0);
    segments.remove(n);
    droppedRecords += unread;
    pending -= unread;
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
   * waitMs} for one when there is none. Hand the batch's {@link Batch#end} to {@link #commit} once
   * they are delivered.
   */
  public Batch peek(int max, long waitMs) throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + waitMs;
    long seg;
    long off;
    synchronized (this) {
      while (pending == 0) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) return new Batch(List.of(), cursorSegment, cursorOffset);
        wait(left);
      }
      seg = cursorSegment;
      off = cursorOffset;
    }
    List<byte[]> out = new ArrayList<>();
    while (out.size() < max) {
      Path p = segment(seg);
      boolean hasNext;
      synchronized (this) {
        if (!segments.containsKey(seg)) break; // dropped under us: the next peek starts afresh
        hasNext = segments.higherKey(seg) != null;
      }
      long size;
      try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
        size = ch.size();
        while (out.size() < max && off < size) {
          int len = frameAt(ch, off, size);
          if (len < 0) {
            // Only a frame being written right now looks short; anything else is corruption.
            if (!hasNext) break;
            synchronized (this) {
              tornRecords++;
            }
            off = size;
            break;
          }
          ByteBuffer body = ByteBuffer.allocate(len);
          readFully(ch, body, off + HEADER);
          out.add(body.array());
          off += HEADER + len;
        }
      }
      if (off >= size && hasNext) {
        seg++;
        off = 0;
        continue;
      }
      break;
    }
    return new Batch(out, seg, off);
  }

  /** Records read up to (segment, offset), exclusive. */
  public record Batch(List<byte[]> records, long endSegment, long endOffset) {}

  /** Marks a peeked batch consumed: moves the cursor and deletes the segments it left. */
  public synchronized void commit(Batch b) throws IOException {
    if (b.records().isEmpty()) return;
    if (b.endSegment() < cursorSegment
        || (b.endSegment() == cursorSegment && b.endOffset() <= cursorOffset)) {
      return; // its segments were dropped meanwhile; the cursor is already past them
    }
    cursorSegment = b.endSegment();
    cursorOffset = b.endOffset();
    pending = Math.max(0, pending - b.records().size());
    writeCursor();
    while (segments.firstKey() < cursorSegment) {
      long n = segments.pollFirstEntry().getKey();
      totalBytes -= Files.size(segment(n));
      Files.deleteIfExists(segment(n));
    }
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

  /** Torn or corrupt frames skipped (a crash mid-append, a disk error). */
  public synchronized long tornRecords() {
    return tornRecords;
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
    Files.writeString(tmp, cursorSegment + " " + cursorOffset + "\n");
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
