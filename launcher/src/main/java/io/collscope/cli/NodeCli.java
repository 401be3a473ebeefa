package io.collscope.cli;

import picocli.CommandLine.Command;

/**
 * {@code collscope-node}: the commands a GPU node needs (emit, tail, bench), on a classpath without
 * Flink or the broker, for the self-contained runtime built by {@code dev/gpu-node-runtime.sh}.
 */
@Command(
    name = "collscope",
    mixinStandardHelpOptions = true,
    version = "collscope 0.1.0 (node)",
    description = "collscope on a GPU node: emit snapshots, tail topics, benchmark the kernels.",
    subcommands = {EmitCommand.class, TailCommand.class, BenchCommand.class})
public final class NodeCli implements Runnable {

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    picocli.CommandLine cl = Collscope.configure(new picocli.CommandLine(new NodeCli()));
    // The node has a few of the commands: keys of the others are the full CLI's to check.
    int rc = Collscope.checkConfig(cl, false);
    System.exit(rc != Defaults.EXIT_OK ? rc : cl.execute(args));
  }

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }
}
