package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code dev/nccl_overhead_direct.c}, the overhead harness that calls NCCL directly, run on the CPU
 * against {@code src/test/c/nccl_direct_standin.c} (NCCL and the CUDA runtime stood in for, the
 * profiler plugin loaded and fed as NCCL does) with {@code dev/nccl_plugin_variants.c} and the
 * committed {@code libnccl-profiler-collscope.so}: its lines are what {@code collscope bench
 * nccl-overhead} classifies, and the variant switch reaches the plugin under test only in the
 * rounds of our variants. Compiled with gcc (a test tool: see dev/setup-test-tools.sh).
 */
class NcclOverheadDirectTest {

  static final String GCC = System.getenv().getOrDefault("COLLSCOPE_GCC_BIN", "gcc");
  static final int ROUNDS = 5;
  static Path harness;
  static Path standin;
  static Path variants;

  @BeforeAll
  static void compile() throws Exception {
    Path t = Path.of("target/nccl-direct").toAbsolutePath();
    Files.createDirectories(t);
    harness = t.resolve("nccl_overhead_direct");
    standin = t.resolve("libnccl-direct-standin.so");
    variants = t.resolve("libnccl-plugin-variants.so");
    build(
        GCC,
        "-O2",
        "-Wall",
        "-Werror",
        "-o",
        harness,
        "../dev/nccl_overhead_direct.c",
        "-ldl",
        "-lm",
        "-lpthread");
    build(
        GCC,
        "-O1",
        "-Wall",
        "-Werror",
        "-fPIC",
        "-shared",
        "-o",
        standin,
        "src/test/c/nccl_direct_standin.c",
        "-ldl",
        "-lpthread");
    build(
        GCC,
        "-O2",
        "-Wall",
        "-Werror",
        "-fPIC",
        "-shared",
        "-o",
        variants,
        "../dev/nccl_plugin_variants.c",
        "-ldl");
  }

  static void build(Object... cmd) throws Exception {
    Result r = exec(Map.of(), cmd);
    assertThat(r.rc).as(r.out).isZero();
  }

  record Result(int rc, String out) {
    List<String> lines() {
      return out.lines().toList();
    }
  }

  static Result exec(Map<String, String> env, Object... cmd) throws Exception {
    List<String> c = new ArrayList<>();
    for (Object o : cmd) c.add(o.toString());
    ProcessBuilder pb = new ProcessBuilder(c).redirectErrorStream(true);
    pb.environment().remove("NCCL_PROFILER_PLUGIN");
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Result(p.waitFor(), out);
  }

  static Result runHarness(Path shm, boolean plugin, String variantList) throws Exception {
    return runHarness(shm, plugin, variantList, 0);
  }

  static Result runHarness(Path shm, boolean plugin, String variantList, int threads)
      throws Exception {
    return runHarness(shm, plugin, variantList, "--threads", threads);
  }

  static Result runHarness(Path shm, boolean plugin, String variantList, String mode, int on)
      throws Exception {
    Map<String, String> env =
        plugin
            ? Map.of(
                "COLLSCOPE_NCCL_LIB", standin.toString(),
                "COLLSCOPE_CUDART_LIB", standin.toString(),
                "NCCL_PROFILER_PLUGIN", variants.toString(),
                "COLLSCOPE_BENCH_PLUGIN", NcclProfilerPluginTest.LIB.toAbsolutePath().toString(),
                "COLLSCOPE_SHM_DIR", shm.toString())
            : Map.of(
                "COLLSCOPE_NCCL_LIB", standin.toString(),
                "COLLSCOPE_CUDART_LIB", standin.toString());
    Result r =
        exec(
            env,
            harness,
            "--sizes",
            "4K,8K",
            "--variants",
            variantList,
            "--rounds",
            ROUNDS,
            "--round-ms",
            1,
            "--min-steps",
            40,
            "--max-steps",
            100,
            mode,
            on);
    assertThat(r.rc).as(r.out).isZero();
    return r;
  }

