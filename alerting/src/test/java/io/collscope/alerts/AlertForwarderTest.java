package io.collscope.alerts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.alerts.TestAlerts.ManualClock;
import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The resend and back-off schedule, on a clock the test moves: no wall-clock time involved. */
class AlertForwarderTest {

  private static final Instant T0 = Instant.parse("2025-06-01T12:00:00Z");
  private static final Duration RESEND = Duration.ofSeconds(30);

  /** Records every POST; fails while {@code failing}. */
  static final class FakeAlertmanager implements AlertSink {
    final ManualClock clock;
    final List<Instant> attempts = new ArrayList<>();
    final List<List<AlertmanagerAlert>> delivered = new ArrayList<>();
    boolean failing;

    FakeAlertmanager(ManualClock clock) {
      this.clock = clock;
    }

    @Override
    public void send(List<AlertmanagerAlert> alerts) throws IOException {
      attempts.add(clock.instant());
      if (failing) throw new ConnectException("connection refused");
      delivered.add(List.copyOf(alerts));
    }

    List<AlertmanagerAlert> last() {
      return delivered.get(delivered.size() - 1);
    }
  }

  private final ManualClock clock = new ManualClock(T0);
  private final FakeAlertmanager am = new FakeAlertmanager(clock);

  /** Jitter draw 0: every back-off is its full, deterministic length. */
  private AlertForwarder forwarder() {
    return new AlertForwarder(am, AlertForwarder.Config.of(RESEND, null), clock, () -> 0.0);
  }

  @Test
  void aFiringAlertIsSentAtOnceWithEndsAtFourResendsAheadThenEveryResendInterval() {
    AlertForwarder f = forwarder();
    f.accept(TestAlerts.firing("a1", T0.minusSeconds(60)));
    Instant next = f.tick();
    assertThat(am.delivered).hasSize(1);
    AlertmanagerAlert sent = am.last().get(0);
    assertThat(sent.labels()).containsEntry("alertname", "CollscopeSlowRank");
    assertThat(sent.startsAt()).isEqualTo(T0.minusSeconds(60));
    assertThat(sent.endsAt()).isEqualTo(T0.plus(RESEND.multipliedBy(4)));
    assertThat(next).isEqualTo(T0.plus(RESEND));

    clock.advance(Duration.ofSeconds(29));
    f.tick();
    assertThat(am.delivered).as("not before the resend interval").hasSize(1);

    clock.advance(Duration.ofSeconds(1));
    f.tick();
    assertThat(am.delivered).hasSize(2);
    assertThat(am.last().get(0).endsAt()).isEqualTo(T0.plus(RESEND).plus(RESEND.multipliedBy(4)));
    assertThat(f.stats())
        .isEqualTo(new AlertForwarder.Stats(1, 0, 2, 2, 0, /* firing */ 1, /* resolved */ 0));
  }

  @Test
  void onlyTheLatestTransitionOfAnAlertIsSent() {
    AlertForwarder f = forwarder();
    Alert firing = TestAlerts.firing("a1", T0.minusSeconds(60));
    f.accept(firing);
    f.accept(TestAlerts.resolved(firing, T0.minusSeconds(10)));
    f.tick();
    assertThat(am.delivered).hasSize(1);
    assertThat(am.last()).hasSize(1);
    assertThat(am.last().get(0).endsAt()).isEqualTo(T0.minusSeconds(10));
    assertThat(am.last().get(0).annotations())
        .containsEntry("summary", "c1/train/tp0: rank 5 is back to normal");
    assertThat(f.stats().firing()).isZero();
    assertThat(f.stats().resolved()).isEqualTo(1);
  }

  @Test
  void aNewTransitionIsSentAtOnceNotAtTheNextResend() {
    AlertForwarder f = forwarder();
    Alert firing = TestAlerts.firing("a1", T0);
    f.accept(firing);
    f.tick();
    clock.advance(Duration.ofSeconds(3));
    f.accept(TestAlerts.resolved(firing, clock.instant()));
    Instant next = f.tick();
    assertThat(am.delivered).hasSize(2);
    assertThat(am.last().get(0).endsAt()).isEqualTo(T0.plusSeconds(3));
    assertThat(next).isEqualTo(T0.plusSeconds(3).plus(RESEND));
  }

  @Test
  void aResolvedAlertIsResentForFifteenMinutesAfterItResolvedThenDropped() {
    AlertForwarder f = forwarder();
    Alert firing = TestAlerts.firing("a1", T0.minusSeconds(600));
    f.accept(TestAlerts.resolved(firing, T0));
    int sends = 0;
    for (int i = 0; i < 40; i++) {
      f.tick();
      clock.advance(RESEND);
    }
    for (List<AlertmanagerAlert> batch : am.delivered) {
      assertThat(batch.get(0).endsAt()).isEqualTo(T0);
      sends++;
    }
    // Sent at 0, 30 s, ..., 14 min 30 s: 30 times; dropped at 15 min.
    assertThat(sends).isEqualTo(30);
    assertThat(f.stats().resolved()).isZero();
  }

