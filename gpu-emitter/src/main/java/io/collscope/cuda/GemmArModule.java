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

  /** The kernel's symbol: {@code gemm_ar_fp8_bf16[_throttled][_plain]}. */
  static String name(boolean throttled, boolean instrumented) {
    return "gemm_ar_fp8_bf16" + (throttled ? "_throttled" : "") + (instrumented ? "" : "_plain");
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
