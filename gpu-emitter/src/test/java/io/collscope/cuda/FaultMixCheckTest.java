package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.collscope.collective.FaultPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel's {@code fault_mix} (compiled for the host with nvcc from osar.cu itself) equals
 * {@link FaultPlan#mix}: both backends pick the same sequences for a {@code ~P%} fault. Skipped
 * where nvcc is not on PATH; needs no GPU.
 */
class FaultMixCheckTest {

  @TempDir Path dir;

  @Test
  void theKernelsHashIsFaultPlansHash() throws Exception {
    Path nvcc = nvcc();
    assumeTrue(nvcc != null, "nvcc is not on PATH");
    Path exe = dir.resolve("fault_mix_check");
    Process build =
        new ProcessBuilder(
                nvcc.toString(),
                "-I",
                Path.of("src/main/cuda").toAbsolutePath().toString(),
                "-o",
                exe.toString(),
                Path.of("src/test/cuda/fault_mix_check.cu").toAbsolutePath().toString())
            .redirectErrorStream(true)
            .start();
    String log = new String(build.getInputStream().readAllBytes());
    assertThat(build.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(build.exitValue()).as(log).isZero();
    Process run = new ProcessBuilder(exe.toString()).redirectErrorStream(true).start();
    List<String> lines = new String(run.getInputStream().readAllBytes()).lines().toList();
    assertThat(run.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(lines).hasSize(48);
    for (String line : lines) {
      String[] f = line.split(" ");
      long seq = Long.parseUnsignedLong(f[0]);
      int index = Integer.parseInt(f[1]);
      assertThat(Long.parseUnsignedLong(f[2])).as(line).isEqualTo(FaultPlan.mix(seq, index));
    }
  }

  private static Path nvcc() {
    for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path p = Path.of(d, "nvcc");
      if (Files.isExecutable(p)) return p;
    }
    return null;
  }
}
