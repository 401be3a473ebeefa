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
  final CUfunction f32Push = new CUfunction();
  final CUfunction f32PushPlain = new CUfunction();
  final CUfunction bf16Push = new CUfunction();
  final CUfunction bf16PushPlain = new CUfunction();
  final CUfunction f32Two = new CUfunction();
  final CUfunction f32TwoPlain = new CUfunction();
  final CUfunction bf16Two = new CUfunction();
  final CUfunction bf16TwoPlain = new CUfunction();
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
    cuModuleGetFunction(f32Push, module, "osar_f32_push");
    cuModuleGetFunction(f32PushPlain, module, "osar_f32_push_plain");
    cuModuleGetFunction(bf16Push, module, "osar_bf16_push");
    cuModuleGetFunction(bf16PushPlain, module, "osar_bf16_push_plain");
    cuModuleGetFunction(f32Two, module, "osar_f32_two");
    cuModuleGetFunction(f32TwoPlain, module, "osar_f32_two_plain");
    cuModuleGetFunction(bf16Two, module, "osar_bf16_two");
    cuModuleGetFunction(bf16TwoPlain, module, "osar_bf16_two_plain");
    cuModuleGetFunction(publish, module, "osar_publish");
    cuModuleGetFunction(calibrate, module, "osar_calibrate");
  }

  /** The collective kernel of {@code algorithm}'s data path. */
  CUfunction kernel(DType dtype, boolean instrumented, AllReduceAlgorithm algorithm) {
    boolean f32 = dtype == DType.F32;
    return switch (algorithm) {
      case ONE_SHOT_PULL ->
          f32 ? (instrumented ? this.f32 : f32Plain) : (instrumented ? bf16 : bf16Plain);
      case ONE_SHOT_PUSH ->
          f32 ? (instrumented ? f32Push : f32PushPlain) : (instrumented ? bf16Push : bf16PushPlain);
      case TWO_SHOT ->
          f32 ? (instrumented ? f32Two : f32TwoPlain) : (instrumented ? bf16Two : bf16TwoPlain);
    };
  }

  CUfunction[] collectives() {
    return new CUfunction[] {
      f32,
      f32Plain,
      bf16,
      bf16Plain,
      f32Push,
      f32PushPlain,
      bf16Push,
      bf16PushPlain,
      f32Two,
      f32TwoPlain,
      bf16Two,
      bf16TwoPlain
    };
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
