package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuIpcGetMemHandle;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.IntPredicate;
import jcuda.driver.CUipcMemHandle;

/**
 * One rank in this process, on one GPU, its peers in other processes: the ranks swap CUDA IPC
 * handles of their ring slots and sync words through an {@link IpcRendezvous} and map each other's,
 * and agree on the last collective when one stops through a {@link StopAgreement} in the same
 * directory. Each rank removes its own rendezvous files when it closes.
 */
final class IpcPlacement implements Placement {

  private final RankSet ranks;
  private final RankBuffers me;
  private final FaultPlan faults;
  private final Path rendezvous;
  private final Duration timeout;
  private final StopAgreement agreement;
  private final IntPredicate gone;

  private IpcPlacement(
      RankSet ranks,
      RankBuffers me,
      FaultPlan faults,
      Path rendezvous,
      Duration timeout,
      StopAgreement agreement,
      IntPredicate gone) {
    this.ranks = ranks;
    this.me = me;
    this.faults = faults;
    this.rendezvous = rendezvous;
    this.timeout = timeout;
    this.agreement = agreement;
    this.gone = gone;
  }

  /**
   * Allocates rank {@code rank} on GPU {@code device} and returns once every rank's process has
   * mapped every other's memory, or throws within {@code timeout}.
   */
  static IpcPlacement open(
      CollectiveConfig cfg,
      FaultPlan faults,
      CudaCollective.Options opt,
      int rank,
      int device,
      Path rendezvous,
      Duration timeout) {
    Objects.requireNonNull(rendezvous, "rendezvous");
    int n = cfg.worldSize();
    RankSet ranks = new RankSet(n);
    try {
      GpuDevice d = ranks.device(device);
      // The other processes' ranks are not known until the rendezvous, and the blocks size this
      // rank's memory before it: plan for the ranks that must share a GPU when there are fewer
      // GPUs than ranks, and check the plan once every rank has said where it runs.
      int sharing = (n + CudaProbe.gpuCount() - 1) / CudaProbe.gpuCount();
      int blocks =
          Placement.blocksPerRank(
              opt.blocksPerRank(), (long) cfg.elements() * opt.dtype().bytes, d.sms, sharing);
      d.requireResident(1, blocks);
      RankBuffers me = ranks.add(new RankBuffers(rank, d, blocks, cfg, opt));
      CUipcMemHandle slots = new CUipcMemHandle();
      CUipcMemHandle sync = new CUipcMemHandle();
      cuIpcGetMemHandle(slots, me.slots());
      cuIpcGetMemHandle(sync, me.sync());
      // before the handles: a peer that sees them finds this rank's stop words
      StopAgreement agreement = StopAgreement.create(rendezvous, rank, n, timeout);
      IpcRendezvous rv = new IpcRendezvous(rendezvous, rank, n, timeout);
      rv.publish(
          new IpcRendezvous.Published(
              rank,
              ProcessHandle.current().pid(),
              device,
              IpcRendezvous.bytes(slots),
              IpcRendezvous.bytes(sync)));
      IpcRendezvous.Published[] all = rv.awaitAll();
      IntPredicate gone = processGone(all);
      agreement.join(q -> !faults.isDead(q), gone);
      // every process sees the same records, so all refuse alike (before any maps a peer)
      d.requireResident((int) Arrays.stream(all).filter(p -> p.device() == device).count(), blocks);
      for (int q = 0; q < n; q++) {
        // the mapping lives in this process's context
        if (q != rank) ranks.add(IpcPeer.open(q, d, all[q]));
      }
      me.writeParams(faults, ranks);
      rv.ready();
      rv.awaitReady();
      return new IpcPlacement(ranks, me, faults, rendezvous, timeout, agreement, gone);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      release(ranks, rendezvous, rank);
      throw new IllegalStateException("interrupted during the rendezvous", e);
    } catch (RuntimeException | Error e) {
      release(ranks, rendezvous, rank);
      throw e;
    }
  }

  /**
   * Whether rank q's process has ended, by the pid it published. Only for the processes visible
   * here at the rendezvous: in another pid namespace (a container of its own) a pid says nothing,
   * and such a peer is given the full timeout instead.
   */
  private static IntPredicate processGone(IpcRendezvous.Published[] all) {
    boolean[] visible = new boolean[all.length];
    for (int q = 0; q < all.length; q++) {
      visible[q] = ProcessHandle.of(all[q].pid()).map(ProcessHandle::isAlive).orElse(false);
    }
    return q ->
        visible[q] && !ProcessHandle.of(all[q].pid()).map(ProcessHandle::isAlive).orElse(false);
  }

  @Override
  public RankSet ranks() {
    return ranks;
  }

  @Override
  public StopAgreement stopAgreement() {
    return agreement;
  }

  /**
   * Peers' kernels may still be reducing out of this rank's slots when this one is done: waits
   * (bounded by the rendezvous timeout) until every live peer has acked this rank's last
   * collective, or aborted (a peer that aborted acks nothing more and reads nothing more once its
   * aborting launch has ended), or its process is gone.
   */
  @Override
  public void awaitPeersDone() throws InterruptedException {
    me.device().makeCurrent();
    long last = me.lastCompleted();
    long deadline = System.nanoTime() + timeout.toNanos();
    for (IpcPeer peer : ranks.peers()) {
      if (faults.isDead(peer.rank())) continue;
      while (peer.ack() < last
          && !peer.aborted()
          && !gone.test(peer.rank())
          && System.nanoTime() <= deadline) {
        Thread.sleep(5);
      }
    }
  }

  @Override
  public void close() {
    release(ranks, rendezvous, me.rank());
  }

  private static void release(RankSet ranks, Path rendezvous, int rank) {
    ranks.close();
    // each rank removes its own files; every peer read them before the ready barrier
    IpcRendezvous.clean(rendezvous, rank);
    StopAgreement.clean(rendezvous, rank);
  }
}
