package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.emitter.SnapshotRecording;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code collscope emit --source nccl}: its flags, and a run over an empty block directory. */
class EmitNcclSourceTest {

  @Test
  void anUnknownSourceIsOneLineAndExitCode2() {
    CliRun r = CliRun.of("emit", "--source", "mpi");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("--source must be ranks or nccl, got 'mpi'");
  }

  @Test
  void ncclWithRankOptionsThatDoNotApplyIsOneLineAndExitCode2() {
    CliRun r = CliRun.of("emit", "--source", "nccl", "--inject", "slow-rank=1:1ms");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("--source nccl");
  }

  @Test
  void aSidecarWithNoJobOnTheNodeRecordsNothingAndEndsCleanly(@TempDir Path dir) throws Exception {
    Path rec = dir.resolve("none.snapshots");
    CliRun r =
        CliRun.of(
            "emit",
            "--source",
            "nccl",
            "--shm",
            dir.resolve("absent").toString(),
            "--record",
            rec.toString(),
            "--seconds",
            "1",
            "--interval",
            "100ms");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).contains("published 0 snapshots of 0 NCCL communicator instances");
    List<CounterSnapshot> none = Files.exists(rec) ? SnapshotRecording.read(rec) : List.of();
    assertThat(none).isEmpty();
  }
}
