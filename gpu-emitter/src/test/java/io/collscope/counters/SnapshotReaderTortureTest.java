package io.collscope.counters;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A writer publishes as fast as it can while a reader takes millions of snapshots. The writer keeps
 * an invariant across every field (each one a distinct function of the same k), so a snapshot
 * mixing two publications is detected. One torn snapshot accepted fails the test.
 */
class SnapshotReaderTortureTest {

  private static final int WORLD = 8;
  private static final int BUCKETS = CounterBlock.DEFAULT_HISTOGRAM_BUCKETS;

  /** The start-up clock rate published with totals of k. */
  private static long cps(long k) {
    return 1_000_000_000L + k;
  }

  /** Every field is a function of k; a torn read mixes two k's and breaks this. */
  private static void fill(RankTotals a, long k) {
    for (Counter c : Counter.values()) a.set(c, (c.ordinal() + 2) * k);
    for (Phase p : Phase.values()) a.setCycles(p, (p.ordinal() + 3) * 7 * k);
    for (int p = 0; p < WORLD; p++) {
      a.peerWaitCycles()[p] = (p + 17) * k;
      a.peerArrivedLast()[p] = k + p;
    }
    for (int i = 0; i < BUCKETS; i++) {
      a.histogram()[i] = k * 31 + i;
    }
  }

  /** Returns null when consistent, else which field disagrees with calls. */
  private static String inconsistency(Counters c) {
    long k = c.calls() / (Counter.CALLS.ordinal() + 2);
    if (c.cyclesPerSecond() != cps(k)) return "cyclesPerSecond";
    for (Counter f : Counter.values()) if (c.get(f) != (f.ordinal() + 2) * k) return f.fieldName();
    for (Phase p : Phase.values())
      if (c.cycles(p) != (p.ordinal() + 3) * 7 * k) return p.cyclesField();
    for (int p = 0; p < WORLD; p++) {
      if (c.peerWaitCycles()[p] != (p + 17) * k) return "peerWait[" + p + "]";
      if (c.peerArrivedLast()[p] != k + p) return "peerLast[" + p + "]";
    }
    for (int i = 0; i < BUCKETS; i++) {
      if (c.histogram()[i] != k * 31 + i) return "histogram[" + i + "]";
    }
    return null;
  }

  @Test
  void millionsOfSnapshotsUnderAFullSpeedWriterAreNeverTorn() throws Exception {
    CounterBlock block = CounterBlock.allocate(WORLD, BUCKETS);
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              RankTotals a = new RankTotals(WORLD, BUCKETS);
              java.util.SplittableRandom rnd = new java.util.SplittableRandom(7);
              long k = 0;
              while (!stop.get()) {
                fill(a, ++k);
                block.publish(a, cps(k));
                // A collective takes at least a few microseconds; a writer that publishes
                // back-to-back with no work in between starves any seqlock reader (tested
                // below). A random 0..~1 us gap makes the reader's copy sometimes fit between
                // publications and sometimes straddle one: both paths are exercised.
                for (int spin = rnd.nextInt(64); spin > 0; spin--) {
                  Thread.onSpinWait();
                }
                // On a loaded 2-core machine the reader can be descheduled for a whole time slice
                // while the writer keeps its core; a real emitter also sleeps between batches.
                // Every 4096 publications the writer pauses briefly, so a reader that lost its
                // core gets one clean window instead of failing on a million straddled reads.
                if ((k & 4095) == 0) java.util.concurrent.locks.LockSupport.parkNanos(20_000);
              }
            },
            "torture-writer");
    writer.start();
    SnapshotReader reader = new SnapshotReader(block, 1_000_000);
    long accepted = 0;
    long lastCalls = 0;
    long distinct = 0;
    try {
      for (int i = 0; i < 2_000_000; i++) {
        Counters c = reader.read();
        if (c.version() == 0) {
          assertThat(c.calls()).isZero(); // before the first publication: the zeroed block
          continue;
        }
        String bad = inconsistency(c);
        assertThat(bad).as("torn snapshot accepted at read %d (calls=%d)", i, c.calls()).isNull();
        assertThat(c.calls()).as("monotonic").isGreaterThanOrEqualTo(lastCalls);
        assertThat(c.version() % 2).isZero();
        if (c.calls() != lastCalls) distinct++;
        lastCalls = c.calls();
        accepted++;
      }
      System.out.printf(
          "torture: %d snapshots, %d distinct publications, %d retries%n",
          accepted, distinct, reader.retries());
    } finally {
      stop.set(true);
      writer.join();
    }
    assertThat(accepted).isGreaterThan(1_900_000);
    // ...and the lock really did turn reads away.
    assertThat(reader.retries()).isPositive();
    // The reader really raced the writer: it saw many different publications.
    assertThat(distinct).isGreaterThan(1_000);
  }

  /**
   * Negative control: the same invariant catches torn reads when the sequence lock is ignored, so
   * the test above can fail. Needs two CPUs for the writer and reader to truly overlap.
   */
  @Test
  void theInvariantDetectsTearsWhenTheLockIsIgnored() throws Exception {
    assumeThat(Runtime.getRuntime().availableProcessors()).isGreaterThanOrEqualTo(2);
    CounterBlock block = CounterBlock.allocate(WORLD, BUCKETS);
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              RankTotals a = new RankTotals(WORLD, BUCKETS);
              long k = 0;
              while (!stop.get()) {
                fill(a, ++k);
                block.publish(a, cps(k));
              }
            });
    writer.start();
    long torn = 0;
    try {
      for (int i = 0; i < 50_000_000 && torn == 0; i++) {
        Counters c = UnlockedRead.read(block);
        if (c.calls() > 0 && inconsistency(c) != null) torn++;
      }
    } finally {
      stop.set(true);
      writer.join();
    }
    assertThat(torn).as("unsynchronized reads of a running writer tear").isPositive();
  }

  @Test
  void aWriterThatNeverPausesYieldsAnErrorNotATornSnapshot() {
    CounterBlock block = CounterBlock.allocate(2, 4);
    // Simulate a writer stuck mid-publication: the lock stays odd.
    CounterBlock.LONGS.setRelease(block.buffer(), CounterBlock.OFF_SEQLOCK, 1L);
    SnapshotReader reader = new SnapshotReader(block, 100);
    org.assertj.core.api.Assertions.assertThatThrownBy(reader::read)
        .isInstanceOf(TornSnapshotException.class)
        .hasMessageContaining("101 attempts");
    assertThat(reader.retries()).isEqualTo(100);
  }

  @Test
  void headerRoundTripsThroughAttach() {
    CounterBlock block = CounterBlock.allocate(4, 40);
    CounterBlock again = CounterBlock.attach(block.buffer());
    assertThat(again.worldSize()).isEqualTo(4);
    assertThat(again.buckets()).isEqualTo(40);
    assertThat(CounterBlock.sizeOf(4, 40) % 128).isZero();
  }

  @Test
  void histogramBucketsAreLog2() {
    assertThat(RankTotals.bucketOf(0, 40)).isZero();
    assertThat(RankTotals.bucketOf(1, 40)).isZero();
    assertThat(RankTotals.bucketOf(2, 40)).isEqualTo(1);
    assertThat(RankTotals.bucketOf(1023, 40)).isEqualTo(9);
    assertThat(RankTotals.bucketOf(1024, 40)).isEqualTo(10);
    assertThat(RankTotals.bucketOf(Long.MAX_VALUE, 40)).isEqualTo(39);
  }
}
