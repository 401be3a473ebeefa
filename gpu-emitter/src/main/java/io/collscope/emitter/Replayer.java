package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import java.time.Instant;
import java.util.List;

/**
 * Plays a recording into a sink with its original pacing, each event time moved so the first record
 * is "now": a live pipeline then windows a recorded run as if it were happening.
 */
public final class Replayer {

  private Replayer() {}

  /** Returns the (rebased) event time of the last record replayed. */
  public static Instant replay(List<CounterSnapshot> recording, SnapshotSink sink, boolean pace)
      throws InterruptedException {
    if (recording.isEmpty()) return Instant.now();
    long first = recording.get(0).getEventTime().toEpochMilli();
    long start = System.currentTimeMillis();
    Instant last = Instant.ofEpochMilli(start);
    for (CounterSnapshot s : recording) {
      long offset = s.getEventTime().toEpochMilli() - first;
      if (pace) {
        long wait = start + offset - System.currentTimeMillis();
        if (wait > 0) Thread.sleep(wait);
      }
      last = Instant.ofEpochMilli(start + offset);
      sink.send(CounterSnapshot.newBuilder(s).setEventTime(last).build());
    }
    sink.flush();
    return last;
  }
}
