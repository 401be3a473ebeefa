package io.collscope.cli;

import io.collscope.cuda.DType;
import io.collscope.cuda.OsarBench;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code collscope bench gpu}: the GPU kernels' latency, instrumented vs not, side by side. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description =
        "Benchmarks. 'bench gpu': one-shot all-reduce latency, instrumented vs uninstrumented, reporter cost, graph-replay counters.",
    subcommands = {BenchCommand.Gpu.class})
final class BenchCommand implements Runnable {

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new picocli.CommandLine.ParameterException(spec.commandLine(), "name a benchmark: gpu");
  }

  @Command(
      name = "gpu",
      mixinStandardHelpOptions = true,
      description = "GPU kernel latency by ranks, size and dtype.")
  static final class Gpu implements Callable<Integer> {
    @Option(
        names = "--ranks",
        split = ",",
        defaultValue = "2,4,8",
        description = "Default: ${DEFAULT-VALUE}")
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
        description = "Default: ${DEFAULT-VALUE}")
    List<String> dtypes;

    @Override
    public Integer call() throws Exception {
      return OsarBench.run(
          System.out,
          ranks.stream().mapToInt(Integer::intValue).toArray(),
          sizes.stream().mapToLong(OsarBench::bytes).toArray(),
          dtypes.stream()
              .map(d -> DType.valueOf(d.toUpperCase(Locale.ROOT)))
              .toArray(DType[]::new));
    }
  }
}
