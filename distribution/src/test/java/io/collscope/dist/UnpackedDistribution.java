package io.collscope.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The two archives of this module's {@code package}, unpacked once per test JVM into a temporary
 * directory outside the checkout, and their {@code bin/collscope} run as an operator runs it: as a
 * process, in a working directory of its own, with no COLLSCOPE_* variable from the build's
 * environment.
 */
final class UnpackedDistribution {

  static final String VERSION = System.getProperty("collscope.version", "0.1.0-SNAPSHOT");
  private static final Path TARGET =
      Path.of(System.getProperty("collscope.dist.dir", "target")).toAbsolutePath();

  static final Path BIN_ARCHIVE = TARGET.resolve("collscope-" + VERSION + "-bin.tar.gz");
  static final Path NODE_ARCHIVE =
      TARGET.resolve("collscope-gpu-node-" + VERSION + "-linux-x86_64.tar.gz");

  private static UnpackedDistribution instance;

  final Path root;
  final Path home;
  final Path nodeHome;

  private UnpackedDistribution(Path root) {
    this.root = root;
    this.home = root.resolve("collscope-" + VERSION);
    this.nodeHome = root.resolve("collscope-gpu-node-" + VERSION);
  }

  /** Both archives unpacked (once) under a fresh temporary directory. */
  static synchronized UnpackedDistribution get() throws Exception {
    if (instance == null) {
      assertThat(BIN_ARCHIVE).as("mvn package built it").exists();
      assertThat(NODE_ARCHIVE).as("mvn package built it").exists();
      Path root = Files.createTempDirectory("collscope-dist-");
      Path checkout = TARGET.getParent().getParent();
      assertThat(root.toRealPath().startsWith(checkout.toRealPath())).isFalse();
      for (Path a : List.of(BIN_ARCHIVE, NODE_ARCHIVE)) {
        Process p =
            new ProcessBuilder("tar", "xzf", a.toString(), "-C", root.toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as("tar xzf %s: %s", a, out).isZero();
      }
      instance = new UnpackedDistribution(root);
      Runtime.getRuntime().addShutdownHook(new Thread(instance::delete));
    }
    return instance;
  }

  /** A command's exit code and output. */
  record Result(int exitCode, String out, String err) {
    @Override
    public String toString() {
      return "exit " + exitCode + "\nstdout:\n" + out + "\nstderr:\n" + err;
    }
  }

  /** {@code bin/collscope ARGS} of the bin archive. */
  Result collscope(Map<String, String> env, Duration timeout, List<String> args) {
    return run(home.resolve("bin/collscope"), env, timeout, args);
  }

  /** {@code bin/collscope ARGS} of the GPU-node archive. */
  Result node(Map<String, String> env, Duration timeout, List<String> args) {
    return run(nodeHome.resolve("bin/collscope"), env, timeout, args);
  }

  /** Starts {@code bin/collscope ARGS} without waiting; its output goes to {@code log}. */
  Process start(Map<String, String> env, Path log, List<String> args) throws IOException {
    return builder(home.resolve("bin/collscope"), env, args)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
  }

  private Result run(Path bin, Map<String, String> env, Duration timeout, List<String> args) {
    try {
      Path out = Files.createTempFile(root, "out-", ".txt");
      Path err = Files.createTempFile(root, "err-", ".txt");
      Process p =
          builder(bin, env, args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        throw new AssertionError(
            "collscope " + args + " still running after " + timeout + ": " + Files.readString(err));
      }
      return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private ProcessBuilder builder(Path bin, Map<String, String> env, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(bin.toString());
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(root.toFile());
    Map<String, String> e = pb.environment();
    e.keySet().removeIf(k -> k.startsWith("COLLSCOPE_"));
    e.putAll(env);
    return pb;
  }

  static Map<String, String> env(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
    return m;
  }

  private void delete() {
    try (var files = Files.walk(root)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      // a temporary directory
    }
  }
}
