package io.collscope.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real headless Chromium (Debian's {@code chromium-headless-shell}, or {@code chromium}) for
 * tests: loads a local page with the network closed (every request goes to a proxy that does not
 * exist), lets its scripts and timers run, and returns the DOM as it then is plus every console
 * message the page printed; or takes a screenshot. A missing binary fails the test with the command
 * that installs it; it never skips.
 */
public final class HeadlessChromium {

  /** Overrides where the binary is looked for. */
  public static final String BIN_ENV = "COLLSCOPE_CHROMIUM_BIN";

  static final List<String> NAMES = List.of("chromium-headless-shell", "chromium");

  static final String INSTALL_HINT =
      "headless Chromium is needed by the report tests and was not found on PATH or in /usr/bin"
          + " (chromium-headless-shell or chromium, or $"
          + BIN_ENV
          + "). Install it with: apt-get install -y chromium-headless-shell"
          + " (or run dev/setup-test-tools.sh)";

  /** How much virtual time the page's scripts and timers get before the DOM is read. */
  static final int VIRTUAL_TIME_BUDGET_MS = 10_000;

  static final long TIMEOUT_SECONDS = 90;

  /** The browser window's width: a page's height depends on it, so load and screenshot share it. */
  public static final int WIDTH = 1400;

  /** Chromium's log line for a console message: {@code [..:INFO:CONSOLE:12] "text", source: ..}. */
  static final Pattern CONSOLE =
      Pattern.compile(":CONSOLE[:(]\\d*\\)?\\] (.*)$", Pattern.MULTILINE);

  /** The page as the browser left it: its DOM and what it printed to the console. */
  public record Loaded(String dom, List<String> console) {

    /** The value of {@code attribute} on the {@code <body>} element, or null. */
    public String bodyAttribute(String attribute) {
      Matcher body = Pattern.compile("<body([^>]*)>").matcher(dom);
      if (!body.find()) return null;
      Matcher a =
          Pattern.compile("\\s" + Pattern.quote(attribute) + "=\"([^\"]*)\"")
              .matcher(body.group(1));
      return a.find() ? a.group(1) : null;
    }
  }

  private final Path binary;

  private HeadlessChromium(Path binary) {
    this.binary = binary;
  }

  public static HeadlessChromium find() {
    return new HeadlessChromium(findBinary());
  }

  public static Path findBinary() {
    List<Path> candidates = new ArrayList<>();
    String env = System.getenv(BIN_ENV);
    if (env != null && !env.isBlank()) candidates.add(Path.of(env));
    String path = System.getenv("PATH");
    for (String name : NAMES) {
      if (path != null) {
        for (String d : path.split(java.io.File.pathSeparator)) {
          if (!d.isEmpty()) candidates.add(Path.of(d, name));
        }
      }
      candidates.add(Path.of("/usr/bin", name));
    }
    for (Path p : candidates) if (Files.isRegularFile(p) && Files.isExecutable(p)) return p;
    throw new AssertionError(INSTALL_HINT);
  }

  /** Loads {@code page} and returns its DOM after the scripts ran, and its console messages. */
  public Loaded load(Path page) {
    Result r =
        run(
            page,
            List.of(
                "--window-size=" + WIDTH + ",900",
                "--enable-logging=stderr",
                "--v=0",
                "--dump-dom"));
    List<String> console = new ArrayList<>();
    Matcher m = CONSOLE.matcher(r.stderr);
    while (m.find()) console.add(m.group(1));
    return new Loaded(r.stdout, console);
  }

  /** Writes a PNG of the page's first {@link #WIDTH} × {@code height} pixels to {@code png}. */
  public void screenshot(Path page, Path png, int height) {
    run(
        page,
        List.of(
            "--hide-scrollbars",
            "--window-size=" + WIDTH + "," + height,
            "--screenshot=" + png.toAbsolutePath()));
    if (!Files.isRegularFile(png)) throw new AssertionError("chromium wrote no screenshot " + png);
  }

  private record Result(String stdout, String stderr) {}

  private Result run(Path page, List<String> extra) {
    Path profile = null;
    try {
      profile = Files.createTempDirectory("collscope-chromium-");
      Path out = profile.resolve("stdout");
      Path err = profile.resolve("stderr");
      List<String> cmd = new ArrayList<>();
      cmd.add(binary.toString());
      cmd.addAll(
          List.of(
              "--headless",
              "--no-sandbox", // tests run as root in CI; the page is our own file
              "--disable-gpu",
              "--no-first-run",
              "--user-data-dir=" + profile.resolve("profile"),
              // No network: any request the page makes fails (and the page records it).
              "--proxy-server=http://127.0.0.1:9",
              "--proxy-bypass-list=<-loopback>",
              "--virtual-time-budget=" + VIRTUAL_TIME_BUDGET_MS));
      cmd.addAll(extra);
      cmd.add(page.toAbsolutePath().toUri().toString());
      Process p =
          new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("chromium did not finish within " + TIMEOUT_SECONDS + " s");
      }
      String stdout = Files.readString(out, StandardCharsets.UTF_8);
      String stderr = Files.readString(err, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new AssertionError("chromium exited with " + p.exitValue() + ":\n" + stderr);
      }
      return new Result(stdout, stderr);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    } finally {
      if (profile != null) deleteTree(profile);
    }
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a leftover temporary profile is harmless
    }
  }
}
