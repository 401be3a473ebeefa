package io.collscope.flink.offline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.model.SampledCalls;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A communicator whose emitter accounts 1 collective in 16 (the CUDA kernel below 64 MiB per rank),
 * recorded on an H200 with 8 ranks at 4 KB: before the snapshot said so (run 162) and after (run
 * 163, the same fault set and kernel). The job's per-window figures must be those of the sample,
 * not of the sample scaled by how many collectives it happened to hold.
 */
class SampledAccountingTest {

  private static final Path RUNS = Path.of("..", "recordings", "gpu");
  private static final Path SAYS = RUNS.resolve("2026-12-01-run163-h200/cuda-clean.snapshots");
  private static final Path SILENT =
      RUNS.resolve("2026-12-01-run162-h200-pull/cuda-clean.snapshots");
  private static final long BYTES = 4096;

  private static OfflineAttribution attribute(Path recording) throws Exception {
    OfflineAttribution job = new OfflineAttribution(2_000, Thresholds.DEFAULT);
    for (CounterSnapshot s : SnapshotRecording.read(recording)) job.add(s);
    return job;
  }

  /** The full windows: neither the first nor the last (partial) one. */
  private static List<Attribution> full(OfflineAttribution job) {
    List<Attribution> all = job.attributions();
    assertThat(all).hasSizeGreaterThan(4);
    return all.subList(1, all.size() - 1);
  }

  @Test
  void theRecordingSaysItsSampleAndItsBytesCountEveryCollective() throws Exception {
    List<CounterSnapshot> records = SnapshotRecording.read(SAYS);
    assertThat(records).isNotEmpty();
    for (CounterSnapshot s : records) {
      assertThat(s.getSampleEvery()).isEqualTo(16);
      assertThat(s.getSampledCalls()).isNotNull().isBetween(0L, s.getCalls());
      // osar_publish derives the bytes from the sequence: exact at every snapshot
      assertThat(s.getBytes()).isEqualTo((s.getCalls() - s.getTimeouts()) * BYTES);
    }
    // about 1 in 16, as the hash picks them: the last snapshot of rank 0 has tens of thousands
    List<CounterSnapshot> rank0 = records.stream().filter(s -> s.getRank() == 0).toList();
    CounterSnapshot last = rank0.get(rank0.size() - 1);
    assertThat((double) last.getSampledCalls() / last.getCalls())
        .isCloseTo(1 / 16.0, within(0.005));
  }

  @Test
  void everyWindowHasTheMessageSizeItRanSoTheBaselineKeepsGrowing() throws Exception {
    Set<Long> says = new TreeSet<>();
    for (Attribution a : full(attribute(SAYS))) says.add(a.getBytesPerCall());
    assertThat(says).containsExactly(BYTES);
    // The recording made before: bytes counted in the sampled collectives only, each window's
    // bytes per call wandered with its sample, and a baseline keyed by message size started over
    // at every window (run 162: 11 windows, 11 sizes from 4004 to 4250).
    Set<Long> silent = new TreeSet<>();
    for (Attribution a : full(attribute(SILENT))) silent.add(a.getBytesPerCall());
    assertThat(silent).hasSizeGreaterThan(3).doesNotContain(BYTES);
  }

  @Test
  void meansAreOverTheSampleAndRowsSayItsSize() throws Exception {
    OfflineAttribution job = attribute(SAYS);
    for (Attribution a : full(job)) {
      for (var r : a.getRanks()) {
        long sampled = SampledCalls.of(r);
        // about calls / 16 in a 2 s window of ~10^4 collectives
        assertThat(sampled).isBetween(r.getCalls() / 32, r.getCalls() / 8);
      }
    }
    for (List<RankWindow> windows : job.rankWindows().values()) {
      for (RankWindow w : windows) {
        assertThat(w.getSampleEvery()).isEqualTo(16);
        assertThat(SampledCalls.accounted(w)).isEqualTo(16 * w.getSampledCalls());
      }
    }
  }

  @Test
  void theCollectivesCostIsSteadierOverTheSampleThanOverTheCalls() throws Exception {
    // The same kernel and load: the spread of the windows' collective time is the estimator's.
    // Over the calls (run 162) a window whose sample held 10 % more collectives than 1 in 16 read
    // 10 % slower; over the sample it reads the sample's mean.
    double says = spread(full(attribute(SAYS)));
    double silent = spread(full(attribute(SILENT)));
    assertThat(says).isLessThan(silent / 2);
  }

  private static double spread(List<Attribution> windows) {
    double mean = windows.stream().mapToDouble(Attribution::getCollectiveUs).average().orElse(0);
    double var =
        windows.stream().mapToDouble(a -> Math.pow(a.getCollectiveUs() - mean, 2)).sum()
            / (windows.size() - 1);
    return Math.sqrt(var) / mean;
  }
}
