package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The committed plugin can never take the process that loaded it down: {@code
 * src/test/c/nccl_plugin_lifecycle.c} loads and unloads it as NCCL 2.28.9 does (dlopen at the first
 * communicator, dlclose after the last one's finalize), with its publisher thread running for real,
 * and goes on running afterwards; and a {@code COLLSCOPE_SHM_DIR} on a full tmpfs (a tmpfs mounted
 * in a private mount namespace by {@code unshare}, gone with the process) fails the plugin's init
 * with one warning instead of a SIGBUS. gcc and unshare are test tools (dev/setup-test-tools.sh):
 * missing, the tests fail.
 */
class NcclPluginLifecycleTest {

  static Path harness;

  @BeforeAll
  static void compileTheHarness() throws Exception {
    harness = NcclTestPrograms.compile("nccl-plugin-lifecycle", "nccl_plugin_lifecycle.c", "-ldl");
  }

  record Result(int rc, String out) {}

  static Result run(Path shm, String... cmd) throws Exception {
    return run(shm, java.util.Map.of(), cmd);
  }

  static Result run(Path shm, java.util.Map<String, String> env, String... cmd) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    if (shm != null) pb.environment().put("COLLSCOPE_SHM_DIR", shm.toString());
    pb.environment().remove("COLLSCOPE_NCCL_NO_THREAD"); // the publisher thread runs for real
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(String.join(" ", cmd)).isTrue();
    return new Result(p.exitValue(), out);
  }

  static Result lifecycle(Path shm, String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(harness.toString());
    cmd.add(NcclProfilerPluginTest.LIB.toAbsolutePath().toString());
    cmd.addAll(List.of(args));
    return run(shm, cmd.toArray(String[]::new));
  }

  /**
   * A thousand communicators one after the other, each in a library freshly loaded and unloaded:
   * exit 0 (a publisher thread left in the unmapped library faults: exit 139), nothing left mapped,
   * no thread left.
   */
  @ParameterizedTest(name = "profiler interface v{0}")
  @ValueSource(ints = {5, 6})
  void aThousandLoadInitFinalizeUnloadCyclesLeaveTheProcessRunning(int version, @TempDir Path shm)
      throws Exception {
    Result r = lifecycle(shm, "" + version, "cycles", "1000");
    assertThat(r.rc).as(r.out).isZero();
    assertThat(r.out).contains("after dlclose: library mappings 0, threads 1").contains("survived");
  }

  @Test
  void theSecondCommunicatorKeepsItsPublisherAfterTheFirstIsFinalized(@TempDir Path shm)
      throws Exception {
    Result r = lifecycle(shm, "6", "two");
    assertThat(r.rc).as(r.out).isZero();
    assertThat(r.out).contains("after dlclose: library mappings 0, threads 1").contains("survived");
  }

  @Test
  void aLibraryLoadedAgainAfterItsUnloadStartsAFreshPublisher(@TempDir Path shm) throws Exception {
    Result r = lifecycle(shm, "5", "reopen");
    assertThat(r.rc).as(r.out).isZero();
    assertThat(r.out).contains("survived");
  }

  /**
   * Children forked while the publisher runs (a data loader's workers) exit through exit(), which
   * runs the plugin's library destructor in the child: it must not wait for the parent's publisher
   * (which the child does not have) nor for a lock that publisher held at the fork. A pass every 20
   * us holds that lock often.
   */
  @Test
  void childrenForkedWhileThePublisherRunsExitWithoutWaitingForIt(@TempDir Path shm)
      throws Exception {
    Result r =
        run(
            shm,
            java.util.Map.of("COLLSCOPE_NCCL_PERIOD_US", "20"),
            harness.toString(),
            NcclProfilerPluginTest.LIB.toAbsolutePath().toString(),
            "5",
            "fork",
            "300");
    assertThat(r.rc).as(r.out).isZero();
    assertThat(r.out).contains("forked 300 children, 0 hung at exit").contains("survived");
  }

  /** tmpfs of 256 KiB, filled up, or too small for a block (~0.5 MiB): init fails, no SIGBUS. */
  @ParameterizedTest(name = "tmpfs {0}")
  @ValueSource(strings = {"full", "small"})
  void aFullShmFailsTheInitWithOneWarningAndTheProcessGoesOn(String kind, @TempDir Path tmp)
      throws Exception {
    Path mnt = Files.createDirectories(tmp.resolve("shm"));
    String fill = kind.equals("full") ? "head -c 1M /dev/zero > \"$1/filler\" 2>/dev/null; " : "";
    String script =
        "mount -t tmpfs -o size="
            + (kind.equals("full") ? "256k" : "300k")
            + " none \"$1\" || exit 90; "
            + fill
            + "COLLSCOPE_SHM_DIR=\"$1/collscope\" \"$2\" \"$3\" 5 initfail; rc=$?; "
            + "find \"$1/collscope\" -name '*.tmp'; exit $rc";
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getenv().getOrDefault("COLLSCOPE_UNSHARE_BIN", "unshare"));
    // root mounts in a mount namespace of its own; anyone else in a user namespace as well
    if (!"root".equals(System.getProperty("user.name")))
      cmd.addAll(List.of("--user", "--map-root-user"));
    cmd.addAll(
        List.of(
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
            mnt.toString(),
            harness.toString(),
            NcclProfilerPluginTest.LIB.toAbsolutePath().toString()));
    Result r = run(null, cmd.toArray(String[]::new));
    assertThat(r.rc).as("a private tmpfs could not be mounted:\n" + r.out).isNotEqualTo(90);
    // 135 would be SIGBUS: a store into a page the full tmpfs could not supply
    assertThat(r.rc).as(r.out).isZero();
    assertThat(r.out)
        .contains("init result 2 context null warnings 1 mask 0")
        .contains("after dlclose: library mappings 0, threads 1")
        .contains("survived");
    assertThat(r.out.lines().filter(l -> l.contains("cannot create counter block")))
        .singleElement()
        .asString()
        .contains("No space left on device");
    assertThat(r.out.lines().filter(l -> l.contains(".tmp")))
        .as("no temporary file left")
        .isEmpty();
  }
}
