package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.collscope.cuda.CudaProbe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Bad input gets one line and exit code 2; an absent broker gets a clear error and 3. */
class CollscopeCliTest {

  @Test
  void anUnknownFlagIsOneLineAndExitCode2() {
    CliRun r = CliRun.of("emit", "--no-such-flag");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("Unknown option: '--no-such-flag'");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "slow-rank=2",
        "slow-rank=2:300",
        "slow-rank=x:300us",
        "slow-rank=7:300us",
        "slow-link=3-6:300us",
        "slow-link=2->2:1ms",
        "slow-ack=1:5h",
        "dead-rank=",
        "teleport=1:1ms",
        "slow-rank=1:1ms,slow-rank=1:1ms",
        "slow-rank=1:1ms@5s-2s",
        "slow-rank=1:1ms~0%",
        "slow-rank=1:1ms~101%",
        "slow-rank=1:1ms@5s junk",
        "dead-rank=1~50%",
        "reboot-rank=1",
        "slow-all=1->2:1ms"
      })
  void aMalformedInjectIsOneLineAndExitCode2(String spec) {
    CliRun r = CliRun.of("emit", "--ranks", "4", "--inject", spec, "--bootstrap", "localhost:1");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("--inject");
  }

  @Test
  void aBadTimedSpecIsOneLineAndExitCode2NamingIt() {
    CliRun r = CliRun.of("emit", "--ranks", "4", "--inject", "slow-rank=3:300us@60s-20s");
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err().strip())
        .isEqualTo("collscope emit: --inject 'slow-rank=3:300us@60s-20s': END must be after START");
  }

  @Test
  void rebootRankOnTheCudaBackendIsOneLineAndExitCode2(@TempDir Path dir) {
    CliRun r =
        CliRun.of(
            "emit",
            "--ranks",
            "2",
            "--backend",
            "cuda",
            "--inject",
            "reboot-rank=1@5s",
            "--record",
            dir.resolve("x.snapshots").toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("reboot-rank is supported on the cpu backend only");
  }

  @Test
  void emitsStartLineNamesTheCollectiveAndHowMuchOfItIsAccounted(@TempDir Path dir) {
    // an operator reading a window's percentiles must know whether they are every collective's or
    // a weighted sample's (the CUDA kernel below 64 MiB per rank: "1 collective in 16 accounted")
    CliRun r =
        CliRun.of(
            "emit",
            "--backend",
            "cpu",
            "--ranks",
            "2",
            "--communicator",
            "tp0",
            "--seconds",
            "1",
            "--record",
            dir.resolve("s.snapshots").toString());
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err())
        .contains(
            "collscope emit: 2 cpu ranks of tp0 (allreduce_oneshot_f32, every collective"
                + " accounted), boot ");
  }

  @ParameterizedTest
  @ValueSource(strings = {"12q", "32m", ""})
  void aBadTaskManagerHeapIsOneLineAndExitCode2(String heap, @TempDir Path dir) {
    CliRun r =
        CliRun.of(
            "cluster", "start", "--dir", dir.resolve("c").toString(), "--taskmanager-heap", heap);
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).contains("--taskmanager-heap");
  }

  @Test
  void aGroupRunWithoutItsCommandNamesTheCommandsItHas() {
    CliRun root = CliRun.of();
    assertThat(root.exitCode()).isEqualTo(2);
    assertThat(root.err().strip().lines())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("collscope: demo, emit, kafka, tail, replay, bench, ")
        .contains(" or job is required");
    assertThat(CliRun.of("history").err())
        .contains("culprits, latency, compare, generate or compact is required");
    assertThat(CliRun.of("bench").err())
        .contains("gpu, gemm-ar, nccl-overhead, worlds or pipeline is required");
    assertThat(CliRun.of("cluster").err())
        .contains("collscope cluster: start, stop or status is required");
    assertThat(CliRun.of("alerts").exitCode()).isEqualTo(2);
    assertThat(CliRun.of("alerts").err()).contains(" is required").doesNotContain("a command");
  }

  @Test
  void badValuesAreUsageErrors() {
    assertThat(CliRun.of("emit", "--ranks", "0").exitCode()).isEqualTo(2);
    assertThat(CliRun.of("emit", "--ranks", "four").exitCode()).isEqualTo(2);
    assertThat(CliRun.of("emit", "--interval", "soon").exitCode()).isEqualTo(2);
    CliRun backend = CliRun.of("emit", "--backend", "tpu");
    assertThat(backend.exitCode()).isEqualTo(2);
    assertThat(backend.err()).contains("--backend must be auto, cpu or cuda");
    assertThat(CliRun.of("tail").exitCode()).isEqualTo(2);
    assertThat(CliRun.of("nonsense").exitCode()).isEqualTo(2);
  }

  @Test
  void theLibrarysComplaintsNameTheFlag() {
    CliRun elements = CliRun.of("emit", "--elements", "0", "--bootstrap", "localhost:1");
    assertThat(elements.exitCode()).as(elements.err()).isEqualTo(2);
    assertThat(elements.err().strip().lines()).hasSize(1);
    assertThat(elements.err()).contains("collscope emit: --elements must be >= 1, got 0");
    CliRun budget = CliRun.of("emit", "--wait-budget", "10ns", "--bootstrap", "localhost:1");
    assertThat(budget.exitCode()).as(budget.err()).isEqualTo(2);
    assertThat(budget.err())
        .contains("collscope emit: --wait-budget must be at least 1us, got 10ns");
    CliRun inject = CliRun.of("emit", "--ranks", "4", "--inject", "dead-rank=9");
    assertThat(inject.err())
        .contains("collscope emit: --inject 'dead-rank=9': rank 9 is outside the world of 4 ranks");
    // the demo checks the ranks' options before it starts (or says it starts) anything
    CliRun demoRanks = CliRun.of("demo", "--ranks", "-3");
    assertThat(demoRanks.exitCode()).as(demoRanks.err()).isEqualTo(2);
    assertThat(demoRanks.err().strip().lines())
        .containsExactly("collscope demo: --ranks must be in 1..1024, got -3");
    CliRun demoReplay = CliRun.of("demo", "--replay", "/nonexistent/run.snapshots");
    assertThat(demoReplay.exitCode()).as(demoReplay.err()).isEqualTo(2);
    assertThat(demoReplay.err().strip().lines())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("collscope demo: --replay /nonexistent/run.snapshots: no such readable file");
    CliRun demoInject = CliRun.of("demo", "--ranks", "4", "--inject", "dead-rank=9");
    assertThat(demoInject.exitCode()).as(demoInject.err()).isEqualTo(2);
    assertThat(demoInject.err().strip().lines())
        .containsExactly(
            "collscope demo: --inject 'dead-rank=9': rank 9 is outside the world of 4 ranks");
    CliRun compact =
        CliRun.of("emit", "--source", "nccl", "--compact-from", "0", "--bootstrap", "localhost:1");
    assertThat(compact.exitCode()).as(compact.err()).isEqualTo(2);
    assertThat(compact.err().strip().lines())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("collscope emit: --compact-from must be at least 1");
  }

  @Test
  void benchGpuHelpNamesItsOptionsAndBadArgumentsAreUsageErrorsBeforeGpuWork(@TempDir Path dir)
      throws Exception {
    CliRun help = CliRun.of("bench", "gpu", "--help");
    assertThat(help.exitCode()).as(help.err()).isZero();
    assertThat(help.out())
        .contains("--rounds", "--min-effect-pct", "--baseline=FILE", "--algorithm=NAME")
        .contains("--launch=MODE")
        .contains("twoshot");
    CliRun launch = CliRun.of("bench", "gpu", "--launch", "eager");
    assertThat(launch.exitCode()).as(launch.err()).isEqualTo(2);
    assertThat(launch.err().strip().lines())
        .containsExactly("collscope bench gpu: --launch must be one of graph, stream, got 'eager'");
    CliRun ring = CliRun.of("bench", "gpu", "--algorithm", "ring");
    assertThat(ring.exitCode()).as(ring.err()).isEqualTo(2);
    assertThat(ring.err())
        .contains(
            "collscope bench gpu: --algorithm must be one of auto, oneshot-pull, oneshot-push,"
                + " twoshot, got 'ring'");
    CliRun rounds = CliRun.of("bench", "gpu", "--rounds", "0");
    assertThat(rounds.exitCode()).as(rounds.err()).isEqualTo(2);
    assertThat(rounds.err()).contains("collscope bench gpu: --rounds must be >= 1, got 0");
    // sizes, types and ranks the kernel cannot take: one line naming the flag, before any GPU
    // work (on a machine without one too, where they would otherwise read "no GPU")
    CliRun sizes = CliRun.of("bench", "gpu", "--sizes", "4K,4Q");
    assertThat(sizes.exitCode()).as(sizes.err()).isEqualTo(2);
    assertThat(sizes.err().strip().lines())
        .containsExactly(
            "collscope bench gpu: --sizes takes bytes per rank such as 4096, 4K or 16M, got '4Q'");
    CliRun types = CliRun.of("bench", "gpu", "--dtypes", "f32,f64");
    assertThat(types.exitCode()).as(types.err()).isEqualTo(2);
    assertThat(types.err())
        .contains("collscope bench gpu: --dtypes must be f32 or bf16, got 'f64'");
    for (String n : List.of("0", "33")) {
      CliRun ranks = CliRun.of("bench", "gpu", "--ranks", "2," + n);
      assertThat(ranks.exitCode()).as(ranks.err()).isEqualTo(2);
      assertThat(ranks.err())
          .contains("collscope bench gpu: --ranks must be in 1..32 on the GPU, got " + n);
    }
    CliRun missing = CliRun.of("bench", "gpu", "--baseline", dir.resolve("none.log").toString());
    assertThat(missing.exitCode()).as(missing.err()).isEqualTo(2);
    assertThat(missing.err()).contains("--baseline ").contains("cannot read");
    Path noRows = Files.writeString(dir.resolve("old.log"), "| f32 | 2 | 4K | 14.38 |\n");
    CliRun old = CliRun.of("bench", "gpu", "--baseline", noRows.toString());
    assertThat(old.exitCode()).as(old.err()).isEqualTo(2);
    assertThat(old.err()).contains("old.log: no nccl-rounds, lines");
  }

  @Test
  void benchPipelineTakesACheckpointIntervalAndRefusesATinyOneBeforeStartingABroker() {
    CliRun help = CliRun.of("bench", "pipeline", "--help");
    assertThat(help.exitCode()).as(help.err()).isZero();
    assertThat(help.out()).contains("--checkpoint-interval");
    CliRun tiny = CliRun.of("bench", "pipeline", "--checkpoint-interval", "1ms");
    assertThat(tiny.exitCode()).as(tiny.err()).isEqualTo(2);
    assertThat(tiny.err())
        .contains("collscope bench pipeline: --checkpoint-interval must be >= 10ms")
        .doesNotContain("broker ready");
  }

  @Test
  void aBackendThatCannotRunHereIsOneLineAndExitCode1(@TempDir Path dir) {
    assumeFalse(CudaProbe.available(), "a GPU is usable here");
    CliRun r =
        CliRun.of(
            "emit", "--backend", "cuda", "--seconds", "1", "--record", dir.resolve("s").toString());
    assertThat(r.exitCode()).as(r.err()).isEqualTo(1);
    assertThat(r.err().strip().lines()).hasSize(1);
    assertThat(r.err()).startsWith("collscope emit: error: --backend cuda: ");
  }

  @Test
  void theGpuBenchmarksWithoutAGpuSayItInOneLineAndExitCode1() {
    assumeFalse(CudaProbe.available(), "a GPU is usable here");
    for (String bench : List.of("gpu", "gemm-ar")) {
      CliRun r = CliRun.of("bench", bench, "--rounds", "1");
      assertThat(r.exitCode()).as(r.err()).isEqualTo(1);
      assertThat(r.err().strip().lines())
          .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
          .startsWith("collscope bench " + bench + ": error: the cuda backend cannot run here: ");
      assertThat(r.out()).as("no table").isEmpty();
    }
  }

  @Test
  void anUnreachableBrokerIsAClearErrorWithinTheTimeout() {
    CliRun r =
        CliRun.of("emit", "--bootstrap", "localhost:1", "--broker-timeout", "2s", "--seconds", "1");
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.err()).contains("cannot reach Kafka at localhost:1 within 2000 ms");
  }
}
