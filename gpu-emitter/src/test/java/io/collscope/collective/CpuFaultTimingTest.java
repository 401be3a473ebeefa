package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.emitter.Identity;
import io.collscope.emitter.Reporter;
import io.collscope.emitter.SnapshotSink;
import io.collscope.model.Phase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Timed faults on the CPU backend, asserted on large effects (20 ms per collective, whole ranks
 * stopping or restarting) so that a loaded machine does not make them flaky.
 */
class CpuFaultTimingTest {

  private static Counters read(CpuCollective b, int rank) throws Exception {
    return new SnapshotReader(b.block(rank)).read();
  }

  /** Sleeps until {@code millis} after {@code t0}. */
  private static void at(long t0, long millis) throws InterruptedException {
    long left = t0 + millis * 1_000_000L - System.nanoTime();
    if (left > 0) Thread.sleep(left / 1_000_000L, (int) (left % 1_000_000L));
  }

  @Test
  void anIntervalFaultIsOffBeforeItsStartAndOnAfterIt() throws Exception {
    FaultPlan plan = FaultPlan.parse(List.of("slow-copy=1:20ms@2s"), 2);
    try (CpuCollective b = new CpuCollective(CollectiveConfig.of(2), plan)) {
      long t0 = System.nanoTime();
      b.start();
      at(t0, 800);
      Counters before = read(b, 1);
      long readAt = (System.nanoTime() - t0) / 1_000_000L;
      at(t0, 2_600);
      Counters on1 = read(b, 1);
      at(t0, 3_600);
      Counters on2 = read(b, 1);
      b.stop();
      assertThat(b.failure()).isEmpty();
      if (readAt < 1_900) { // else the machine stalled past START before the first read
        assertThat(before.calls()).isPositive();
        double copyMs = before.cycles(Phase.COPY) / 1e6 / before.calls();
        assertThat(copyMs).as("copy ms per collective before START").isLessThan(5);
      }
      long calls = on2.calls() - on1.calls();
      assertThat(calls).isPositive();
      double copyMs = (on2.cycles(Phase.COPY) - on1.cycles(Phase.COPY)) / 1e6 / calls;
      assertThat(copyMs).as("copy ms per collective after START").isGreaterThan(15);
      // rank 0 is not slowed itself: it waits for rank 1
      Counters r0 = read(b, 0);
      assertThat(r0.cycles(Phase.COPY) / 1e6 / r0.calls()).isLessThan(5);
    }
  }

  @Test
  void aTimedDeadRankStopsRunningAndReportingAtItsTime() throws Exception {
    FaultPlan plan = FaultPlan.parse(List.of("dead-rank=1@500ms"), 2);
    CollectiveConfig cfg = CollectiveConfig.of(2).withWaitBudgetNanos(50_000_000L);
    try (CpuCollective b = new CpuCollective(cfg, plan)) {
      long t0 = System.nanoTime();
      b.start();
      assertThat(b.reports(1)).isTrue();
      at(t0, 1_200);
      assertThat(b.reports(1)).isFalse();
      assertThat(b.reports(0)).isTrue();
      long calls1 = read(b, 1).calls();
      at(t0, 1_700);
      assertThat(read(b, 1).calls()).as("rank 1 is dead").isEqualTo(calls1).isPositive();
      assertThat(read(b, 0).timeouts()).as("rank 0 times out on it").isPositive();
      b.stop();
    }
  }

  @Test
  void aRebootRestartsTheRanksCountersUnderANewIncarnationAndBootId() throws Exception {
    FaultPlan plan = FaultPlan.parse(List.of("reboot-rank=1@1s"), 2);
    List<CounterSnapshot> sent = new ArrayList<>();
    SnapshotSink sink =
        new SnapshotSink() {
          public void send(CounterSnapshot s) {
            sent.add(s);
          }

          public void flush() {}

          public long failed() {
            return 0;
          }

          public void close() {}
        };
    Identity id = new Identity("c", "j", "tp0", "h", "boot");
    try (CpuCollective b = new CpuCollective(CollectiveConfig.of(2), plan)) {
      Reporter reporter = new Reporter(b, id, sink);
      long t0 = System.nanoTime();
      b.start();
      at(t0, 600);
      long incBefore = b.incarnation(1);
      long before = read(b, 1).calls();
      List<CounterSnapshot> first = reporter.reportOnce();
      at(t0, 1_800);
      List<CounterSnapshot> second = reporter.reportOnce();
      Counters r1 = read(b, 1);
      Counters r0 = read(b, 0);
      b.stop();
      assertThat(b.failure()).isEmpty();
      assertThat(b.incarnation(0)).isZero();
      assertThat(b.incarnation(1)).isEqualTo(1);
      if (incBefore == 0) { // the first look came before the reboot (it may not, if stalled)
        assertThat(first).extracting(CounterSnapshot::getBootId).containsOnly("boot");
        // rank 1 counts only since the reboot; rank 0 since the start (give or take the ring)
        assertThat(r1.calls())
            .isLessThanOrEqualTo(r0.calls() - before + 2 * CollectiveConfig.DEFAULT_RING_SLOTS);
      }
      assertThat(r1.calls()).isLessThan(r0.calls());
      assertThat(second)
          .filteredOn(s -> s.getRank() == 1)
          .extracting(CounterSnapshot::getBootId)
          .containsExactly("boot.1");
      assertThat(second)
          .filteredOn(s -> s.getRank() == 0)
          .extracting(CounterSnapshot::getBootId)
          .containsExactly("boot");
    }
  }
}