  @Test
  void aResolvedAlertIsSentAtLeastOnceEvenIfItsRetentionEndedMeanwhile() {
    AlertForwarder f = forwarder();
    Alert firing = TestAlerts.firing("a1", T0.minusSeconds(600));
    f.accept(TestAlerts.resolved(firing, T0));
    am.failing = true;
    f.tick();
    clock.advance(Duration.ofMinutes(20));
    f.tick();
    assertThat(am.delivered).isEmpty();
    assertThat(f.stats().resolved()).as("kept until delivered").isEqualTo(1);
    am.failing = false;
    clock.advance(Duration.ofMinutes(1));
    f.tick();
    assertThat(am.delivered).hasSize(1);
    clock.advance(Duration.ofSeconds(1));
    f.tick();
    assertThat(f.stats().resolved()).isZero();
  }

  @Test
  void aTransitionWhoseRetentionEndedBeforeItWasReadIsDroppedUnsent() {
    AlertForwarder f = forwarder();
    Alert firing = TestAlerts.firing("old", T0.minus(Duration.ofHours(3)));
    f.accept(TestAlerts.resolved(firing, T0.minus(Duration.ofHours(2))));
    f.tick();
    assertThat(am.attempts).isEmpty();
    assertThat(f.stats().resolved()).isZero();
  }

  @Test
  void failuresBackOffExponentiallyUpToTheResendIntervalAndLoseNothing() {
    AlertForwarder f = forwarder();
    f.accept(TestAlerts.firing("a1", T0));
    am.failing = true;
    Instant next = f.tick();
    List<Duration> waits = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      waits.add(Duration.between(clock.instant(), next));
      // Nothing is attempted during the back-off.
      clock.set(next.minusMillis(1));
      f.tick();
      assertThat(am.attempts).hasSize(i + 1);
      clock.set(next);
      next = f.tick();
    }
    assertThat(waits)
        .containsExactly(
            Duration.ofMillis(500),
            Duration.ofSeconds(1),
            Duration.ofSeconds(2),
            Duration.ofSeconds(4),
            Duration.ofSeconds(8),
            Duration.ofSeconds(16),
            Duration.ofSeconds(30),
            Duration.ofSeconds(30));
    assertThat(f.stats().failedAttempts()).isEqualTo(9);
    assertThat(f.stats().alertsSent()).isZero();

    am.failing = false;
    clock.set(next);
    next = f.tick();
    assertThat(am.delivered).hasSize(1);
    assertThat(am.last().get(0).endsAt()).isEqualTo(clock.instant().plus(RESEND.multipliedBy(4)));
    assertThat(next).isEqualTo(clock.instant().plus(RESEND));
    // A failure after recovery starts the back-off from the beginning again.
    am.failing = true;
    clock.set(next);
    next = f.tick();
    assertThat(Duration.between(clock.instant(), next)).isEqualTo(Duration.ofMillis(500));
  }

  @Test
  void theRetryAfterAFailureCarriesEveryAlertNotOnlyTheDueOnes() {
    AlertForwarder f = forwarder();
    f.accept(TestAlerts.firing("a1", T0));
    f.tick();
    clock.advance(Duration.ofSeconds(10));
    f.accept(TestAlerts.firing("a2", T0));
    am.failing = true; // e.g. Alertmanager restarting: it lost a1 too
    f.tick();
    am.failing = false;
    clock.advance(Duration.ofMillis(500));
    f.tick();
    assertThat(am.last()).hasSize(2);
  }

  @Test
  void aTransitionThatIsNeitherFiringNorResolvedIsIgnored() {
    AlertForwarder f = forwarder();
    Alert a = TestAlerts.firing("a1", T0);
    a.setState(AlertState.UNKNOWN);
    f.accept(a);
    f.tick();
    assertThat(am.attempts).isEmpty();
    assertThat(f.stats().transitions()).isZero();
  }

  @Test
  void backoffIsJitteredWithinItsBoundsAndNeverOverflows() {
    Backoff b = new Backoff(Duration.ofMillis(500), Duration.ofSeconds(30), 0.5);
    assertThat(b.delay(1, 0.0)).isEqualTo(Duration.ofMillis(500));
    assertThat(b.delay(1, 0.5)).isEqualTo(Duration.ofMillis(375));
    assertThat(b.delay(3, 0.999999)).isBetween(Duration.ofMillis(1000), Duration.ofMillis(1001));
    assertThat(b.delay(1000, 0.0)).isEqualTo(Duration.ofSeconds(30));
    assertThat(b.delay(Integer.MAX_VALUE, 0.999))
        .isBetween(Duration.ofSeconds(15), Duration.ofSeconds(30));
    assertThatThrownBy(() -> b.delay(0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 0.5))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aShortResendIntervalBoundsTheBackoffToo() {
    AlertForwarder.Config c = AlertForwarder.Config.of(Duration.ofSeconds(1), null);
    assertThat(c.backoff().delay(10, 0)).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.resolvedRetention()).isEqualTo(Duration.ofMinutes(15));
    assertThat(AlertForwarder.Config.of(Duration.ofMillis(200), null).backoff().initial())
        .isEqualTo(Duration.ofMillis(200));
  }
}
