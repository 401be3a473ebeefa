package io.collscope.collective;

import io.collscope.counters.CounterBlock;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

/**
 * N ranks as threads running a real one-shot all-reduce (sum, fp32) over shared memory, with the
 * kernel's phases and counters:
 *
 * <ol>
 *   <li>guard — wait until every peer has acked the slot this collective reuses (ring of slots);
 *   <li>copy — input into this rank's slot;
 *   <li>publish — until this rank's flag (= collective sequence number) is visible to peers;
 *   <li>wait — from this rank's publication until every peer's flag is seen, billed whole to the
 *       peer(s) that gated it; each peer's lateness is counted too (see counters/README.md);
 *   <li>reduce — sum every rank's slot, ack the slot, check the result.
 * </ol>
 *
 * Waits are bounded ({@link Backoff}); a wait past its budget aborts the collective and counts a
 * timeout. Timestamps come from {@link System#nanoTime()}, so cycles_per_second is 1e9.
 */
public final class CpuCollective implements CollectiveBackend {

  private static final long CPU_CYCLES_PER_SECOND = 1_000_000_000L;

  /** Ack timestamps kept per rank; must exceed twice the ring so delayed views stay valid. */
  private static final int ACK_HISTORY = 64;

  private final CollectiveConfig cfg;
  private final FaultPlan faults;
  private final int n;
  private final float[][][] slots; // [rank][slot][element]
  private final long[][] publishNanos; // [rank][slot]: when the flag was set
  private final AtomicLongArray flags; // [rank]: last published sequence
  private final AtomicLongArray acks; // [rank]: last sequence fully reduced
  private final AtomicLongArray ackNanos; // [rank * ACK_HISTORY + seq % ACK_HISTORY]
  private final CounterBlock[] blocks;
  private final List<Thread> threads = new ArrayList<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  // by rank: 2 * incarnation, odd while a reboot-rank fault restarts the rank's counters
  private final AtomicLongArray incarnation;
  private volatile boolean running;
  private volatile long startNanos;
  private volatile boolean started;

  public CpuCollective(CollectiveConfig cfg, FaultPlan faults) {
    if (cfg.ringSlots() * 2 >= ACK_HISTORY) {
      throw new ConfigException(
          "ringSlots",
          "must be < " + ACK_HISTORY / 2 + " on the CPU backend, got " + cfg.ringSlots());
    }
    this.cfg = cfg;
    this.faults = faults;
    this.n = cfg.worldSize();
    this.slots = new float[n][cfg.ringSlots()][cfg.elements()];
    this.publishNanos = new long[n][cfg.ringSlots()];
    this.flags = new AtomicLongArray(n);
    this.acks = new AtomicLongArray(n);
    this.ackNanos = new AtomicLongArray(n * ACK_HISTORY);
    this.blocks = new CounterBlock[n];
    this.incarnation = new AtomicLongArray(n);
    for (int r = 0; r < n; r++) {
      blocks[r] = CounterBlock.allocate(n, cfg.histogramBuckets());
    }
  }

  @Override
  public String name() {
    return "cpu";
  }

  @Override
  public String collective() {
    return "allreduce_oneshot_f32";
  }

  @Override
  public int worldSize() {
    return n;
  }

  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    running = true;
    startNanos = System.nanoTime();
    started = true;
    for (int r = 0; r < n; r++) {
      if (faults.isDead(r)) {
        continue;
      }
      Rank rank = new Rank(r);
      Thread t = new Thread(rank::run, "collscope-cpu-rank-" + r);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  @Override
  public synchronized void stop() throws InterruptedException {
    running = false;
    for (Thread t : threads) {
      t.join();
    }
    threads.clear();
  }

  @Override
  public CounterBlock block(int rank) {
    return blocks[rank];
  }

  @Override
  public boolean reports(int rank) {
    return !faults.isDeadAt(rank, elapsedNanos());
  }

  /** Run time since {@link #start()}; 0 before it. */
  private long elapsedNanos() {
    return started ? System.nanoTime() - startNanos : 0;
  }

  /** Negative while a reboot-rank fault restarts the rank's counters. */
  @Override
  public long incarnation(int rank) {
    long s = incarnation.get(rank);
    return (s & 1) != 0 ? -1 : s >> 1;
  }

  @Override
  public String device(int rank) {
    return "cpu";
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure.get());
  }

