package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * The compiled kernels (fatbin: sm_90a SASS plus compute_90 PTX), loaded into the current context
 * from the classpath resource the build puts there.
 */
final class OsarModule {

  static final String FATBIN_RESOURCE = "/collscope/cuda/osar.fatbin";

  final CUmodule module = new CUmodule();
  final CUfunction f32 = new CUfunction();
  final CUfunction f32Plain = new CUfunction();
  final CUfunction bf16 = new CUfunction();
  final CUfunction bf16Plain = new CUfunction();
  final CUfunction publish = new CUfunction();
  final CUfunction calibrate = new CUfunction();

  /** Loads into the calling thread's current context. */
  OsarModule() {
    byte[] fatbin = fatbin();
    byte[] z = new byte[fatbin.length + 1]; // cuModuleLoadData wants a terminated image
    System.arraycopy(fatbin, 0, z, 0, fatbin.length);
    cuModuleLoadData(module, z);
    cuModuleGetFunction(f32, module, "osar_f32");
    cuModuleGetFunction(f32Plain, module, "osar_f32_plain");
    cuModuleGetFunction(bf16, module, "osar_bf16");
    cuModuleGetFunction(bf16Plain, module, "osar_bf16_plain");
    cuModuleGetFunction(publish, module, "osar_publish");
    cuModuleGetFunction(calibrate, module, "osar_calibrate");
  }

  CUfunction kernel(DType dtype, boolean instrumented) {
    return switch (dtype) {
      case F32 -> instrumented ? f32 : f32Plain;
      case BF16 -> instrumented ? bf16 : bf16Plain;
    };
  }

  jcuda.driver.CUfunction[] collectives() {
    return new jcuda.driver.CUfunction[] {f32, f32Plain, bf16, bf16Plain};
  }

  static byte[] fatbin() {
    try (InputStream in = OsarModule.class.getResourceAsStream(FATBIN_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(
            "kernel image " + FATBIN_RESOURCE + " is not on the classpath");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
