package io.collscope.backend;

import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.ConfigException;
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
        throw new ConfigException("backend", "must be auto, cpu or cuda, got '" + s + "'");
      }
    }
  }

  private Backends() {}

  public static CollectiveBackend create(Kind kind, CollectiveConfig cfg, FaultPlan plan) {
    return switch (kind) {
      case CPU -> new CpuCollective(cfg, plan);
      case CUDA -> CudaCollective.open(cfg, plan);
      case AUTO ->
          CudaProbe.gpuCount() > 0 ? CudaCollective.open(cfg, plan) : new CpuCollective(cfg, plan);
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
      throw new ConfigException(
          "backend", "cpu cannot run one rank per process: its ranks are threads of one process");
    }
    if (rendezvous == null) {
      throw new ConfigException(
          "rendezvous",
          "is needed to run one rank per process: a directory every rank's process can see");
    }
    CudaProbe.requireGpu();
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
}
