package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stop agreement of one-rank-per-process communicators, without a GPU: each rank is a thread
 * with its own {@link StopAgreement} over the same directory (the mapped files, as between
 * processes), and its "kernels" are simulated the way the all-reduce couples ranks: a batch up to
 * collective k completes only once every other rank has launched k, and otherwise runs out its
 * budget, which is counted as a timeout. Without the agreement a rank that stops first leaves its
 * peer's batch to time out; with it every rank stops after the same collective, none timed out.
 */
class StopAgreementTest {

  private static final int BATCH = 16;
  private static final Duration TIMEOUT = Duration.ofSeconds(20);

  /** The simulated wait budget of a batch: far beyond what a batch needs here. */
  private static final long BUDGET_NANOS = Duration.ofSeconds(10).toNanos();

  @TempDir Path dir;

  /** One simulated rank's dispatcher: what it ended with. */
  private static final class SimRank implements Runnable {
    final int rank;
    final StopAgreement agreement;
    final AtomicLongArray launchedBy; // what each rank's kernels have been launched up to
    final long askAfter; // ask to stop once this many collectives completed; <0: never
    final CountDownLatch ready;
    final boolean viaFiles;
    long launched;
    long timeouts;
    long stoppedAt = -2;
    Throwable failure;

    SimRank(
        int rank,
        StopAgreement agreement,
        AtomicLongArray launchedBy,
        long askAfter,
        CountDownLatch ready,
        boolean viaFiles) {
      this.viaFiles = viaFiles;
      this.rank = rank;
      this.agreement = agreement;
      this.launchedBy = launchedBy;
      this.askAfter = askAfter;
      this.ready = ready;
    }

    @Override
    public void run() {
      try {
        if (viaFiles) agreement.join(q -> true, q -> false);
        ready.countDown();
        ready.await();
        while (true) {
          if (askAfter >= 0 && launched >= askAfter) agreement.request();
          long end = agreement.nextBatchEnd(launched, BATCH);
          if (end == StopAgreement.STOP) {
            stoppedAt = agreement.agreedAt();
            return;
          }
          launchedBy.set(rank, end);
          if (!completes(end)) {
            timeouts++;
            agreement.leave();
            return;
          }
          launched = end;
        }
      } catch (Throwable t) {
        failure = t;
        agreement.leave();
      }
    }

    /** The batch's last collective waits on every peer's launch of it, within the budget. */
    private boolean completes(long end) {
      long deadline = System.nanoTime() + BUDGET_NANOS;
      for (int q = 0; q < launchedBy.length(); q++) {
        while (launchedBy.get(q) < end) {
          if (System.nanoTime() > deadline) return false;
          Thread.yield();
        }
      }
      return true;
    }
  }

  private List<SimRank> run(long... askAfter) throws Exception {
    return run(true, askAfter);
  }

