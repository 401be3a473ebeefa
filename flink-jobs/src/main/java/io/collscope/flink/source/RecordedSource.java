package io.collscope.flink.source;

import io.collscope.schema.RecordedFrame;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * A bounded source of recorded snapshots ({@code collscope emit --record}), delivered into the job
 * as the Kafka source would deliver them: each frame's bytes exactly as recorded, timestamped with
 * the snapshot's event time, in the order given (merge recordings by event time first, as
 * concurrent emitters interleave in a topic). Event time is the recording's own, so a replay runs
 * as fast as the job can go.
 *
 * <p>Run it at parallelism 1: split over several readers the frames of one rank would overtake each
 * other, which a Kafka partition never does.
 */
public final class RecordedSource {

  private RecordedSource() {}

  public static Source<RawRecord, ?, ?> of(List<RecordedFrame> frames) {
    return new DataGeneratorSource<>(
        new Frames(frames), frames.size(), TypeInformation.of(RawRecord.class));
  }

  private static final class Frames implements GeneratorFunction<Long, RawRecord> {
    private final ArrayList<RecordedFrame> frames;

    Frames(List<RecordedFrame> frames) {
      this.frames = new ArrayList<>(frames);
    }

    @Override
    public RawRecord map(Long index) {
      return record(frames.get(index.intValue()));
    }
  }

  /** A recorded frame as the Kafka source would deliver it. */
  public static RawRecord record(RecordedFrame f) {
    return new RawRecord(
        f.origin(),
        0,
        f.offset(),
        f.eventTimeMs(),
        f.origin().getBytes(StandardCharsets.UTF_8),
        f.value());
  }
}