  /** Every row has a positive value for each of the ROUNDS rounds. */
  static void assertEveryRoundMeasured(List<NcclOverhead.Row> rows) {
    assertThat(rows)
        .allSatisfy(
            row ->
                assertThat(java.util.Arrays.stream(row.on()).boxed().toList())
                    .hasSize(ROUNDS)
                    .allMatch(v -> v > 0));
  }

  /** The steps each variant ran, its rounds' and their warm-ups', over every size of the run. */
  static long stepsOfEachVariant(Result r) {
    long steps = 0;
    Matcher m =
        Pattern.compile("size \\d+: (\\d+) steps per round \\(warm-up (\\d+)\\)").matcher(r.out);
    while (m.find()) steps += (Long.parseLong(m.group(1)) + Long.parseLong(m.group(2))) * ROUNDS;
    assertThat(steps).isPositive();
    return steps;
  }

  /**
   * Each rank's counter block, as the plugin under test last published it, counted {@code calls}.
   */
  static void assertEachRankCounted(Result r, long calls) {
    List<String> finals = r.lines().stream().filter(l -> l.startsWith("block,size=-1,")).toList();
    assertThat(finals).hasSize(2);
    for (String l : finals) {
      Matcher b = Pattern.compile(",calls=(\\d+),").matcher(l);
      assertThat(b.find()).as(l).isTrue();
      assertThat(Long.parseLong(b.group(1))).as(l).isEqualTo(calls);
    }
  }

  @Test
  void itsRoundsAreWhatTheBenchCommandClassifiesDeviceAndHostTimeAlike(@TempDir Path shm)
      throws Exception {
    Result r = runHarness(shm, true, "none,kch,ours:64,ours:1,none@aa");

    List<NcclOverhead.Row> device = NcclOverhead.parse(r.lines(), "none");
    List<String> host =
        r.lines().stream()
            .filter(l -> l.startsWith("nccl-overhead-host,"))
            .map(l -> l.replaceFirst("^nccl-overhead-host,", "nccl-overhead,"))
            .toList();
    for (List<NcclOverhead.Row> rows : List.of(device, NcclOverhead.parse(host, "none"))) {
      assertThat(rows)
          .extracting(row -> row.bytes() + " " + row.variant())
          .containsExactly(
              "4096 kch",
              "4096 ours:64",
              "4096 ours:1",
              "4096 none@aa",
              "8192 kch",
              "8192 ours:64",
              "8192 ours:1",
              "8192 none@aa");
      assertThat(rows).allSatisfy(row -> assertThat(row.paired()).isTrue());
      assertEveryRoundMeasured(rows);
    }
    assertThat(r.lines().stream().filter(l -> l.startsWith("nccl-direct-paired,"))).hasSize(16);
    assertThat(r.out).contains("result 2 2").doesNotContain("wrong all-reduce");
  }

  @Test
  void thePluginUnderTestCountsTheRoundsOfOurVariantsOnlyAndTimesAsSampled(@TempDir Path shm)
      throws Exception {
    Result r = runHarness(shm, true, "none,kch,ours:64,ours:1");

    // Steps per round and warm-up per size: each ours variant ran (steps + warm-up) x ROUNDS.
    long perOurs = 0;
    Matcher m =
        Pattern.compile("size \\d+: (\\d+) steps per round \\(warm-up (\\d+)\\)").matcher(r.out);
    while (m.find()) perOurs += (Long.parseLong(m.group(1)) + Long.parseLong(m.group(2))) * ROUNDS;
    assertThat(perOurs).isPositive();
    Pattern block =
        Pattern.compile("block,size=-1,.*rank-(\\d)\\.blk,calls=(\\d+),.*,timed=(\\d+),sampling=");
    List<String> finals = r.lines().stream().filter(l -> l.startsWith("block,size=-1,")).toList();
    assertThat(finals).hasSize(2);
    for (String l : finals) {
      Matcher b = block.matcher(l);
      assertThat(b.find()).as(l).isTrue();
      long calls = Long.parseLong(b.group(2));
      long timed = Long.parseLong(b.group(3));
      // none and kch rounds never reach it; ours:64 and ours:1 rounds do, every call counted.
      assertThat(calls).as(l).isEqualTo(2 * perOurs);
      // ours:1 times every collective, ours:64 about 1 in 64 more.
      assertThat(timed).as(l).isBetween(perOurs, perOurs + perOurs / 16);
    }
    // The stand-in saw KernelCh in the mask in kch rounds and ours:1 rounds (and some ours:64).
    Matcher k = Pattern.compile("kernel-channel collectives (\\d+) of (\\d+)").matcher(r.out);
    assertThat(k.find()).as(r.out).isTrue();
    assertThat(Long.parseLong(k.group(1))).isGreaterThanOrEqualTo(2 * 2 * perOurs);
  }

