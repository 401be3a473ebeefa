package io.collscope.cuda;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;

/**
 * Every rank in this process: emulated on one GPU (one stream each in one context) or one per GPU
 * with peer access, as {@link CudaCollective.Options#deviceOfRank()} says.
 */
final class SingleProcessPlacement implements Placement {

  private final RankSet ranks;

  private SingleProcessPlacement(RankSet ranks) {
    this.ranks = ranks;
  }

  static SingleProcessPlacement open(
      CollectiveConfig cfg, FaultPlan faults, CudaCollective.Options opt) {
    int n = cfg.worldSize();
    RankSet ranks = new RankSet(n);
    try {
      int[] perDevice = new int[CudaProbe.gpuCount()];
      for (int r = 0; r < n; r++) perDevice[opt.deviceOfRank()[r]]++;
      for (int r = 0; r < n; r++) ranks.device(opt.deviceOfRank()[r]);
      for (GpuDevice a : ranks.devices()) {
        for (GpuDevice b : ranks.devices()) {
          if (a != b) a.enablePeerAccess(b);
        }
      }
      for (int r = 0; r < n; r++) {
        GpuDevice d = ranks.device(opt.deviceOfRank()[r]);
        int onDevice = perDevice[d.ordinal];
        int blocks =
            Placement.blocksPerRank(
                opt.blocksPerRank(), (long) cfg.elements() * opt.dtype().bytes, d.sms, onDevice);
        d.requireResident(onDevice, blocks);
        ranks.add(new RankBuffers(r, d, blocks, cfg, opt));
      }
      for (RankBuffers r : ranks.local()) r.writeParams(faults, ranks);
      return new SingleProcessPlacement(ranks);
    } catch (RuntimeException | Error e) {
      ranks.close();
      throw e;
    }
  }

  @Override
  public RankSet ranks() {
    return ranks;
  }

  /** One dispatcher thread per GPU, all in this process: no agreement across processes. */
  @Override
  public StopAgreement stopAgreement() {
    return null;
  }

  /** No other process maps this one's memory. */
  @Override
  public void awaitPeersDone() {}

  @Override
  public void close() {
    ranks.close();
  }
}
