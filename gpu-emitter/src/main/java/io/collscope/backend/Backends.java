package io.collscope.backend;

import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.CpuCollective;
import io.collscope.collective.FaultPlan;
import io.collscope.cuda.CudaCollective;
import io.collscope.cuda.CudaProbe;
import java.util.Locale;

/**
 * Chooses and builds a collective backend: {@code auto} is cuda when a GPU is usable, else cpu.
 * Apart from the backends' packages so that they do not depend on each other through it.
 */
public final class Backends {

  public enum Kind {
    AUTO,
    CPU,
    CUDA;

    public static Kind parse(String s) {
      try {
        return valueOf(s.trim().toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--backend must be auto, cpu or cuda, got '" + s + "'");
      }
    }
  }

  private Backends() {}

  public static CollectiveBackend create(Kind kind, CollectiveConfig cfg, FaultPlan plan) {
    return switch (kind) {
      case CPU -> new CpuCollective(cfg, plan);
      case CUDA -> cuda(cfg, plan);
      case AUTO -> CudaProbe.gpuCount() > 0 ? cuda(cfg, plan) : new CpuCollective(cfg, plan);
    };
  }

  /**
   * One rank of a communicator run as one process per GPU, meeting its peers' processes in {@code
   * rendezvous}. CUDA only: CPU ranks are threads of one process.
   */
  public static CollectiveBackend createProcessRank(
      Kind kind,
      CollectiveConfig cfg,
      FaultPlan plan,
      int rank,
      Integer device,
      java.nio.file.Path rendezvous,
      java.time.Duration timeout) {
    if (kind == Kind.CPU) {
      throw new IllegalArgumentException(
          "--rank/--rendezvous run one process per GPU: use --backend cuda");
    }
    if (rendezvous == null) {
      throw new IllegalArgumentException(
          "--rank needs --rendezvous DIR, shared by every rank's process");
    }
    if (CudaProbe.gpuCount() == 0) {
      throw new IllegalStateException("--backend cuda: " + CudaProbe.reason());
    }
    int dev = device != null ? device : rank % CudaProbe.gpuCount();
    return CudaCollective.openProcessRank(
        cfg,
        plan,
        CudaCollective.Options.defaults(cfg.worldSize()),
        rank,
        dev,
        rendezvous,
        timeout);
  }

  private static CollectiveBackend cuda(CollectiveConfig cfg, FaultPlan plan) {
    if (CudaProbe.gpuCount() == 0) {
      throw new IllegalStateException("--backend cuda: " + CudaProbe.reason());
    }
    return CudaCollective.open(cfg, plan);
  }
}
