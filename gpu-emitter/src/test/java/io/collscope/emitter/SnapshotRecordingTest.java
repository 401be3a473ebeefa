package io.collscope.emitter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotRecordingTest {

  @TempDir Path dir;

  /** Two CPU ranks recorded to a file for {@code run}, a snapshot every 100 ms. */
  private Path record(String name, Duration run) throws Exception {
    Path file = dir.resolve(name);
    try (CpuCollective b = new CpuCollective(CollectiveConfig.of(2), FaultPlan.NONE);
        SnapshotRecording.Writer w = new SnapshotRecording.Writer(file)) {
      new Emitter(b, Identity.of("c", "j", "rec"), w, Duration.ofMillis(100)).run(run);
    }
    return file;
  }

  @Test
  void aRecordedRunReadsBackAndReplaysRebasedWithItsSpacing() throws Exception {
    Path file = record("run.snapshots", Duration.ofMillis(700));
    List<CounterSnapshot> got = SnapshotRecording.read(file);
    assertThat(got).hasSizeGreaterThanOrEqualTo(8);
    assertThat(got).allMatch(s -> s.getCommunicator().equals("rec"));

    List<CounterSnapshot> replayed = new ArrayList<>();
    SnapshotSink collect =
        new SnapshotSink() {
          public void send(CounterSnapshot s) {
            replayed.add(s);
          }

          public void flush() {}

          public long failed() {
            return 0;
          }

          public void close() {}
        };
    Replayer.replay(got, collect, false);
    assertThat(replayed).hasSameSizeAs(got);
    long span =
        got.get(got.size() - 1).getEventTime().toEpochMilli()
            - got.get(0).getEventTime().toEpochMilli();
    assertThat(
            replayed.get(replayed.size() - 1).getEventTime().toEpochMilli()
                - replayed.get(0).getEventTime().toEpochMilli())
        .isEqualTo(span);
    assertThat(replayed.get(0).getSeq()).isEqualTo(got.get(0).getSeq());
  }

  @Test
  void aTornTailIsIgnoredAndGarbageIsNamed() throws Exception {
    Path file = record("torn.snapshots", Duration.ofMillis(350));
    int whole = SnapshotRecording.read(file).size();
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      f.setLength(f.length() - 5);
    }
    assertThat(SnapshotRecording.read(file)).hasSize(whole - 1);

    Path bad = dir.resolve("bad.snapshots");
    Files.write(bad, new byte[] {0, 0, 0, 4, 'j', 'u', 'n', 'k'});
    assertThatThrownBy(() -> SnapshotRecording.read(bad)).hasMessageContaining("frame at byte 0");
  }

  @Test
  void severalRecordingsMergeByEventTimeKeepingEachFilesOrder() throws Exception {
    Path a = record("a.snapshots", Duration.ofMillis(400));
    Path b = record("b.snapshots", Duration.ofMillis(400));
    List<CounterSnapshot> merged = SnapshotRecording.readAll(List.of(a, b));
    assertThat(merged).hasSize(SnapshotRecording.read(a).size() + SnapshotRecording.read(b).size());
    for (int i = 1; i < merged.size(); i++) {
      assertThat(merged.get(i).getEventTime()).isAfterOrEqualTo(merged.get(i - 1).getEventTime());
    }
    // each boot's (file's) own sequence stays increasing per rank
    for (CounterSnapshot s : SnapshotRecording.read(b)) {
      List<Long> seqs =
          merged.stream()
              .filter(x -> x.getBootId().equals(s.getBootId()) && x.getRank() == s.getRank())
              .map(CounterSnapshot::getSeq)
              .toList();
      assertThat(seqs).isSorted();
    }
  }
}
