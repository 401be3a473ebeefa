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

/**
 * Ranks as separate processes that swap CUDA IPC handles at a rendezvous. With one GPU the
 * processes' contexts time-slice it, so this proves the handle exchange, the mapping and the
 * protocol across processes, not speed. Skipped without a GPU.
 */
@EnabledIf(value = "io.collscope.cuda.CudaProbe#available", disabledReason = "no usable GPU here")
class ProcessPerGpuGpuTest {

  @TempDir Path rendezvous;

  private static Process spawn(int rank, int world, Path dir, int count, String inject)
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
    if (inject != null) cmd.add(inject);
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  @Test
  void twoProcessesAllReduceThroughIpcMappedMemory() throws Exception {
    int world = 2;
    int count = 40;
    List<Process> ps = new ArrayList<>();
    for (int r = 0; r < world; r++) ps.add(spawn(r, world, rendezvous, count, "slow-rank=1:200us"));
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
    assertThat(outs.get(0)).contains("OK rank=0 calls=" + count + " timeouts=0");
    assertThat(outs.get(1)).contains("OK rank=1 calls=" + count + " timeouts=0");
    // rank 1 was injected slow: rank 0 waited on it
    String waits = outs.get(0).replaceAll("(?s).*peer_wait_cycles=([0-9,]+).*", "$1");
    long onRank1 = Long.parseLong(waits.split(",")[1].trim());
    assertThat(onRank1).isPositive();
    try (var files = Files.list(rendezvous)) {
      assertThat(files.count()).as("every rank removes its rendezvous files").isZero();
    }
  }
}
