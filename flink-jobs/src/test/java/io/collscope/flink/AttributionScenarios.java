package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.broker.TopicDrainer;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The integration tests' one way to run a scenario against a running attribution job: CPU ranks
 * emit into the job's input topic for a warm-up window plus some full windows, then the
 * attributions of the full windows are read back (read_committed).
 */
final class AttributionScenarios {

  final String bootstrap;
  final JobOptions options;
  final Duration window;
  final Duration interval;
  final int fullWindows;

  AttributionScenarios(String bootstrap, JobOptions options, Duration interval, int fullWindows) {
    this.bootstrap = bootstrap;
    this.options = options;
    this.window = options.duration(JobOptions.WINDOW);
    this.interval = interval;
    this.fullWindows = fullWindows;
  }

  /** Job options for a test run on fresh topics, with short windows and checkpoints. */
  static JobOptions testOptions(String bootstrap, String run, Duration window) {
    return JobOptions.defaults()
        .with(JobOptions.BOOTSTRAP, bootstrap)
        .with(JobOptions.SNAPSHOT_TOPIC, run + ".snapshots")
        .with(JobOptions.RANK_WINDOW_TOPIC, run + ".rank-windows")
        .with(JobOptions.ATTRIBUTION_TOPIC, run + ".attribution")
        .with(JobOptions.DEADLETTER_TOPIC, run + ".deadletter")
        .with(JobOptions.ALERT_TOPIC, run + ".alerts")
        .with(JobOptions.TRANSACTIONAL_ID_PREFIX, run)
        .with(JobOptions.GROUP_ID, run)
        .with(JobOptions.WINDOW, window.toMillis() + "ms")
        .with(JobOptions.OUT_OF_ORDERNESS, "500ms")
        .with(JobOptions.IDLENESS, "2s")
        .with(JobOptions.CHECKPOINT_INTERVAL, "1s");
  }

  /** Runs one communicator's ranks; returns when they started and stopped. */
  Instant[] emit(String communicator, int ranks, String... inject) throws Exception {
    FaultPlan plan = FaultPlan.parse(List.of(inject), ranks);
    Instant start = Instant.now();
    try (CpuCollective backend = new CpuCollective(CollectiveConfig.of(ranks), plan);
        KafkaSnapshotSink sink =
            KafkaSnapshotSink.connect(
                bootstrap, options.get(JobOptions.SNAPSHOT_TOPIC), 4, Duration.ofSeconds(30))) {
      Emitter.Result r =
          new Emitter(backend, Identity.of("it", "it", communicator), sink, interval)
              .run(window.multipliedBy(fullWindows + 1));
      assertThat(r.failure()).isEmpty();
    }
    return new Instant[] {start, Instant.now()};
  }

  /** The attributions of the communicator's full windows, in window order. */
  List<Attribution> fullWindows(String communicator, Instant[] span) {
    long w = window.toMillis();
    long firstStart = (span[0].toEpochMilli() / w + 1) * w;
    // The watermark trails the last snapshot by the out-of-orderness: a window ending in the
    // last second of the run may never fire, so it is not waited for.
    long lastEnd = (span[1].toEpochMilli() - 1000) / w * w;
    int expected = (int) ((lastEnd - firstStart) / w);
    Map<Long, Attribution> byStart = new TreeMap<>();
    TopicDrainer.drain(
        bootstrap,
        options.get(JobOptions.ATTRIBUTION_TOPIC),
        Duration.ofSeconds(90),
        recs -> {
          byStart.clear();
          for (ConsumerRecord<byte[], byte[]> rec : recs) {
            Attribution a = decode(Attribution.class, rec.value());
            long s = a.getWindowStart().toEpochMilli();
            if (a.getCommunicator().equals(communicator) && s >= firstStart && s + w <= lastEnd) {
              byStart.put(s, a);
            }
          }
          return byStart.size() >= expected;
        });
    List<Attribution> out = new ArrayList<>(byStart.values());
    for (Attribution a : out) {
      System.out.printf(
          "%s %s %s%n",
          communicator,
          a.getWindowStart(),
          a.getFindings().isEmpty() ? "NONE conf=" + a.getConfidence() : a.getFindings());
    }
    assertThat(out)
        .as("full windows of %s", communicator)
        .hasSizeGreaterThanOrEqualTo(fullWindows - 1);
    return out;
  }

  static <T extends SpecificRecord> T decode(Class<T> type, byte[] b) {
    try {
      return AvroCodec.of(type).decode(b);
    } catch (DecodeException e) {
      throw new AssertionError(e);
    }
  }

  /** From the second full window on, the top finding names the culprit. */
  static void assertNamedFromSecondFullWindow(
      List<Attribution> windows, FindingKind kind, int rank, int from) {
    for (Attribution a : windows.subList(1, windows.size())) {
      assertThat(a.getFindings()).as("window %s: %s", a.getWindowStart(), a).isNotEmpty();
      Finding top = a.getFindings().get(0);
      assertThat(top.getKind())
          .as("window %s: %s", a.getWindowStart(), a.getFindings())
          .isEqualTo(kind);
      assertThat(top.getRank())
          .as("window %s: %s", a.getWindowStart(), a.getFindings())
          .isEqualTo(rank);
      assertThat(top.getFromRank()).isEqualTo(from);
      assertThat(a.getMissingRanks()).isEmpty();
    }
  }
}
