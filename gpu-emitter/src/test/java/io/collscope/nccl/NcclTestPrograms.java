package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The C stand-ins and harnesses of the NCCL plugin's tests (src/test/c), compiled once per test
 * class with the project's gcc ({@code COLLSCOPE_GCC_BIN}, else {@code gcc} on the path: a missing
 * compiler fails the test, never skips it) and warnings as errors.
 */
final class NcclTestPrograms {

  private NcclTestPrograms() {}

  /** Compiles src/test/c/{@code source} to target/{@code name}, linked with {@code libs}. */
  static Path compile(String name, String source, String... libs) throws Exception {
    Path binary = Path.of("target", name).toAbsolutePath();
    Files.createDirectories(binary.getParent());
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getenv().getOrDefault("COLLSCOPE_GCC_BIN", "gcc"));
    cmd.addAll(List.of("-O1", "-Wall", "-Werror", "-o", binary.toString(), "src/test/c/" + source));
    cmd.addAll(List.of(libs));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(String.join(" ", cmd) + "\n" + out).isZero();
    return binary;
  }
}
