package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;

/** The fused FP8 GEMM + all-reduce kernels ({@code gemm_ar.fatbin}), loaded into one context. */
final class GemmArModule implements AutoCloseable {

  static final String FATBIN_RESOURCE = "/collscope/cuda/gemm_ar.fatbin";

  /**
   * The GEMM's main loop: {@code wgmma-tma} (the default: warpgroup {@code wgmma.mma_async}
   * m64n128k32 reading the shared-memory stages through descriptors, its accumulator promoted to
   * FP32 every 64 of K, the stages loaded by the tensor memory accelerator from tensor maps, {@link
   * GemmArTensorMaps}), {@code wgmma} (the same loop with the stages loaded by cp.async, 16 bytes a
   * thread) or {@code mma} (warp-level {@code mma.sync} m16n8k32 fed by {@code ldmatrix}, exact
   * FP32 accumulation). All are in the image. Measured side by side on two H200s
   * (docs/BENCHMARKS.md): wgmma 1.44x faster than mma at 16384x6144x4096 and 65536x8192x4096 (run
   * 95); wgmma-tma 1.41x faster than wgmma at 16384x6144x4096 and 65536x8192x4096, 1.12-1.13x at K
   * = 1024 (run 121), which took the fused kernel from 0.66-0.71x of torch._scaled_mm + NCCL to
   * PARITY at 16384x6144x4096. The system property {@value #MAIN_LOOP_PROPERTY} picks one.
   */
  static final String MAIN_LOOP = System.getProperty(GemmArModule.MAIN_LOOP_PROPERTY, "wgmma-tma");

  static final String MAIN_LOOP_PROPERTY = "collscope.gemmar.mainLoop";

  final CUmodule module = new CUmodule();
  private final CUfunction[] kernels = new CUfunction[4]; // [throttled][instrumented]
  final CUfunction publish = new CUfunction();

  /** Loads into the calling thread's current context. */
  GemmArModule() {
    byte[] fatbin = fatbin();
    byte[] z = new byte[fatbin.length + 1]; // cuModuleLoadData wants a terminated image
    System.arraycopy(fatbin, 0, z, 0, fatbin.length);
    cuModuleLoadData(module, z);
    for (int i = 0; i < 4; i++) {
      kernels[i] = new CUfunction();
      cuModuleGetFunction(kernels[i], module, name((i & 2) != 0, (i & 1) != 0));
      cuFuncSetAttribute(
          kernels[i],
          CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          GemmArLayout.SMEM_BYTES);
    }
    cuModuleGetFunction(publish, module, "gemm_ar_publish");
  }

  /** The kernel's symbol: {@code gemm_ar_fp8_bf16[_throttled][_plain][_wg[_tma]]}. */
  static String name(boolean throttled, boolean instrumented) {
    return name(MAIN_LOOP, throttled, instrumented);
  }

  static String name(String mainLoop, boolean throttled, boolean instrumented) {
    return "gemm_ar_fp8_bf16"
        + (throttled ? "_throttled" : "")
        + (instrumented ? "" : "_plain")
        + (wgmma(mainLoop) ? "_wg" : "")
        + (tma(mainLoop) ? "_tma" : "");
  }

  /** Whether the main loop is a wgmma one (its accumulator promoted: GemmArReference's bound). */
  static boolean wgmma() {
    return wgmma(MAIN_LOOP);
  }

  /** Whether the programs take A's and W's tensor maps after P (GemmArTensorMaps). */
  static boolean tma() {
    return tma(MAIN_LOOP);
  }

  static boolean wgmma(String mainLoop) {
    return switch (mainLoop) {
      case "mma" -> false;
      case "wgmma", "wgmma-tma" -> true;
      default ->
          throw new IllegalArgumentException(
              MAIN_LOOP_PROPERTY + " must be mma, wgmma or wgmma-tma, not " + mainLoop);
    };
  }

  static boolean tma(String mainLoop) {
    return wgmma(mainLoop) && mainLoop.equals("wgmma-tma");
  }

  CUfunction kernel(boolean throttled, boolean instrumented) {
    return kernels[(throttled ? 2 : 0) + (instrumented ? 1 : 0)];
  }

  static byte[] fatbin() {
    try (InputStream in = GemmArModule.class.getResourceAsStream(FATBIN_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(
            "kernel image " + FATBIN_RESOURCE + " is not on the classpath");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      cuModuleUnload(module);
    } catch (RuntimeException ignored) {
      // context already gone
    }
  }
}
