package io.collscope.collective;

import io.collscope.cuda.CudaProbe;
import java.util.Locale;

/** Chooses and builds a collective backend: {@code auto} is cuda when a GPU is usable, else cpu. */
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

  private static CollectiveBackend cuda(CollectiveConfig cfg, FaultPlan plan) {
    if (CudaProbe.gpuCount() == 0) {
      throw new IllegalStateException("--backend cuda: " + CudaProbe.reason());
    }
    return io.collscope.cuda.CudaCollective.open(cfg, plan);
  }
}
