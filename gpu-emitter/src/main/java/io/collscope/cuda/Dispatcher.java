package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One thread per GPU that launches its live ranks' collectives in batches and checks each batch: no
 * wait passed its budget, and every so often the output equals the host sum. The first error stops
 * every thread and is kept as the backend's failure.
 *
 * <p>The threads stop after the same collective ({@link StopAgreement}): {@link #stop()} raises a
 * request, and each thread launches on until all have declared, to the same last collective. With
 * one rank per process ({@link IpcPlacement}) the agreement is with the other ranks' processes, and
 * a peer's request stops this one too ({@link #agreedAt()}); with ranks on several GPUs of this
 * process, between its threads. A single thread stops after its batch.
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
  // one rank per process: this rank's agreement with the other processes' ranks; else null
  private final StopAgreement acrossProcesses;
  // what each thread of the current start() agrees with (null: a thread that stops alone)
  private volatile StopAgreement[] agreements = new StopAgreement[0];

  /**
   * How long a thread that stops waits for the others of this process to declare: they only finish
   * a batch, so this bounds a wedged GPU, never a normal stop.
   */
  private static final Duration IN_PROCESS_TIMEOUT = Duration.ofSeconds(60);

  Dispatcher(
      CollectiveConfig cfg,
      FaultPlan faults,
      CudaCollective.Options opt,
      RankSet ranks,
      Launcher launcher,
      AtomicReference<Throwable> failure,
      StopAgreement acrossProcesses) {
    this.acrossProcesses = acrossProcesses;
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
    List<GpuDevice> devices = new ArrayList<>();
    List<List<RankBuffers>> lives = new ArrayList<>();
    for (GpuDevice d : ranks.devices()) {
      List<RankBuffers> live = new ArrayList<>();
      for (RankBuffers r : ranks.local()) {
        if (r.device() == d && !faults.isDead(r.rank())) live.add(r);
      }
      if (!live.isEmpty()) {
        devices.add(d);
        lives.add(live);
      } else if (acrossProcesses != null) {
        acrossProcesses.leave(); // an injected dead rank: nobody waits on it
      }
    }
    StopAgreement[] a;
    if (acrossProcesses != null) {
      a = new StopAgreement[] {acrossProcesses}; // one rank, one GPU, at most one thread
    } else if (devices.size() > 1) {
      a = StopAgreement.inProcess(devices.size(), IN_PROCESS_TIMEOUT);
    } else {
      a = new StopAgreement[1];
    }
    agreements = a;
    for (int i = 0; i < devices.size(); i++) {
      GpuDevice d = devices.get(i);
      List<RankBuffers> live = lives.get(i);
      StopAgreement mine = a[i];
      Thread t = new Thread(() -> dispatch(d, live, mine), "collscope-cuda-gpu-" + d.ordinal);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void dispatch(GpuDevice d, List<RankBuffers> live, StopAgreement agreement) {
    boolean agreed = false;
    try {
      d.makeCurrent();
      long launched = 0;
      for (long batch = 0; ; batch++) {
        if (!running) return; // another thread failed, or stop() of a thread that stops alone
        if (!faults.isEmpty() && !applyFaults(live)) return;
        StopAgreement.NoAgreementException noAgreement = null;
        long end;
        try {
          end = agreement != null ? agreement.nextBatchEnd(launched, BATCH) : launched + BATCH;
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
   * The collective every rank of the communicator stopped after, once they agreed to stop (this
   * rank or a peer asked); -1 while running, and always without an agreement.
   */
  long agreedAt() {
    return acrossProcesses == null ? -1 : acrossProcesses.agreedAt();
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
   * Asks every thread to finish and waits for them: after the collective they agreed on (bounded:
   * see {@link StopAgreement}), or, for a thread that stops alone, after its batch. A later {@link
   * #start()} starts afresh.
   */
  void stop() throws InterruptedException {
    StopAgreement[] a = agreements;
    if (a.length > 0 && a[0] != null) {
      a[0].request(); // every participant reads every request
    } else {
      running = false;
    }
    if (acrossProcesses != null && !started) acrossProcesses.leave(); // never launched
    for (Thread t : threads) t.join();
    threads.clear();
    running = false;
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
