package io.collscope.cli;

import io.collscope.cuda.AllReduceAlgorithm;
import io.collscope.cuda.CudaProbe;
import io.collscope.cuda.DType;
import io.collscope.cuda.GemmAllReduce;
import io.collscope.cuda.GemmArBench;
import io.collscope.cuda.NcclBaseline;
import io.collscope.cuda.OsarBench;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code collscope bench gpu}: the GPU kernels' device time, instrumented vs not (and vs NCCL),
 * side by side and classified.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description =
        "Benchmarks. 'bench gpu': one-shot all-reduce device time per collective, instrumented vs uninstrumented (and vs NCCL with --baseline), classified FASTER/PARITY/SLOWER/INCONCLUSIVE; reporter cost, graph-replay counters. 'bench gemm-ar': the fused FP8 GEMM + all-reduce, throttled vs unthrottled vs torch + NCCL.",
    subcommands = {
      BenchCommand.Gpu.class,
      BenchCommand.GemmAr.class,
      BenchCommand.NcclOverheadTable.class,
      BenchCommand.Worlds.class,
      PipelineBenchCommand.class
    })
final class BenchCommand implements Runnable {

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  @Command(
      name = "gpu",
      mixinStandardHelpOptions = true,
      description =
          "GPU kernel device time per collective by ranks, size and dtype: median (min..max) of interleaved rounds, with a classification of each variant.")
  static final class Gpu implements Callable<Integer> {
    @Option(
        names = "--ranks",
        split = ",",
        defaultValue = "2,4,8",
        description =
            "World sizes, every rank on this machine's GPUs (1 to 32). Default: ${DEFAULT-VALUE}")
    List<Integer> ranks;

    @Option(
        names = "--sizes",
        split = ",",
        defaultValue = "4K,64K,1M,16M",
        description = "Bytes per rank. Default: ${DEFAULT-VALUE}")
    List<String> sizes;

    @Option(
        names = "--dtypes",
        split = ",",
        defaultValue = "f32,bf16",
        description = "Element types: f32, bf16. Default: ${DEFAULT-VALUE}")
    List<String> dtypes;

    @Option(
        names = "--rounds",
        defaultValue = "" + OsarBench.DEFAULT_ROUNDS,
        description =
            "Interleaved rounds per variant; fewer than 5 classify as INCONCLUSIVE. Default: ${DEFAULT-VALUE}")
    int rounds;

    @Option(
        names = "--min-effect-pct",
        defaultValue = "" + OsarBench.DEFAULT_MIN_EFFECT_PCT,
        description =
            "Smallest difference that counts, in percent of the baseline's median. Default: ${DEFAULT-VALUE}")
    double minEffectPct;

    @Option(
        names = "--baseline",
        paramLabel = "FILE",
        description =
            "Output of dev/nccl_allreduce_bench.py (its nccl-rounds lines): adds NCCL's time, instrumented / NCCL and a class vs NCCL")
    Path baseline;

    @Option(
        names = "--algorithm",
        paramLabel = "NAME",
        defaultValue = "auto",
        description =
            "Data path of every row: "
                + AllReduceAlgorithm.CHOICES
                + " (auto: the one each size and world takes). Default: ${DEFAULT-VALUE}")
    String algorithm;

    @Option(
        names = "--launch",
        paramLabel = "MODE",
        defaultValue = "graph",
        description =
            "How the collectives are enqueued: graph (CUDA graphs replayed without the host; the"
                + " kernel takes the sample) or stream (launched one by one by the host, which"
                + " takes the sample and launches the plain kernel for the collectives it leaves"
                + " out, as the emitter does; host-bound below a few MB per rank)."
                + " Default: ${DEFAULT-VALUE}")
    String launch;

    @Override
    public Integer call() throws Exception {
      AllReduceAlgorithm forced = AllReduceAlgorithm.parse(algorithm); // a bad name: exit 2
      OsarBench.Launch mode = OsarBench.Launch.parse(launch); // likewise
      return OsarBench.run(
          System.out,
          ranks.stream().mapToInt(Integer::intValue).toArray(),
          sizes.stream().mapToLong(OsarBench::bytes).toArray(),
          dtypes.stream().map(OsarBench::dtype).toArray(DType[]::new),
          rounds,
          minEffectPct,
          baseline == null ? null : readBaseline(),
          forced,
          mode);
    }

    /** The baseline, or a usage error (exit 2) naming the flag: checked before any GPU work. */
    private NcclBaseline readBaseline() {
      try {
        return NcclBaseline.read(baseline);
      } catch (IOException e) {
        throw new IllegalArgumentException(
            "--baseline " + baseline + ": cannot read (" + e + ")", e);
      }
    }
  }

  @Command(
      name = "nccl-overhead",
      mixinStandardHelpOptions = true,
      description =
          "The NCCL profiler plugin's overhead from the logs of dev/nccl_profiler_run.py or"
              + " dev/nccl_overhead_variants.py (their nccl-overhead lines: variants in interleaved"
              + " rounds of one run), each variant classified FASTER/PARITY/SLOWER/INCONCLUSIVE"
              + " against the baseline and the goals (0.5 % from 1 MiB, 200 ns per collective"
              + " below).")
  static final class NcclOverheadTable implements Callable<Integer> {
    @picocli.CommandLine.Parameters(
        paramLabel = "LOG",
        arity = "1..*",
        description = "The runs' output (lines of several logs are read together).")
    List<Path> logs;

