package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Ranks as separate processes that swap CUDA IPC handles at a rendezvous. With one GPU the
 * processes' contexts time-slice it, so this proves the handle exchange, the mapping and the
 * protocol across processes, not speed. Skipped without a GPU.
 */
@EnabledIf(value = "io.collscope.cuda.CudaProbe#available", disabledReason = "no usable GPU here")
class ProcessPerGpuGpuTest {

  @TempDir Path rendezvous;

  private static Process spawn(
      int rank, int world, Path dir, int count, String inject, int elements, String algorithm)
      throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(IpcRankProcess.class.getName());
    cmd.add(Integer.toString(rank));
    cmd.add(Integer.toString(world));
    cmd.add(dir.toString());
    cmd.add(Integer.toString(count));
    cmd.add(inject == null ? "-" : inject);
    cmd.add(Integer.toString(elements));
    cmd.add(algorithm);
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  /** A rank of {@link IpcEmitProcess}, its output in {@code log}. */
  private static Process spawnEmit(int rank, int world, Path dir, int seconds, Path log)
      throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(IpcEmitProcess.class.getName());
    cmd.add(Integer.toString(rank));
    cmd.add(Integer.toString(world));
    cmd.add(dir.toString());
    cmd.add(Integer.toString(seconds));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  /** The process's output once it has ended (killed after a bound, which fails the test). */
  private static String finish(Process p, Path log) throws Exception {
    boolean done = p.waitFor(180, TimeUnit.SECONDS);
    if (!done) p.destroyForcibly().waitFor();
    String out = Files.readString(log);
    System.out.println(out);
    assertThat(done).as("ended within the bound: %s", out).isTrue();
    return out;
  }

  private static long lastCounter(String out, String name) {
    return Long.parseLong(out.replaceAll("(?s).*LAST rank=\\d+ .*?" + name + "=(-?\\d+).*", "$1"));
  }

  /**
   * One rank's run ends first (3 s against 6 s): the ranks agree on a last collective, both stop
   * after it, neither counts a timeout, both exit 0. Before the agreement the 6 s rank launched on
   * alone, its wait ran out its budget, and it failed ("backend failed").
   */
  @Test
  void ranksWithDifferentSecondsStopTogetherAndBothExitZero(@TempDir Path logs) throws Exception {
    Path log0 = logs.resolve("rank0.log");
    Path log1 = logs.resolve("rank1.log");
    Process p0 = spawnEmit(0, 2, rendezvous, 3, log0);
    Process p1 = spawnEmit(1, 2, rendezvous, 6, log1);
    String out0 = finish(p0, log0);
    String out1 = finish(p1, log1);
    assertThat(p0.exitValue()).as(out0).isZero();
    assertThat(p1.exitValue()).as(out1).isZero();
    assertThat(out0).contains("OK rank=0");
    assertThat(out1).contains("OK rank=1");
    assertThat(lastCounter(out0, "timeouts")).as(out0).isZero();
    assertThat(lastCounter(out1, "timeouts")).as(out1).isZero();
    // the last snapshots hold the same, agreed, last collective
    assertThat(lastCounter(out0, "calls")).isPositive().isEqualTo(lastCounter(out1, "calls"));
    try (var files = Files.list(rendezvous)) {
      assertThat(files.toList()).as("every rank removes its rendezvous files").isEmpty();
    }
  }

  /**
   * A real death stays a failure: rank 1's process is SIGKILLed mid-run, and rank 0 (which would
   * run for a minute) reports the timeout it counted and exits 1, within a bound.
   */
  @Test
  void aPeerKilledMidRunIsACountedTimeoutForTheSurvivor(@TempDir Path logs) throws Exception {
    Path log0 = logs.resolve("rank0.log");
    Path log1 = logs.resolve("rank1.log");
    Process p0 = spawnEmit(0, 2, rendezvous, 60, log0);
    Process p1 = spawnEmit(1, 2, rendezvous, 60, log1);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!(Files.readString(log0).contains("RUNNING")
            && Files.readString(log1).contains("RUNNING"))
        && p0.isAlive()
        && p1.isAlive()
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertThat(Files.readString(log1)).as("rank 1 was running").contains("RUNNING rank=1");
    Thread.sleep(1000); // a few snapshots into the run
    p1.destroyForcibly(); // SIGKILL: no shutdown hook, no agreement
    p1.waitFor();
    String out0 = finish(p0, log0);
    assertThat(p0.exitValue()).as(out0).isEqualTo(1);
    assertThat(out0).contains("FAILED rank=0").contains("timeout counted");
    assertThat(lastCounter(out0, "timeouts")).as(out0).isPositive();
  }

  /**
   * Every data path across processes: 256 KB per rank reads the peer's slot through the mapping
   * (pull), 16 MB writes into it (push, a slot of one segment per rank), and two-shot (forced: two
   * ranks take it by size nowhere) pushes half of it and then the reduced half back, with a gather
   * flag in the peer's mapped memory; the sums are checked against the host's with inputs that
   * change every collective, and rank 1's injected lateness is rank 0's wait on every path.
   */
  @ParameterizedTest(name = "{0} f32 elements per rank: {1}")
  @CsvSource({
    "65536, oneshot-pull, auto",
    "4194304, oneshot-push, auto",
    "65536, twoshot, twoshot",
    "4194304, twoshot, twoshot"
  })
  void twoProcessesAllReduceThroughIpcMappedMemory(int elements, String path, String algorithm)
      throws Exception {
    int world = 2;
    int count = 40;
    List<Process> ps = new ArrayList<>();
    for (int r = 0; r < world; r++) {
      ps.add(spawn(r, world, rendezvous, count, "slow-rank=1:200us", elements, algorithm));
    }
    List<String> outs = new ArrayList<>();
    for (Process p : ps) {
      boolean done = p.waitFor(180, TimeUnit.SECONDS);
      if (!done) p.destroyForcibly();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      System.out.println(out);
      outs.add(out);
      assertThat(done).as(out).isTrue();
      assertThat(p.exitValue()).as(out).isZero();
    }
    assertThat(outs.get(0)).contains("OK rank=0 calls=" + count + " timeouts=0 path=" + path);
    assertThat(outs.get(1)).contains("OK rank=1 calls=" + count + " timeouts=0 path=" + path);
    // rank 1 was injected slow: rank 0 waited on it
    String waits = outs.get(0).replaceAll("(?s).*peer_wait_cycles=([0-9,]+).*", "$1");
    long onRank1 = Long.parseLong(waits.split(",")[1].trim());
    assertThat(onRank1).isPositive();
    try (var files = Files.list(rendezvous)) {
      assertThat(files.count()).as("every rank removes its rendezvous files").isZero();
    }
  }
}
