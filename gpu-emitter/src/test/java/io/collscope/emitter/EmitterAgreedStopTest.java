package io.collscope.emitter;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.CounterBlock;
import io.collscope.counters.SnapshotReader;
import io.collscope.counters.TornSnapshotException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A backend whose ranks stopped on their own, having agreed with other processes' ranks to stop
 * (one of them asked first, {@link CollectiveBackend#stoppedAt()}), ends the emitter's run although
 * its own time has not come: its last snapshot, taken after the stop, holds the agreed last
 * collective, and the run is no failure. Real CPU ranks; only the agreement is stood in for.
 */
class EmitterAgreedStopTest {

  /** CPU ranks that "agree to stop" once rank 0 has completed {@code after} collectives. */
  private static final class AgreeingBackend implements CollectiveBackend {
    final CpuCollective ranks;
    final long after;
    volatile long agreedAt = -1;

    AgreeingBackend(CpuCollective ranks, long after) {
      this.ranks = ranks;
      this.after = after;
    }

    @Override
    public OptionalLong stoppedAt() {
      if (agreedAt < 0 && callsOfRank0() >= after) {
        try {
          ranks.stop(); // as the dispatcher stops at the agreed collective
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        long calls;
        while ((calls = callsOfRank0()) < 0) Thread.onSpinWait();
        agreedAt = calls;
      }
      return agreedAt < 0 ? OptionalLong.empty() : OptionalLong.of(agreedAt);
    }

    /** Rank 0's published calls; -1 for a torn read (the reporter retries, so does this). */
    private long callsOfRank0() {
      try {
        return new SnapshotReader(ranks.block(0)).read().calls();
      } catch (TornSnapshotException e) {
        return -1;
      }
    }

    @Override
    public String name() {
      return ranks.name();
    }

    @Override
    public String collective() {
      return ranks.collective();
    }

    @Override
    public int worldSize() {
      return ranks.worldSize();
    }

    @Override
    public void start() {
      ranks.start();
    }

    @Override
    public void stop() throws InterruptedException {
      ranks.stop();
    }

    @Override
    public CounterBlock block(int rank) {
      return ranks.block(rank);
    }

    @Override
    public boolean reports(int rank) {
      return ranks.reports(rank);
    }

    @Override
    public String device(int rank) {
      return ranks.device(rank);
    }

    @Override
    public Optional<Throwable> failure() {
      return ranks.failure();
    }
  }

  @Test
  void ranksThatAgreedToStopEndARunWithoutADurationAndTheLastSnapshotHoldsTheirLastCollective()
      throws Exception {
    List<CounterSnapshot> sent = new CopyOnWriteArrayList<>();
    ExecutorService runner = Executors.newSingleThreadExecutor();
    try (CpuCollective cpu = new CpuCollective(CollectiveConfig.of(2), FaultPlan.NONE)) {
      AgreeingBackend backend = new AgreeingBackend(cpu, 200);
      Emitter emitter =
          new Emitter(
              backend,
              Identity.of("t", "agreed-stop", "c"),
              SnapshotSink.to(sent::add),
              Duration.ofMillis(50));
      // no duration, no requestStop: before, this ran until the bound below
      Future<Emitter.Result> run = runner.submit(() -> emitter.run(null));
      Emitter.Result result = run.get(60, TimeUnit.SECONDS);
      assertThat(result.failure()).isEmpty();
      long agreed = backend.agreedAt;
      assertThat(agreed).isGreaterThanOrEqualTo(200);
      CounterSnapshot last = sent.get(sent.size() - 1);
      assertThat(last.getRank()).isEqualTo(1);
      CounterSnapshot lastOfRank0 = sent.get(sent.size() - 2);
      assertThat(lastOfRank0.getRank()).isZero();
      assertThat(lastOfRank0.getCalls()).isEqualTo(agreed);
      assertThat(lastOfRank0.getTimeouts()).isZero();
    } finally {
      runner.shutdownNow();
    }
  }
}
