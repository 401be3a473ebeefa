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
 *
 * <p>With a {@link StopAgreement} (one rank per process, {@link IpcPlacement}) a stop is agreed
 * with the other ranks' processes: {@link #stop()} raises this rank's request and the thread
 * launches on until every rank has declared, to the same last collective everywhere; a peer's
 * request stops this one too ({@link #agreedAt()}). Without one, {@link #stop()} ends each thread
 * after its batch.
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
  private final StopAgreement agreement; // null: every rank is in this process

  Dispatcher(
      CollectiveConfig cfg,
      FaultPlan faults,
      CudaCollective.Options opt,
      RankSet ranks,
      Launcher launcher,
      AtomicReference<Throwable> failure,
      StopAgreement agreement) {
    this.agreement = agreement;
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
      if (live.isEmpty()) {
        if (agreement != null) agreement.leave(); // an injected dead rank: nobody waits on it
        continue;
      }
      Thread t = new Thread(() -> dispatch(d, live), "collscope-cuda-gpu-" + d.ordinal);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void dispatch(GpuDevice d, List<RankBuffers> live) {
    boolean agreed = false;
    try {
      d.makeCurrent();
      long launched = 0;
      for (long batch = 0; ; batch++) {
        if (!faults.isEmpty() && !applyFaults(live)) return;
        StopAgreement.NoAgreementException noAgreement = null;
        long end;
        try {
          end = nextBatchEnd(launched);
        } catch (StopAgreement.NoAgreementException e) {
          // a peer that never agrees is dead or hung: launch on as without an agreement, so its
          // absence is what it always was, a wait that runs out its budget and is counted
          noAgreement = e;
          end = launched + BATCH;
        }
        if (end == StopAgreement.STOP) {
          agreed = true;
          return;
        }
        for (long s = launched; s < end; s++) {
          for (RankBuffers r : live) launcher.collective(r, opt.instrumented());
        }
        launched = end;
        for (RankBuffers r : live) {
          cuStreamSynchronize(r.stream());
          try {
            checkAbort(r);
          } catch (IllegalStateException e) {
            if (noAgreement == null) throw e;
            throw new IllegalStateException(noAgreement.getMessage() + "; " + e.getMessage(), e);
          }
          if (batch % opt.checkEveryBatches() == 0) verifyOutput(r);
        }
        if (noAgreement != null) throw noAgreement;
      }
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
      running = false;
    } finally {
      if (agreement != null && !agreed) agreement.leave();
    }
  }

  /**
   * Between two batches: how many collectives to have launched after the next one, or {@link
   * StopAgreement#STOP}.
   */
  private long nextBatchEnd(long launched) throws InterruptedException {
    if (agreement != null) return agreement.nextBatchEnd(launched, BATCH);
    return running ? launched + BATCH : StopAgreement.STOP;
  }

  /**
   * The collective every rank of the communicator stopped after, once they agreed to stop (this
   * rank or a peer asked); -1 while running, and always without an agreement.
   */
  long agreedAt() {
    return agreement == null ? -1 : agreement.agreedAt();
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

  /**
   * Asks every thread to finish and waits for them: after its batch, or with an agreement after the
   * collective every rank agreed on (bounded: see {@link StopAgreement}).
   */
  void stop() throws InterruptedException {
    if (agreement != null) {
      if (started) agreement.request();
      else agreement.leave(); // never launched: no peer waits on this rank's agreement
    } else {
      running = false;
    }
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