  /** Ranks of separate "processes" (files in the directory), or threads of one (in memory). */
  private List<SimRank> run(boolean viaFiles, long... askAfter) throws Exception {
    int n = askAfter.length;
    StopAgreement[] inMemory = viaFiles ? null : StopAgreement.inProcess(n, TIMEOUT);
    AtomicLongArray launchedBy = new AtomicLongArray(n);
    CountDownLatch ready = new CountDownLatch(n);
    List<SimRank> ranks = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      SimRank s =
          new SimRank(
              r,
              viaFiles ? StopAgreement.create(dir, r, n, TIMEOUT) : inMemory[r],
              launchedBy,
              askAfter[r],
              ready,
              viaFiles);
      ranks.add(s);
      threads.add(new Thread(s, "sim-rank-" + r));
    }
    for (Thread t : threads) t.start();
    for (Thread t : threads) t.join();
    return ranks;
  }

  private static void assertAllStoppedTogether(List<SimRank> ranks) {
    long s = ranks.get(0).launched;
    for (SimRank r : ranks) {
      assertThat(r.failure).as("rank %d failure", r.rank).isNull();
      assertThat(r.timeouts).as("rank %d timeouts", r.rank).isZero();
      assertThat(r.launched).as("rank %d launched", r.rank).isEqualTo(s);
      assertThat(r.stoppedAt).as("rank %d agreed", r.rank).isEqualTo(s);
    }
  }

  @Test
  void bothAskingAtOnceStopAfterTheSameCollective() throws Exception {
    for (int i = 0; i < 50; i++) {
      // at the same collective, or one batch apart: one asks while the other's batch is in flight
      List<SimRank> ranks = run(2000, 2000 + BATCH * (i % 2));
      assertAllStoppedTogether(ranks);
      assertThat(ranks.get(0).launched).isGreaterThanOrEqualTo(2000); // the first ask stops both
      cleanUp(2);
    }
  }

  @Test
  void oneAskingStopsAPeerThatWouldRunOn() throws Exception {
    // rank 1 never asks: today it would launch on and time out waiting on rank 0
    for (int i = 0; i < 50; i++) {
      List<SimRank> ranks = run(3000 + 16L * i, -1);
      assertAllStoppedTogether(ranks);
      assertThat(ranks.get(0).launched).isGreaterThanOrEqualTo(3000 + 16L * i);
      cleanUp(2);
    }
  }

  @Test
  void fourRanksOneAskingStopTogether() throws Exception {
    for (int i = 0; i < 20; i++) {
      List<SimRank> ranks = run(-1, -1, 1000 + 16L * i, -1);
      assertAllStoppedTogether(ranks);
      cleanUp(4);
    }
  }

  @Test
  void dispatcherThreadsOfOneProcessAgreeTheSameWayInMemory() throws Exception {
    for (int i = 0; i < 50; i++) {
      assertAllStoppedTogether(run(false, 1000 + 16L * i, -1));
      assertAllStoppedTogether(run(false, 500, 500 + BATCH * (i % 2)));
    }
  }

  @Test
  void aRankAskingBeforeItsPeerLaunchedAnythingStopsWithIt() throws Exception {
    for (int i = 0; i < 50; i++) {
      List<SimRank> ranks = run(0, -1);
      assertAllStoppedTogether(ranks);
      cleanUp(2);
    }
  }

  @Test
  void aPeerThatNeverDeclaresEndsTheWaitWithinTheTimeoutNamingIt() throws Exception {
    StopAgreement me = StopAgreement.create(dir, 0, 2, Duration.ofMillis(300));
    StopAgreement peer = StopAgreement.create(dir, 1, 2, Duration.ofMillis(300));
    peer.join(q -> true, q -> false); // mapped, then hangs: never reaches a batch boundary
    me.join(q -> true, q -> false);
    assertThat(me.nextBatchEnd(0, BATCH)).isEqualTo(BATCH);
    me.request();
    assertThatThrownBy(() -> me.nextBatchEnd(BATCH, BATCH))
        .isInstanceOf(StopAgreement.NoAgreementException.class)
        .hasMessageContaining("rank 0 asked to stop after collective 16 but rank 1 did not agree")
        .hasMessageContaining("neither agreed nor launched more within");
    assertThat(me.agreedAt()).isEqualTo(-1);
  }

  @Test
  void aPeerWhoseProcessIsGoneEndsTheWaitAtOnce() throws Exception {
    StopAgreement me = StopAgreement.create(dir, 0, 2, Duration.ofHours(1));
    StopAgreement.create(dir, 1, 2, Duration.ofHours(1));
    me.join(q -> true, q -> q == 1);
    me.request();
    // an hour's timeout: only the gone check can end this wait
    assertThatThrownBy(() -> me.nextBatchEnd(0, BATCH))
        .isInstanceOf(StopAgreement.NoAgreementException.class)
        .hasMessageContaining("rank 1 did not agree: its process is gone");
  }

  @Test
  void aPeerThatLeftIsNotWaitedOn() throws Exception {
    StopAgreement me = StopAgreement.create(dir, 0, 2, Duration.ofHours(1));
    StopAgreement peer = StopAgreement.create(dir, 1, 2, Duration.ofHours(1));
    peer.join(q -> true, q -> false);
    me.join(q -> true, q -> false);
    peer.leave(); // failed, or an injected dead rank
    me.request();
    assertThat(me.nextBatchEnd(0, BATCH)).isEqualTo(StopAgreement.STOP);
    assertThat(me.agreedAt()).isZero();
  }

  @Test
  void aStaleRequestOfAnEarlierRunDoesNotStopTheNextOne() throws Exception {
    StopAgreement old = StopAgreement.create(dir, 1, 2, TIMEOUT);
    old.request(); // an earlier run, killed before it removed its file
    StopAgreement me = StopAgreement.create(dir, 0, 2, TIMEOUT);
    StopAgreement peer = StopAgreement.create(dir, 1, 2, TIMEOUT);
    peer.join(q -> true, q -> false);
    me.join(q -> true, q -> false);
    assertThat(me.requested()).isFalse();
    assertThat(me.nextBatchEnd(0, BATCH)).isEqualTo(BATCH);
  }

  private void cleanUp(int n) throws Exception {
    for (int r = 0; r < n; r++) StopAgreement.clean(dir, r);
    try (var left = Files.list(dir)) {
      assertThat(left.toList()).isEmpty();
    }
  }
}
