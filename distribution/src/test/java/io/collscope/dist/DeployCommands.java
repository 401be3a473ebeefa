package io.collscope.dist;

import java.util.ArrayList;
import java.util.List;

/**
 * The command lines a deployment runs, in one place: ClusterITCase runs them against a real cluster
 * (adding only what a short test needs: a fault, a duration), and DeployFilesTest checks that
 * docker/compose.yaml's services run exactly these.
 */
final class DeployCommands {

  private DeployCommands() {}

  /** Submits the attribution job to the JobManager at {@code rest}. */
  static List<String> submit(String rest) {
    return List.of("job", "submit", "--rest", rest);
  }

  /** Upgrades the running attribution job (stop-with-savepoint, submit from it). */
  static List<String> upgrade(String rest) {
    return List.of("job", "upgrade", "--rest", rest);
  }

  /** CPU emitters: one communicator of {@code ranks} ranks. */
  static List<String> cpuEmitters(int ranks, String communicator) {
    return List.of(
        "emit",
        "--backend",
        "cpu",
        "--ranks",
        Integer.toString(ranks),
        "--communicator",
        communicator);
  }

  static List<String> plus(List<String> base, String... more) {
    List<String> all = new ArrayList<>(base);
    all.addAll(List.of(more));
    return all;
  }
}
