package io.collscope.flink.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.HardwareCause;
import io.collscope.emitter.SnapshotRecording;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.JobOptions;
import io.collscope.flink.sink.CollectingSink;
import io.collscope.flink.source.RecordedSource;
import io.collscope.flink.testing.MiniClusters;
import io.collscope.flink.testing.RecordedHealth;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.Findings;
import io.collscope.schema.RecordedFrame;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The recorded runs of {@code recordings/} (as {@code RecordedRunsITCase} replays them) through the
 * attribution job twice: as they were recorded (old emitters: no health), and with a GPU health
 * stream beside them, each rank's snapshot accompanied by a read recorded from a real H100 ({@link
 * RecordedHealth}), one condition planted on one GPU per run (every hardware cause in turn, and
 * NONE). Every verdict and finding is the same in both; with health, every finding on the planted
 * GPU carries the planted cause, every other finding NONE.
 */
class RecordedHealthReplayITCase {

  private static final Path DOCS = Path.of("..", "recordings");

  @RegisterExtension
  static final MiniClusterExtension FLINK = MiniClusters.oneTaskManagerTwoSlots();

  /** One run: its communicator, the rank whose GPU got the planted cause, and the cause. */
  record Plant(
      String run,
      CommunicatorKey key,
      int rank,
      String host,
      HardwareCause cause,
      List<Long> readTimes) {
    long readsBefore(long end) {
      return readTimes.stream().filter(t -> t < end).count();
    }
  }

  static final List<Plant> plants = new ArrayList<>();
  static List<Attribution> without;
  static List<Attribution> with;