  /**
   * {@code --threads 1}: each rank's collectives from a thread of its own, as in a job with one
   * rank per process. Every call still reaches the plugin under test (each rank: the steps of our
   * rounds), the sums are right, and the header tells the bench command that a step is one
   * collective per thread (its absolute goal is one rank's, 200 ns).
   */
  @Test
  void withOneThreadPerRankEveryCallIsCountedAndAStepIsOneRanksCollective(@TempDir Path shm)
      throws Exception {
    Result r = runHarness(shm, true, "none,ours:64", 1);

    assertThat(r.out).contains("devices 2 threads 2").contains("result 2 2");
    assertEachRankCounted(r, stepsOfEachVariant(r));
    List<NcclOverhead.Row> rows = NcclOverhead.parse(r.lines(), "none");
    assertThat(rows).extracting(NcclOverhead.Row::variant).containsExactly("ours:64", "ours:64");
    assertThat(rows.get(0).goalUs()).isEqualTo(NcclOverhead.SMALL_GOAL_US);
  }

  /**
   * {@code --processes 1}: a process per rank, forked before any CUDA call, joined through
   * ncclGetUniqueId / ncclCommInitRank, each with its own copy of the plugins. Each rank's plugin
   * counts exactly its own rank's calls of our rounds (a process that switched variants out of step
   * with the other would count a different number), the parent prints the rounds, and the header
   * says a step is one collective per process.
   */
  @Test
  void withAProcessPerRankEachPluginCountsItsOwnRanksCalls(@TempDir Path shm) throws Exception {
    Result r = runHarness(shm, true, "none,ours:64,none@aa", "--processes", 1);

    assertThat(r.out).contains("devices 2 threads 1 processes 2").contains("result 2 2");
    assertEachRankCounted(r, stepsOfEachVariant(r));
    List<NcclOverhead.Row> rows = NcclOverhead.parse(r.lines(), "none");
    assertThat(rows)
        .extracting(row -> row.bytes() + " " + row.variant())
        .containsExactly("4096 ours:64", "4096 none@aa", "8192 ours:64", "8192 none@aa");
    assertEveryRoundMeasured(rows);
    assertThat(rows.get(0).goalUs()).isEqualTo(NcclOverhead.SMALL_GOAL_US);
  }

  @Test
  void withoutAPluginItsLinesAreNeverPairedWithAnotherProcess(@TempDir Path shm) throws Exception {
    Result r = runHarness(shm, false, "none,none@aa");

    assertThat(r.lines().stream().filter(l -> l.startsWith("nccl-overhead-separate,"))).hasSize(4);
    assertThat(r.lines().stream().filter(l -> l.startsWith("nccl-overhead,"))).isEmpty();
    assertThat(r.out).doesNotContain("block,");
  }

  @Test
  void aBadFlagIsOneLineAndExitCodeTwo() throws Exception {
    for (String[] args :
        List.of(
            new String[] {"--rounds", "0"},
            new String[] {"--variants", "ours:x"},
            new String[] {"--variants", "none,none"},
            new String[] {"--sizes", "3"},
            new String[] {"--bogus", "1"})) {
      Object[] cmd = new Object[args.length + 1];
      cmd[0] = harness;
      System.arraycopy(args, 0, cmd, 1, args.length);
      Result r = exec(Map.of(), cmd);
      assertThat(r.rc).as(String.join(" ", args)).isEqualTo(2);
      assertThat(r.lines()).as(r.out).hasSize(1);
    }
  }
}
