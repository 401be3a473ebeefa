package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * The compiled kernels (fatbin: sm_90a SASS plus compute_90 PTX), loaded into the current context
 * from the classpath resource the build puts there.
 */
final class OsarModule {

  static final String FATBIN_RESOURCE = "/collscope/cuda/osar.fatbin";

  final CUmodule module = new CUmodule();
  final CUfunction publish = new CUfunction();
  final CUfunction calibrate = new CUfunction();

  /** Every collective kernel by its name ({@link #kernelName}), in the image's order. */
  private final Map<String, CUfunction> collectives = new LinkedHashMap<>();

  /** Loads into the calling thread's current context. */
  OsarModule() {
    byte[] fatbin = fatbin();
    byte[] z = new byte[fatbin.length + 1]; // cuModuleLoadData wants a terminated image
    System.arraycopy(fatbin, 0, z, 0, fatbin.length);
    cuModuleLoadData(module, z);
    for (AllReduceAlgorithm a : AllReduceAlgorithm.values()) {
      for (DType d : DType.values()) {
        for (boolean instrumented : new boolean[] {true, false}) {
          CUfunction f = new CUfunction();
          String name = kernelName(d, instrumented, a);
          cuModuleGetFunction(f, module, name);
          collectives.put(name, f);
        }
      }
    }
    cuModuleGetFunction(publish, module, "osar_publish");
    cuModuleGetFunction(calibrate, module, "osar_calibrate");
  }

  /**
   * The name {@code osar.cu} gives the collective kernel of {@code algorithm}'s data path: {@code
   * osar_<dtype>[_push|_two][_plain]}.
   */
  static String kernelName(DType dtype, boolean instrumented, AllReduceAlgorithm algorithm) {
    return "osar_" + dtype.suffix + algorithm.kernelInfix + (instrumented ? "" : "_plain");
  }

  /** The collective kernel of {@code algorithm}'s data path. */
  CUfunction kernel(DType dtype, boolean instrumented, AllReduceAlgorithm algorithm) {
    return collectives.get(kernelName(dtype, instrumented, algorithm));
  }

  Collection<CUfunction> collectives() {
    return collectives.values();
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
