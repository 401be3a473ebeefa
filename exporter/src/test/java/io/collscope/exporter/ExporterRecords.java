package io.collscope.exporter;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Classification;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Stage;
import io.collscope.avro.Verdict;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Records of the job's output schemas for the exporter's tests (cluster {@code c1}, job {@code
 * train}, 10 s windows), and a clock the tests move by hand.
 */
final class ExporterRecords {

  static final String CLUSTER = "c1";
  static final String JOB = "train";
  static final Duration WINDOW = Duration.ofSeconds(10);

  private ExporterRecords() {}

  /**
   * One rank's window ending at {@code end}: {@code waitUs} in phase wait, 2/3/1/4 µs in guard,
   * copy, publish and reduce, 1000 calls.
   */
  static RankWindow rankWindow(
      String communicator, int rank, int worldSize, Instant end, double waitUs, double p99Us) {
    List<Double> zeros = Collections.nCopies(worldSize, 0.0);
    return RankWindow.newBuilder()
        .setCluster(CLUSTER)
        .setJob(JOB)
        .setCommunicator(communicator)
        .setRank(rank)
        .setWorldSize(worldSize)
        .setHost("node" + rank)
        .setWindowStart(end.minus(WINDOW))
        .setWindowEnd(end)
        .setCalls(1000)
        .setBytes(1000L * 65536)
        .setTimeouts(rank == 0 ? 2 : 0)
        .setGuardMeanUs(2)
        .setCopyMeanUs(3)
        .setPublishMeanUs(1)
        .setWaitMeanUs(waitUs)
        .setReduceMeanUs(4)
        .setP50Us(p99Us / 2)
        .setP99Us(p99Us)
        .setClockHz(1e9)
        .setPeerWaitMeanUs(zeros)
        .setPeerArrivedLast(Collections.nCopies(worldSize, 0L))
        .build();
  }

  static Finding slowRank(int rank, Cause cause, double excessUs, double confidence) {
    return finding(FindingKind.SLOW_RANK, rank, -1, cause, excessUs, confidence);
  }

  static Finding slowLink(int from, int to, double excessUs, double confidence) {
    return finding(FindingKind.SLOW_LINK, to, from, Cause.LINK, excessUs, confidence);
  }

  static Finding finding(
      FindingKind kind, int rank, int from, Cause cause, double excessUs, double confidence) {
    return Finding.newBuilder()
        .setKind(kind)
        .setRank(rank)
        .setFromRank(from)
        .setCause(cause)
        .setConfidence(confidence)
        .setExcessWaitUs(excessUs)
        .setEvidence("test")
        .build();
  }

  /** A communicator's window: the verdict follows from the findings (strongest first). */
  static Attribution attribution(
      String communicator,
      int worldSize,
      Instant end,
      int maxWaitRank,
      double maxWaitUs,
      Finding... findings) {
    Verdict verdict =
        findings.length == 0
            ? Verdict.NONE
            : findings.length > 1
                ? Verdict.MULTIPLE
                : Verdict.valueOf(findings[0].getKind().name());
    return Attribution.newBuilder()
        .setCluster(CLUSTER)
        .setJob(JOB)
        .setCommunicator(communicator)
        .setWindowStart(end.minus(WINDOW))
        .setWindowEnd(end)
        .setWorldSize(worldSize)
        .setRanks(new ArrayList<>())
        .setMaxWaitRank(maxWaitRank)
        .setMaxWaitMeanUs(maxWaitUs)
        .setVerdict(verdict)
        .setFindings(List.of(findings))
        .setConfidence(findings.length == 0 ? 0.9 : findings[0].getConfidence())
        .setCollectiveUs(12)
        .setBytesPerCall(65536)
        .setBaselineUs(11.5)
        .setMissingRanks(new ArrayList<>())
        .build();
  }

  /** An alert transition as the job writes it (its labels as AlertFunction makes them). */
  static Alert alert(
      String communicator, AlertKind kind, String rank, AlertState state, Instant windowEnd) {
    Map<String, String> labels = new TreeMap<>();
    labels.put("alertname", io.collscope.alerts.AlertMapping.alertname(kind));
    labels.put("cluster", CLUSTER);
    labels.put("job", JOB);
    labels.put("communicator", communicator);
    labels.put("kind", kind.name());
    labels.put("severity", "critical");
    labels.put("size_bucket", "64KiB");
    labels.put("collective", "allreduce_oneshot_f32");
    if (rank != null) labels.put("rank", rank);
    return Alert.newBuilder()
        .setAlertId(communicator + "-" + kind + "-" + rank)
        .setCluster(CLUSTER)
        .setJob(JOB)
        .setCommunicator(communicator)
        .setKind(kind)
        .setState(state)
        .setSeverity("critical")
        .setLabels(labels)
        .setAnnotations(Map.of())
        .setStartsAt(windowEnd)
        .setEndsAt(state == AlertState.RESOLVED ? windowEnd : null)
        .setClassification(Classification.SLOWER)
        .setMetric("p50_us")
        .setBaseline(12)
        .setCurrent(312)
        .setNoise(1.5)
        .setWindowEnd(windowEnd)
        .setMessage(communicator + ": " + kind + " " + state)
        .build();
  }

  static DeadLetter deadLetter(DeadLetterReason reason, Stage stage, Instant at) {
    return DeadLetter.newBuilder()
        .setReason(reason)
        .setDetail("test")
        .setStage(stage)
        .setSourceTopic("collscope.snapshots")
        .setPartition(0)
        .setOffset(42)
        .setKey(null)
        .setRaw(ByteBuffer.wrap(new byte[] {1, 2, 3}))
        .setDetectedAt(at)
        .build();
  }

  /** A clock that stands still until the test moves it. */
  static final class ManualClock extends Clock {
    private Instant now;

    ManualClock(Instant start) {
      this.now = start;
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }
  }
}