  private boolean isRunning() {
    return running;
  }

  /** One rank's loop; all its state is thread-confined except the shared ring. */
  private final class Rank {
    private final int r;
    private RankTotals acc; // replaced by a reboot-rank fault
    private final float[] input;
    private final float[] output;
    private final boolean[] seen;
    private final long[] seenAt;
    // State of the wait in progress (thread-confined), read by pollPeers.
    private int lastGroup;
    private int remaining;
    private long lastArrival;
    private int polls;
    private long pollSeq;
    private int pollSlot;
    private final long[] linkDelay;
    private long ackDelay;
    // injected faults
    private final boolean slowLinks;
    private final long deadAt;
    private final long[] reboots;
    private int nextReboot;

    Rank(int r) {
      this.r = r;
      this.acc = new RankTotals(n, cfg.histogramBuckets());
      this.input = new float[cfg.elements()];
      this.output = new float[cfg.elements()];
      this.seen = new boolean[n];
      this.seenAt = new long[n];
      this.linkDelay = new long[n];
      this.slowLinks = faults.slowsLinksTo(r);
      this.deadAt = faults.deadAtNanos(r);
      this.reboots = faults.rebootsNanos(r);
    }

    void run() {
      try {
        for (long seq = 1; running; seq++) {
          long elapsed = System.nanoTime() - startNanos;
          if (elapsed >= deadAt) {
            return; // dead-rank=R@T: stops running (and, by reports(), reporting)
          }
          if (nextReboot < reboots.length && elapsed >= reboots[nextReboot]) {
            nextReboot++;
            reboot();
          }
          collective(seq, elapsed);
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
        running = false;
      }
    }

    /**
     * reboot-rank: the emitter restarts, so its counters start again from zero under a new
     * incarnation. The incarnation is odd while the zeroed totals are published: a reporter that
     * reads it before and after a block read never pairs a block with the wrong incarnation.
     */
    private void reboot() {
      incarnation.incrementAndGet(r);
      acc = new RankTotals(n, cfg.histogramBuckets());
      blocks[r].publish(acc, CPU_CYCLES_PER_SECOND);
      incarnation.incrementAndGet(r);
    }

    /** Collective {@code seq}, started {@code elapsed} into the run (for timed faults). */
    private void collective(long seq, long elapsed) {
      // Work before the collective (compute, launch): not part of any phase.
      for (int i = 0; i < input.length; i++) {
        input[i] = CollectiveConfig.inputValue(r, seq, i);
      }
      Backoff.delay(faults.arrivalDelayNanos(r, seq, elapsed));
      ackDelay = faults.ackDelayNanos(r, seq, elapsed);
      if (slowLinks) {
        for (int p = 0; p < n; p++) {
          linkDelay[p] = faults.linkDelayNanos(p, r, seq, elapsed);
        }
      }

      int slot = (int) (seq % cfg.ringSlots());
      long t0 = System.nanoTime();
      boolean ok =
          Backoff.await(
              () -> slotFree(seq), t0, cfg.waitBudgetNanos(), CpuCollective.this::isRunning);
      long t1 = System.nanoTime();
      acc.addCycles(Phase.GUARD, t1 - t0);
      if (!ok) {
        abort(t0, t1);
        return;
      }

      System.arraycopy(input, 0, slots[r][slot], 0, input.length);
      Backoff.delay(faults.copyDelayNanos(r, seq, elapsed));
      long t2 = System.nanoTime();
      acc.addCycles(Phase.COPY, t2 - t1);

      Backoff.delay(faults.publishDelayNanos(r, seq, elapsed));
      publishNanos[r][slot] = System.nanoTime();
      flags.setRelease(r, seq);
      long t3 = System.nanoTime();
      acc.addCycles(Phase.PUBLISH, t3 - t2);

      ok = awaitPeers(seq, slot, t3);
      long t4 = System.nanoTime();
      acc.addCycles(Phase.WAIT, t4 - t3);
      if (!ok) {
        abort(t0, t4);
        return;
      }

      java.util.Arrays.fill(output, 0f);
      for (int p = 0; p < n; p++) {
        float[] src = slots[p][slot];
        for (int i = 0; i < output.length; i++) {
          output[i] += src[i];
        }
      }
      ackNanos.set(r * ACK_HISTORY + (int) (seq % ACK_HISTORY), System.nanoTime());
      acks.setRelease(r, seq);
      long t5 = System.nanoTime();
      acc.addCycles(Phase.REDUCE, t5 - t4);

      int bad = CollectiveConfig.firstMismatch(output, n, seq);
      if (bad >= 0) {
        throw new IllegalStateException(
            "rank "
                + r
                + " seq "
                + seq
                + " element "
                + bad
                + ": sum "
                + output[bad]
                + " != "
                + CollectiveConfig.expectedSum(n, seq, bad));
      }
      acc.add(Counter.CALLS, 1);
      acc.add(Counter.BYTES, 4L * input.length);
      finish(t0, t5);
    }

    /** Every peer has acked the sequence that last used this slot (as seen by this rank). */
    private boolean slotFree(long seq) {
      long needed = seq - cfg.ringSlots();
      if (needed < 1) {
        return true;
      }
      long now = ackDelay > 0 ? System.nanoTime() : 0;
      for (int p = 0; p < n; p++) {
        if (p == r) continue;
        if (acks.getAcquire(p) < needed) return false;
        if (ackDelay > 0
            && ackNanos.get(p * ACK_HISTORY + (int) (needed % ACK_HISTORY)) + ackDelay > now) {
          return false;
        }
      }
      return true;
    }

    /**
     * Waits for every peer's flag. Each peer's lateness is the time from this rank's publication
     * until its flag was seen; the wait itself is billed whole to the peer(s) that gated it — those
     * first seen in the poll pass that ended it (which of them was last cannot be told, so they
     * share it equally: billing it to the first in index order would bias the matrix towards low
     * ranks).
     */
    private boolean awaitPeers(long seq, int slot, long start) {
      java.util.Arrays.fill(seen, false);
      seen[r] = true;
      remaining = n - 1;
      polls = 0;
      lastArrival = start;
      pollSeq = seq;
      pollSlot = slot;
      boolean ok =
          Backoff.await(
              this::pollPeers, start, cfg.waitBudgetNanos(), CpuCollective.this::isRunning);
      long end = ok ? lastArrival : System.nanoTime();
      int gaters = ok ? lastGroup : remaining;
      for (int p = 0; p < n; p++) {
        if (p == r) continue;
        // A peer still missing at a timeout was late by the whole wait, and gated it.
        boolean gated = ok ? seenAt[p] == end : !seen[p];
        acc.recordLateness(p, (seen[p] ? seenAt[p] : end) - start);
        if (gated) {
          acc.peerWaitCycles()[p] += (end - start) / gaters;
          if (!ok || polls > 1) acc.peerArrivedLast()[p]++;
        }
      }
      if (ok && polls == 1) acc.peerArrivedLast()[r]++; // every peer was already there
      return ok;
    }

    /** One poll round of {@link #awaitPeers}: true once every peer's flag has been seen. */
    private boolean pollPeers() {
      polls++;
      int fresh = 0;
      long now = System.nanoTime();
      for (int p = 0; p < n; p++) {
        if (seen[p] || flags.getAcquire(p) < pollSeq) continue;
        if (linkDelay[p] > 0 && publishNanos[p][pollSlot] + linkDelay[p] > now) continue;
        seen[p] = true;
        seenAt[p] = now;
        fresh++;
      }
      if (fresh > 0) {
        remaining -= fresh;
        lastArrival = now;
        lastGroup = fresh;
      }
      return remaining == 0;
    }

    private void abort(long t0, long tEnd) {
      if (!running) {
        return; // stopping, not a timeout
      }
      acc.add(Counter.TIMEOUTS, 1);
      acc.add(Counter.CALLS, 1);
      finish(t0, tEnd);
    }

    /**
     * Counts the collective's latency and publishes. Cycles are nanoseconds here, so the clock
     * samples are the latency on both scales: their ratio is exactly 1e9 cycles per second.
     */
    private void finish(long t0, long tEnd) {
      acc.recordLatency(tEnd - t0);
      acc.add(Counter.CLOCK_NS, tEnd - t0);
      acc.add(Counter.CLOCK_CYCLES, tEnd - t0);
      blocks[r].publish(acc, CPU_CYCLES_PER_SECOND);
    }
  }
}
