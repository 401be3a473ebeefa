package io.collscope.flink.history;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Classification;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Small records of each history table for the history tests. */
final class HistoryRecords {

  private HistoryRecords() {}

  static RankWindow rankWindow(String communicator, int rank, Instant end) {
    return RankWindow.newBuilder()
        .setCluster("cl")
        .setJob("job")
        .setCommunicator(communicator)
        .setRank(rank)
        .setWorldSize(2)
        .setHost("host" + rank)
        .setWindowStart(end.minusSeconds(10))
        .setWindowEnd(end)
        .setCalls(100)
        .setBytes(409_600)
        .setTimeouts(0)
        .setGuardMeanUs(1)
        .setCopyMeanUs(2)
        .setPublishMeanUs(3)
        .setWaitMeanUs(4 + rank)
        .setReduceMeanUs(5)
        .setP50Us(16)
        .setP99Us(32)
        .setClockHz(1e9)
        .setPeerWaitMeanUs(List.of(0.0, 4.0))
        .setPeerLateMeanUs(List.of(0.0, 4.5))
        .setPeerLateP99Us(List.of(0.0, 8.0))
        .setPeerArrivedLast(List.of(10L, 90L))
        .build();
  }

  static Attribution attribution(String communicator, Instant end, int slowRank) {
    return Attribution.newBuilder()
        .setCluster("cl")
        .setJob("job")
        .setCommunicator(communicator)
        .setWindowStart(end.minusSeconds(10))
        .setWindowEnd(end)
        .setWorldSize(2)
        .setRanks(
            List.of(
                new RankPhases(0, 100L, 1.0, 2.0, 3.0, 4.0, 5.0, 32.0, 0.0, 0.0, 0.0, null),
                new RankPhases(1, 100L, 1.0, 2.0, 3.0, 5.0, 5.0, 32.0, 0.0, 0.0, 0.0, null)))
        .setMaxWaitRank(0)
        .setMaxWaitMeanUs(4)
        .setVerdict(slowRank < 0 ? Verdict.NONE : Verdict.SLOW_RANK)
        .setFindings(
            slowRank < 0
                ? List.of()
                : List.of(
                    new Finding(
                        FindingKind.SLOW_RANK,
                        slowRank,
                        -1,
                        Cause.ARRIVED_LATE,
                        0.9,
                        250.0,
                        "",
                        "",
                        io.collscope.avro.HardwareCause.NONE,
                        "")))
        .setConfidence(0.9)
        .setCollectiveUs(15)
        .setBytesPerCall(4096)
        .setMissingRanks(List.of())
        .build();
  }

  static Alert alert(String communicator, AlertState state, Instant startsAt, Instant endsAt) {
    return Alert.newBuilder()
        .setAlertId("a1")
        .setCluster("cl")
        .setJob("job")
        .setCommunicator(communicator)
        .setKind(AlertKind.SLOW_RANK)
        .setState(state)
        .setLabels(Map.of("alertname", "CollscopeSlowRank", "rank", "1"))
        .setAnnotations(Map.of("summary", "rank 1 is slow"))
        .setStartsAt(startsAt)
        .setEndsAt(endsAt)
        .setClassification(Classification.SLOWER)
        .setMetric("p50_us")
        .setBaseline(15)
        .setCurrent(265)
        .setNoise(1)
        .setWindowEnd(state == AlertState.RESOLVED ? endsAt : startsAt)
        .setMessage("rank 1 is slow")
        .build();
  }
}
