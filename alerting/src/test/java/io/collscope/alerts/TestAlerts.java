package io.collscope.alerts;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Classification;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Map;

/** Alert records and a clock that tests move by hand. */
final class TestAlerts {

  private TestAlerts() {}

  static final Map<String, String> SLOW_RANK_LABELS =
      Map.of(
          "cluster", "c1",
          "job", "train",
          "communicator", "tp0",
          "collective", "all_reduce",
          "kind", "SLOW_RANK",
          "rank", "5",
          "severity", "critical");

  static Alert firing(String id, Instant startsAt) {
    return Alert.newBuilder()
        .setAlertId(id)
        .setCluster("c1")
        .setJob("train")
        .setCommunicator("tp0")
        .setKind(AlertKind.SLOW_RANK)
        .setState(AlertState.FIRING)
        .setSeverity("critical")
        .setLabels(SLOW_RANK_LABELS)
        .setAnnotations(
            Map.of(
                "description", "rank 5 arrived last in 3 consecutive windows (ARRIVED_LATE)",
                "baseline", "12.0",
                "current", "312.0"))
        .setStartsAt(startsAt)
        .setEndsAt(null)
        .setClassification(Classification.SLOWER)
        .setMetric("p50_us")
        .setBaseline(12.0)
        .setCurrent(312.0)
        .setNoise(1.5)
        .setWindowEnd(startsAt)
        .setMessage("c1/train/tp0: rank 5 is slow (ARRIVED_LATE), 312 us vs 12 us")
        .build();
  }

  static Alert resolved(Alert firing, Instant endsAt) {
    return Alert.newBuilder(firing)
        .setState(AlertState.RESOLVED)
        .setEndsAt(endsAt)
        .setClassification(Classification.PARITY)
        .setCurrent(12.2)
        .setWindowEnd(endsAt)
        .setMessage("c1/train/tp0: rank 5 is back to normal")
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

    void set(Instant t) {
      now = t;
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
