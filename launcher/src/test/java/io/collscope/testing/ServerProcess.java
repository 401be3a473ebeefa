package io.collscope.testing;

import io.collscope.broker.EmbeddedKafka;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real server program from a Debian package (Prometheus, Alertmanager) that a test runs: one
 * instance on a free port of 127.0.0.1, its files and log in a temporary directory, ready when
 * {@code GET /-/ready} answers 200. A missing binary fails the test with the command that installs
 * it; it never skips (dev/setup-test-tools.sh installs every such program).
 */
public final class ServerProcess implements AutoCloseable {

  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  /**
   * A program the tests run.
   *
   * @param binary its name on PATH or in /usr/bin
   * @param debianPackage the package that installs it
   * @param binEnv the environment variable that points at a binary installed elsewhere
   * @param neededBy which tests need it, for the message when it is missing
   */
  public record Program(String binary, String debianPackage, String binEnv, String neededBy) {

    /** The binary: ${binEnv}, else on PATH, else /usr/bin; fails with how to install it. */
    public Path find() {
      List<Path> candidates = new ArrayList<>();
      String env = System.getenv(binEnv);
      if (env != null && !env.isBlank()) candidates.add(Path.of(env));
      String path = System.getenv("PATH");
      if (path != null) {
        for (String d : path.split(File.pathSeparator)) {
          if (!d.isEmpty()) candidates.add(Path.of(d, binary));
        }
      }
      candidates.add(Path.of("/usr/bin", binary));
      for (Path p : candidates) if (Files.isRegularFile(p) && Files.isExecutable(p)) return p;
      throw new AssertionError(installHint());
    }

    public String installHint() {
      return binary
          + " is needed by "
          + neededBy
          + " and was not found on PATH or in /usr/bin (or $"
          + binEnv
          + "). Install it with: apt-get install -y "
          + debianPackage
          + " (or run dev/setup-test-tools.sh)";
    }
  }

  private final Path binary;
  private final String name;
  private final Path dir;
  private final int port;
  private final List<String> args;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private Process process;
  private int starts;

  private ServerProcess(Path binary, String name, Path dir, int port, List<String> args) {
    this.binary = binary;
    this.name = name;
    this.dir = dir;
    this.port = port;
    this.args = args;
  }

  /**
   * Starts {@code program} in a fresh temporary directory and waits until it is ready. {@code
   * setUp} writes what the program needs into the directory (its configuration) and returns its
   * arguments for the port it is given.
   */
  public static ServerProcess start(Program program, SetUp setUp) {
    Path bin = program.find();
    try {
      Path dir = Files.createTempDirectory("collscope-" + program.binary() + "-");
      int port = EmbeddedKafka.freePort();
      ServerProcess p = new ServerProcess(bin, program.binary(), dir, port, setUp.args(dir, port));
      p.launch();
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes a program's files into its directory and returns its arguments. */
  @FunctionalInterface
  public interface SetUp {
    List<String> args(Path dir, int port) throws IOException;
  }

  private void launch() throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(binary.toString());
    cmd.addAll(args);
    Path log = dir.resolve(name + "-" + (++starts) + ".log");
    process =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    while (!ready()) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            name + " exited with " + process.exitValue() + " before it was ready: " + logTail());
      }
      if (System.nanoTime() > deadline) {
        stop();
        throw new IllegalStateException(
            name + " not ready within " + READY_TIMEOUT + ": " + logTail());
      }
      sleep(100);
    }
  }

  private boolean ready() {
    try {
      HttpRequest req =
          HttpRequest.newBuilder(url().resolve("/-/ready")).timeout(Duration.ofSeconds(2)).build();
      return http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Its URL, e.g. {@code http://127.0.0.1:40123}. */
  public URI url() {
    return URI.create("http://127.0.0.1:" + port);
  }

  public int port() {
    return port;
  }

  /** Its directory (configuration, data, logs); removed by {@link #close()}. */
  public Path dir() {
    return dir;
  }

  public boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Stops it: SIGTERM, then SIGKILL after 10 s. */
  public void stop() {
    if (process == null) return;
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /** Starts it again with the same port, directory and arguments, and waits until it is ready. */
  public void restart() {
    stop();
    try {
      launch();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The last lines of the latest log. */
  public String logTail() {
    Path log = dir.resolve(name + "-" + starts + ".log");
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() {
    stop();
    try (var files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // leave it
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