  @BeforeAll
  static void replayWithAndWithoutHealth() throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.walk(DOCS)) {
      files =
          s.filter(p -> p.toString().endsWith(".snapshots"))
              .filter(p -> !Files.exists(p.resolveSibling("fault-set.txt")))
              .sorted()
              .toList();
    }
    List<RecordedFrame> frames = SnapshotRecording.frames(files);
    without = run(frames);

    // The rank to plant on in each run: the rank the job names most often without health.
    Map<CommunicatorKey, Map<Integer, Integer>> named = new HashMap<>();
    for (Attribution a : without) {
      for (Finding f : a.getFindings()) {
        if (f.getKind() == FindingKind.UNIFORM_SLOWDOWN) continue;
        named
            .computeIfAbsent(CommunicatorKey.of(a), k -> new TreeMap<>())
            .merge(f.getRank(), 1, Integer::sum);
      }
    }
    RecordedHealth h100 = RecordedHealth.load(RecordedHealth.H100_NCCL);
    HardwareCause[] causes = HardwareCause.values();
    AvroCodec<GpuHealth> codec = AvroCodec.of(GpuHealth.class);
    Map<String, Long> seq = new HashMap<>();
    Map<CommunicatorKey, Plant> byKey = new HashMap<>();
    List<RecordedFrame> all = new ArrayList<>(frames);
    int i = 0;
    for (Path f : files) {
      List<CounterSnapshot> snaps = SnapshotRecording.read(f);
      if (snaps.isEmpty()) continue;
      CommunicatorKey key = CommunicatorKey.of(snaps.get(0));
      Plant p = byKey.get(key.toString().isEmpty() ? null : key);
      if (p == null) {
        int rank =
            named.getOrDefault(key, Map.of()).entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .map(Map.Entry::getKey)
                .orElse(0);
        p =
            new Plant(
                DOCS.relativize(f).toString(),
                key,
                rank,
                snaps.get(0).getHost(),
                causes[i++ % causes.length],
                new ArrayList<>());
        byKey.put(key, p);
        plants.add(p);
      }
      long first = snaps.get(0).getEventTime().toEpochMilli();
      for (CounterSnapshot s : snaps) {
        // one GPU per rank; every GPU at the same point of the recording (a job's GPUs run in
        // step), give or take two reads
        long k = seq.merge(f + "/" + s.getRank(), 1L, Long::sum);
        int read = (int) ((s.getEventTime().toEpochMilli() - first) / 250) + s.getRank() % 3;
        GpuHealth g =
            h100.read(
                read,
                s.getCluster(),
                s.getJob(),
                s.getCommunicator(),
                s.getRank(),
                s.getHost(),
                s.getRank(),
                k,
                s.getEventTime());
        if (s.getRank() == p.rank()) {
          g = RecordedHealth.plant(g, p.cause(), k);
          p.readTimes().add(s.getEventTime().toEpochMilli());
        }
        all.add(
            new RecordedFrame(
                "health:" + f.getFileName(), k, s.getEventTime().toEpochMilli(), codec.encode(g)));
      }
    }
    all.sort(Comparator.comparingLong(RecordedFrame::eventTimeMs));
    with = run(all);
  }

  static List<Attribution> run(List<RecordedFrame> frames) throws Exception {
    CollectingSink<Attribution> verdicts = new CollectingSink<>();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1); // see RecordedSource
    AttributionJob.topology(
        env,
        RecordedSource.of(frames),
        new AttributionJob.Sinks(
            new CollectingSink<>(), verdicts, new CollectingSink<>(), new CollectingSink<>()),
        JobOptions.defaults());
    env.execute("recorded runs, health");
    List<Attribution> out = new ArrayList<>(verdicts.received());
    out.sort(
        Comparator.comparing((Attribution a) -> CommunicatorKey.of(a).toString())
            .thenComparing(Attribution::getWindowStart));
    return out;
  }

  /** The finding covers the planted GPU (one GPU per rank, as the stream above puts them). */
  static boolean covers(Finding f, Plant p) {
    return switch (f.getKind()) {
      case SLOW_RANK, SILENT_RANK -> f.getRank() == p.rank();
      case SLOW_LINK -> f.getRank() == p.rank() || f.getFromRank() == p.rank();
      case SLOW_NODE -> p.host().equals(f.getNode());
      default -> false; // a uniform slowdown is every GPU's: one planted GPU is not the median
    };
  }

  @Test
  void withoutHealthEveryFindingSaysNoneAndNoEvidence() {
    assertThat(without).isNotEmpty();
    for (Attribution a : without) {
      for (Finding f : a.getFindings()) {
        assertThat(f.getHardwareCause()).isEqualTo(HardwareCause.NONE);
        assertThat(f.getHardwareEvidence()).isEmpty();
      }
    }
  }

  @Test
  void healthRecordsChangeNoVerdictAndNoFinding() {
    assertThat(with).hasSameSizeAs(without);
    for (int i = 0; i < with.size(); i++) {
      Attribution a = with.get(i);
      Attribution b = without.get(i);
      assertThat(a.getVerdict()).isEqualTo(b.getVerdict());
      assertThat(a.getFindings().stream().map(Findings::token).toList())
          .isEqualTo(b.getFindings().stream().map(Findings::token).toList());
      for (int j = 0; j < a.getFindings().size(); j++) {
        Finding f = Finding.newBuilder(a.getFindings().get(j)).build();
        f.setHardwareCause(HardwareCause.NONE);
        f.setHardwareEvidence("");
        assertThat(f).isEqualTo(b.getFindings().get(j));
      }
    }
  }

  @Test
  void everyFindingCarriesThePlantedCauseOnItsGpuAndNoneElsewhere() {
    Map<CommunicatorKey, Plant> byKey = new HashMap<>();
    for (Plant p : plants) byKey.put(p.key(), p);
    StringBuilder table =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "%n%-58s | %-11s | %7s | %8s | %8s | %8s | %s%n",
                "run (planted on rank)",
                "planted",
                "windows",
                "findings",
                "on GPU",
                "right",
                "hardware causes seen"));
    int judged = 0;
    int right = 0;
    List<String> wrong = new ArrayList<>();
    for (Plant p : plants) {
      int windows = 0, findings = 0, onGpu = 0, ok = 0;
      Map<String, Integer> seen = new TreeMap<>();
      for (Attribution a : with) {
        if (!CommunicatorKey.of(a).equals(p.key())) continue;
        windows++;
        for (Finding f : a.getFindings()) {
          findings++;
          boolean mine = covers(f, p);
          if (mine) onGpu++;
          // a silent rank sent no snapshot, so its GPU no read: nothing to show; a counter's
          // growth needs two reads of the GPU (one may be before the window)
          boolean read =
              p.readsBefore(a.getWindowEnd().toEpochMilli())
                  > p.readsBefore(a.getWindowStart().toEpochMilli());
          boolean counter =
              p.cause() == HardwareCause.ECC
                  || p.cause() == HardwareCause.LINK_ERRORS
                  || p.cause() == HardwareCause.PCIE_ERRORS;
          boolean growthSeen = !counter || p.readsBefore(a.getWindowEnd().toEpochMilli()) >= 2;
          HardwareCause expected = mine && read && growthSeen ? p.cause() : HardwareCause.NONE;
          seen.merge(f.getHardwareCause().name(), 1, Integer::sum);
          if (f.getHardwareCause() == expected) ok++;
          else
            wrong.add(
                String.format(
                    Locale.ROOT,
                    "%s %s %s: %s, expected %s (%s)",
                    p.run(),
                    a.getWindowStart(),
                    Findings.token(f),
                    f.getHardwareCause(),
                    expected,
                    f.getHardwareEvidence()));
        }
      }
      judged += findings;
      right += ok;
      table.append(
          String.format(
              Locale.ROOT,
              "%-58s | %-11s | %7d | %8d | %8d | %8d | %s%n",
              p.run() + " (" + p.rank() + ")",
              p.cause(),
              windows,
              findings,
              onGpu,
              ok,
              seen));
    }
    table.append(
        String.format(
            Locale.ROOT,
            "all: %d of %d findings carry the expected hardware cause (%.1f %%)%n",
            right,
            judged,
            judged == 0 ? 0 : 100.0 * right / judged));
    System.out.print(table);
    assertThat(plants.stream().map(Plant::cause).distinct()).hasSize(HardwareCause.values().length);
    assertThat(judged).isGreaterThan(0);
    assertThat(wrong).as(table.toString()).isEmpty();
  }

  @Test
  void aFindingWithHealthShowsItsGpusNumbersInItsEvidence() {
    List<Finding> withEvidence =
        with.stream()
            .flatMap(a -> a.getFindings().stream())
            .filter(f -> f.getHardwareCause() != HardwareCause.NONE)
            .toList();
    assertThat(withEvidence).isNotEmpty();
    for (Finding f : withEvidence) {
      assertThat(f.getHardwareEvidence())
          .matches("GPU \\d+ of .*: SM [\\d,]+/1,980 MHz, \\d+ °C, .*");
    }
    System.out.println(
        "e.g. "
            + Findings.token(withEvidence.get(0))
            + " + \""
            + withEvidence.get(0).getHardwareEvidence()
            + "\"");
  }
}
