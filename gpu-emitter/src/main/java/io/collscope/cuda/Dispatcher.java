package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One thread per GPU that launches its live ranks' collectives in batches and checks each batch: no
 * wait passed its budget, and every so often the output equals the host sum. The first error stops
 * every thread and is kept as the backend's failure.
 */
final class Dispatcher {

  private static final int BATCH = 16;

  private final CollectiveConfig cfg;
  private final FaultPlan faults;
  private final CudaCollective.Options opt;
  private final RankSet ranks;
  private final Launcher launcher;
  private final AtomicReference<Throwable> failure;
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running;
  private volatile long startNanos;
  private volatile boolean started;

  Dispatcher(
      CollectiveConfig cfg,
      FaultPlan faults,
      CudaCollective.Options opt,
      RankSet ranks,
      Launcher launcher,
      AtomicReference<Throwable> failure) {
    this.cfg = cfg;
    this.faults = faults;
    this.opt = opt;
    this.ranks = ranks;
    this.launcher = launcher;
    this.failure = failure;
  }

  /**
   * Starts one thread per GPU. It launches every live rank's collective k before any rank's
   * collective k+1: streams beyond CUDA_DEVICE_MAX_CONNECTIONS share hardware queues, and a queue
   * holding rank A's k+1 ahead of rank B's k would stall A until its wait budget ran out.
   */
  void start() {
    if (running) return;
    running = true;
    startNanos = System.nanoTime();
    started = true;
    for (GpuDevice d : ranks.devices()) {
      List<RankBuffers> live = new ArrayList<>();
      for (RankBuffers r : ranks.local()) {
        if (r.device() == d && !faults.isDead(r.rank())) live.add(r);
      }
      if (live.isEmpty()) continue;
      Thread t = new Thread(() -> dispatch(d, live), "collscope-cuda-gpu-" + d.ordinal);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void dispatch(GpuDevice d, List<RankBuffers> live) {
    try {
      d.makeCurrent();
      for (long batch = 0; running; batch++) {
        if (!faults.isEmpty() && !applyFaults(live)) return;
        for (int i = 0; i < BATCH; i++) {
          for (RankBuffers r : live) launcher.collective(r, opt.instrumented());
        }
        for (RankBuffers r : live) {
          cuStreamSynchronize(r.stream());
          checkAbort(r);
          if (batch % opt.checkEveryBatches() == 0) verifyOutput(r);
        }
      }
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
      running = false;
    }
  }

  /** Run time since {@link #start()}; 0 before it. */
  long elapsedNanos() {
    return started ? System.nanoTime() - startNanos : 0;
  }

  /**
   * Between two batches (every live stream idle): drops the ranks whose dead-rank time has come
   * (they launch nothing more; CudaCollective.reports turns false with the same clock) and updates
   * the others' fault tables for the faults whose active interval started or ended. The resolution
   * of a timed fault on this backend is one batch ({@value #BATCH} collectives). False when no live
   * rank is left.
   */
  private boolean applyFaults(List<RankBuffers> live) {
    long t = elapsedNanos();
    live.removeIf(r -> faults.isDeadAt(r.rank(), t));
    for (RankBuffers r : live) r.updateFaults(faults, t);
    return !live.isEmpty();
  }

  /** Asks every thread to finish its batch and waits for them. */
  void stop() throws InterruptedException {
    running = false;
    for (Thread t : threads) t.join();
    threads.clear();
  }

  /**
   * Throws if one of the rank's collectives aborted (a wait passed its budget, or was cut short by
   * a peer's abort); the rank's stream is idle.
   */
  void checkAbort(RankBuffers r) {
    long collective = r.stateWord(OsarLayout.S_ABORT);
    if (collective != 0) {
      throw new IllegalStateException(
          "rank "
              + r.rank()
              + ": a wait passed its budget of "
              + cfg.waitBudgetNanos() / 1_000_000
              + " ms, or a peer had aborted, in collective "
              + collective
              + " (timeout counted); a peer is dead or far too slow");
    }
  }

  /**
   * Throws unless the rank's output equals the host sum of the collective it belongs to (every
   * collective reduces different data: {@link CollectiveConfig#inputValue}); the rank's stream is
   * idle.
   */
  void verifyOutput(RankBuffers r) {
    long seq = r.lastCompleted();
    if (seq < 1) {
      throw new IllegalStateException("rank " + r.rank() + ": no collective has completed");
    }
    float[] got = r.readOutput();
    int bad = CollectiveConfig.firstMismatch(got, cfg.worldSize(), seq);
    if (bad >= 0) {
      throw new IllegalStateException(
          "rank "
              + r.rank()
              + " collective "
              + seq
              + " element "
              + bad
              + ": all-reduce sum "
              + got[bad]
              + " != host sum "
              + CollectiveConfig.expectedSum(cfg.worldSize(), seq, bad));
    }
  }
}
