package io.collscope.flink.testing;

import io.collscope.emitter.SnapshotRecording;
import io.collscope.flink.source.RawRecord;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * A bounded source that replays recordings ({@code collscope emit --record}) into the job as the
 * Kafka source would deliver them: each frame's bytes exactly as recorded (so old recordings go
 * through the decoder's schema history), timestamped with the snapshot's event time. Several
 * recordings are merged by event time, as concurrent emitters would interleave in a topic.
 *
 * <p>Run it at parallelism 1: split over several readers the frames of one rank would overtake each
 * other, which a Kafka partition never does.
 */
public final class RecordingSource {

  private RecordingSource() {}

  public static Source<RawRecord, ?, ?> of(List<Path> recordings) throws IOException {
    List<Frame> frames = new ArrayList<>();
    for (Path file : recordings) {
      long offset = 0;
      for (byte[] value : SnapshotRecording.readFrames(file)) {
        long eventTime;
        try {
          eventTime = Snapshots.decode(value).getEventTime().toEpochMilli();
        } catch (DecodeException e) {
          throw new IOException(file + ": frame " + offset + " does not decode", e);
        }
        frames.add(new Frame(file.getFileName().toString(), offset++, eventTime, value));
      }
    }
    frames.sort(Comparator.comparingLong(Frame::eventTime)); // stable: a file's order is kept
    return new DataGeneratorSource<>(
        new Frames(frames), frames.size(), TypeInformation.of(RawRecord.class));
  }

  private record Frame(String file, long offset, long eventTime, byte[] value)
      implements java.io.Serializable {}

  private static final class Frames implements GeneratorFunction<Long, RawRecord> {
    private final ArrayList<Frame> frames;

    Frames(List<Frame> frames) {
      this.frames = new ArrayList<>(frames);
    }

    @Override
    public RawRecord map(Long index) {
      Frame f = frames.get(index.intValue());
      return new RawRecord(
          f.file(),
          0,
          f.offset(),
          f.eventTime(),
          f.file().getBytes(StandardCharsets.UTF_8),
          f.value());
    }
  }
}