    @picocli.CommandLine.Option(
        names = "--baseline",
        defaultValue = io.collscope.nccl.NcclOverhead.DEFAULT_BASELINE,
        description =
            "The variant the others are compared with (default: ${DEFAULT-VALUE}, the plugin's"
                + " events off; dev/nccl_overhead_variants.py: none).")
    String baseline;

    @Override
    public Integer call() throws Exception {
      List<String> lines = new java.util.ArrayList<>();
      for (Path log : logs) {
        try {
          lines.addAll(java.nio.file.Files.readAllLines(log));
        } catch (IOException e) {
          throw new IllegalArgumentException(log + ": cannot read (" + e.getMessage() + ")", e);
        }
      }
      List<io.collscope.nccl.NcclOverhead.Row> rows =
          io.collscope.nccl.NcclOverhead.parse(lines, baseline);
      if (rows.isEmpty()) throw new IllegalArgumentException(logs + ": no nccl-overhead lines");
      System.out.print(io.collscope.nccl.NcclOverhead.table(rows, baseline));
      return 0;
    }
  }

  @Command(
      name = "worlds",
      mixinStandardHelpOptions = true,
      description =
          "Cost of one window against world size: attribution time per window and the job's state per rank, over simulated worlds with one slow rank.")
  static final class Worlds implements Callable<Integer> {
    @Option(
        names = "--ranks",
        split = ",",
        defaultValue = "8,64,256,1024",
        description = "World sizes simulated (2 or more). Default: ${DEFAULT-VALUE}")
    List<Integer> ranks;

    @Option(
        names = "--compact-from",
        defaultValue = "" + io.collscope.model.CompactPeers.DEFAULT_COMPACT_FROM,
        description = "Worlds from this size send compact records. Default: ${DEFAULT-VALUE}")
    int compactFrom;

    @Option(
        names = "--repeats",
        defaultValue = "9",
        description =
            "Measurements per world size (the median is printed). Default: ${DEFAULT-VALUE}")
    int repeats;

    @Override
    public Integer call() {
      if (repeats < 1) throw new IllegalArgumentException("--repeats must be >= 1");
      for (int r : ranks) {
        if (r < 2) throw new IllegalArgumentException("--ranks must be >= 2, got " + r);
      }
      io.collscope.benchmarks.WorldCostBench.run(
          ranks.stream().mapToInt(Integer::intValue).toArray(), compactFrom, repeats, System.out);
      return 0;
    }
  }

  @Command(
      name = "gemm-ar",
      mixinStandardHelpOptions = true,
      description =
          "Fused FP8 GEMM + all-reduce (one rank per GPU of this process): throttled vs unthrottled in interleaved rounds, the dispatched program vs torch._scaled_mm + NCCL (--torch), SM clock floor checked, each classified FASTER/PARITY/SLOWER/INCONCLUSIVE; drift and phases per program.")
  static final class GemmAr implements Callable<Integer> {
    @Option(
        names = "--ranks",
        defaultValue = "2",
        description = "Ranks, one per GPU of this process. Default: ${DEFAULT-VALUE}")
    int ranks;

    @Option(
        names = "--shapes",
        split = ",",
        defaultValue = "4096x6144x4096,16384x6144x4096,32768x6144x4096,65536x8192x4096",
        description = "MxNxK, K per rank. Default: ${DEFAULT-VALUE}")
    List<String> shapes;

    @Option(
        names = "--rounds",
        defaultValue = "" + GemmArBench.DEFAULT_ROUNDS,
        description =
            "Interleaved rounds per program; fewer than 5 classify as INCONCLUSIVE. Default: ${DEFAULT-VALUE}")
    int rounds;

    @Option(
        names = "--min-effect-pct",
        defaultValue = "" + GemmArBench.DEFAULT_MIN_EFFECT_PCT,
        description =
            "Smallest difference that counts, in percent of the baseline's median. Default: ${DEFAULT-VALUE}")
    double minEffectPct;

    @Option(
        names = "--clock-floor-mhz",
        defaultValue = "" + GemmArBench.DEFAULT_CLOCK_FLOOR_MHZ,
        description =
            "A case with any round's SM clock below this is INCONCLUSIVE. Default: ${DEFAULT-VALUE}")
    int clockFloorMhz;

    @Option(
        names = "--torch",
        paramLabel = "FILE",
        description =
            "Output of dev/gemm_ar_torch_bench.py (its torch-rounds lines): adds torch + NCCL's time and a class against it")
    Path torch;

    @Override
    public Integer call() throws Exception {
      if (rounds < 1) throw new IllegalArgumentException("--rounds must be >= 1");
      List<GemmAllReduce.Shape> parsed = new java.util.ArrayList<>();
      for (String s : shapes) parsed.add(GemmArBench.shape(s));
      for (GemmAllReduce.Shape s : parsed) GemmAllReduce.checkShape(s);
      // one line before any table: without a GPU every row would only say it failed
      CudaProbe.requireGpu();
      java.util.Map<String, double[]> base = java.util.Map.of();
      if (torch != null) {
        try {
          base = GemmArBench.readTorch(torch, ranks);
        } catch (IOException e) {
          throw new IllegalArgumentException("--torch " + torch + ": cannot read (" + e + ")", e);
        }
      }
      return GemmArBench.run(System.out, ranks, parsed, rounds, minEffectPct, clockFloorMhz, base);
    }
  }
}
