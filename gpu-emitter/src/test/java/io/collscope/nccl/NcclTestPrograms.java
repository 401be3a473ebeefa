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
public final class NcclTestPrograms {

  private NcclTestPrograms() {}

  /** This module's directory: the working directory of its own tests, a sibling of others'. */
  public static Path moduleDir() {
    Path here = Path.of("").toAbsolutePath();
    return Files.isDirectory(here.resolve("src/test/c"))
        ? here
        : here.resolveSibling("gpu-emitter");
  }

  /** The plugin as build.sh builds it for this machine (x86-64), from the module's sources. */
  public static Path plugin() {
    return moduleDir().resolve("src/main/resources/collscope/nccl/libnccl-profiler-collscope.so");
  }

  /** Compiles src/test/c/{@code source} to target/{@code name}, linked with {@code libs}. */
  public static Path compile(String name, String source, String... libs) throws Exception {
    Path binary = Path.of("target", name).toAbsolutePath();
    Files.createDirectories(binary.getParent());
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getenv().getOrDefault("COLLSCOPE_GCC_BIN", "gcc"));
    cmd.addAll(
        List.of(
            "-O1",
            "-Wall",
            "-Werror",
            "-o",
            binary.toString(),
            moduleDir().resolve("src/test/c/" + source).toString()));
    cmd.addAll(List.of(libs));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(String.join(" ", cmd) + "\n" + out).isZero();
    return binary;
  }
}
