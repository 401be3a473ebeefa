package io.collscope.cuda;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A child process of {@link ProcessPerGpuGpuTest}: one rank of a communicator whose ranks are
 * processes. Arguments: RANK WORLD RENDEZVOUS_DIR COLLECTIVES [INJECT [ELEMENTS]] (INJECT "-":
 * none; ELEMENTS: f32 elements per rank, default 64 Ki). Prints one line "OK ..." and exits 0, or
 * prints the error and exits 1.
 */
public final class IpcRankProcess {

  public static void main(String[] a) {
    int rank = Integer.parseInt(a[0]);
    int world = Integer.parseInt(a[1]);
    Path dir = Path.of(a[2]);
    int count = Integer.parseInt(a[3]);
    FaultPlan plan =
        a.length > 4 && !a[4].equals("-") ? FaultPlan.parse(List.of(a[4]), world) : FaultPlan.NONE;
    int elements = a.length > 5 ? Integer.parseInt(a[5]) : 64 << 10;
    AllReduceAlgorithm algorithm = a.length > 6 ? AllReduceAlgorithm.parse(a[6]) : null;
    CollectiveConfig cfg = CollectiveConfig.of(world).withElements(elements);
    String result = null;
    try (CudaCollective c =
        CudaCollective.openProcessRank(
            cfg,
            plan,
            CudaCollective.Options.defaults(world).withAlgorithm(algorithm),
            rank,
            // one GPU each where there are enough (16 MB per rank takes 128 blocks: two such
            // ranks on one GPU are refused by the placement's occupancy check)
            rank % CudaProbe.gpuCount(),
            dir,
            Duration.ofSeconds(60))) {
      CudaBenchHarness h = new CudaBenchHarness(c);
      h.runCollectives(count, true);
      c.flush();
      h.verifyOutput(rank);
      Counters k = new SnapshotReader(c.block(rank)).read();
      StringBuilder w = new StringBuilder();
      for (long v : k.peerWaitCycles()) w.append(v).append(',');
      result =
          String.format(
              "OK rank=%d calls=%d timeouts=%d path=%s peer_wait_cycles=%s",
              rank, k.calls(), k.timeouts(), c.algorithm().flagName(), w);
    } catch (Throwable t) {
      t.printStackTrace(System.out);
      System.out.println("FAILED rank=" + rank + ": " + t);
      System.exit(1);
      return;
    }
    // after close(): the peers have drained this rank's memory and it is freed
    System.out.println(result);
    try (var left = java.nio.file.Files.list(dir)) {
      System.out.println(
          "rank " + rank + " left in rendezvous: " + left.map(Path::getFileName).toList());
    } catch (java.io.IOException e) {
      System.out.println("rank " + rank + " cannot list rendezvous: " + e);
    }
    System.exit(0);
  }
}
