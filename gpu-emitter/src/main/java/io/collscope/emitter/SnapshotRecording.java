package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import io.collscope.schema.DecodeException;
import io.collscope.schema.RecordedFrame;
import io.collscope.schema.Snapshots;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A recording of snapshots in a file, so a run on a GPU node can be analysed elsewhere: a sequence
 * of frames, each a big-endian u32 length then one Avro single-object {@code CounterSnapshot}. A
 * torn last frame (the recorder was killed mid-write) is ignored on reading; an undecodable frame
 * is an error naming its position.
 */
public final class SnapshotRecording {

  private SnapshotRecording() {}

  /** A sink that appends frames; {@link #flush()} forces them to disk. */
  public static final class Writer implements SnapshotSink {
    private final DataOutputStream out;
    private final java.io.FileOutputStream file;

    public Writer(Path path) {
      try {
        file = new java.io.FileOutputStream(path.toFile(), true);
        out = new DataOutputStream(new BufferedOutputStream(file));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot record to " + path, e);
      }
    }

    @Override
    public void send(CounterSnapshot s) {
      append(Snapshots.encode(s));
    }

    /**
     * Appends one snapshot already encoded as an Avro single-object {@code CounterSnapshot} (e.g.
     * the load generator's records, which are made as bytes).
     */
    public synchronized void append(byte[] b) {
      try {
        out.writeInt(b.length);
        out.write(b);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public synchronized void flush() {
      try {
        out.flush();
        file.getFD().sync();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public long failed() {
      return 0;
    }

    @Override
    public synchronized void close() {
      try {
        out.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Every complete frame of a recording, decoded, in order. */
  public static List<CounterSnapshot> read(Path path) throws IOException, DecodeException {
    List<CounterSnapshot> out = new ArrayList<>();
    long offset = 0;
    for (byte[] b : readFrames(path)) {
      try {
        out.add(Snapshots.decode(b));
      } catch (DecodeException e) {
        throw new DecodeException(
            e.reason(), path + ": frame at byte " + offset + ": " + e.getMessage(), e);
      }
      offset += 4 + b.length;
    }
    return out;
  }

  /**
   * The snapshots of several recordings merged by event time, as their emitters' records would
   * interleave in a topic: one file per rank's process (one process per GPU records only its own
   * rank), or recordings of several communicators made at the same time. Within a file the order is
   * kept.
   */
  public static List<CounterSnapshot> readAll(List<Path> paths)
      throws IOException, DecodeException {
    List<CounterSnapshot> out = new ArrayList<>();
    for (Path p : paths) out.addAll(read(p));
    out.sort(java.util.Comparator.comparing(CounterSnapshot::getEventTime)); // stable
    return out;
  }

  /**
   * Every complete frame of a recording exactly as recorded (the schema version of the recorder),
   * in order; a torn last frame is left out.
   */
  public static List<byte[]> readFrames(Path path) throws IOException {
    List<byte[]> out = new ArrayList<>();
    try (DataInputStream in =
        new DataInputStream(
            new BufferedInputStream(Files.newInputStream(path, StandardOpenOption.READ)))) {
      long offset = 0;
      while (true) {
        int len;
        try {
          len = in.readInt();
        } catch (EOFException end) {
          return out;
        }
        if (len <= 0 || len > 1 << 20) {
          throw new IOException(
              path + ": frame at byte " + offset + " has impossible length " + len);
        }
        byte[] b = new byte[len];
        try {
          in.readFully(b);
        } catch (EOFException torn) {
          return out; // torn tail
        }
        out.add(b);
        offset += 4 + len;
      }
    }
  }

  /**
   * Every frame of the given recordings, merged by event time (stable: a file's own order is kept),
   * as concurrent emitters would interleave in a topic.
   */
  public static List<RecordedFrame> frames(List<Path> files) throws IOException {
    List<RecordedFrame> frames = new ArrayList<>();
    for (Path file : files) {
      long offset = 0;
      for (byte[] value : readFrames(file)) {
        long eventTime;
        try {
          eventTime = Snapshots.decode(value).getEventTime().toEpochMilli();
        } catch (DecodeException e) {
          throw new IOException(file + ": frame " + offset + " does not decode", e);
        }
        frames.add(new RecordedFrame(file.getFileName().toString(), offset++, eventTime, value));
      }
    }
    frames.sort(Comparator.comparingLong(RecordedFrame::eventTimeMs));
    return frames;
  }
}
