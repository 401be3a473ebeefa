package io.collscope.cuda;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.Emitter;
import io.collscope.emitter.Identity;
import io.collscope.emitter.SnapshotSink;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A child process of {@link ProcessPerGpuGpuTest}: one rank of a one-rank-per-process communicator
 * run as {@code collscope emit --rank R --seconds S} runs it (the backend, the emitter and its
 * reporter), its snapshots kept in memory. Arguments: RANK WORLD RENDEZVOUS_DIR SECONDS. Prints
 * "RUNNING rank=R" at its first snapshot, then "LAST rank=R calls=C timeouts=T" (its last snapshot,
 * taken after the ranks stopped) and "OK rank=R" with exit 0, or "FAILED rank=R: ..." and exit 1
 * when the backend failed, as emit's exit code does. It uses only what the backend had before the
 * stop agreement, so the same test runs against an earlier build.
 */
public final class IpcEmitProcess {

  public static void main(String[] a) {
    int rank = Integer.parseInt(a[0]);
    int world = Integer.parseInt(a[1]);
    Path dir = Path.of(a[2]);
    int seconds = Integer.parseInt(a[3]);
    CollectiveConfig cfg = CollectiveConfig.of(world).withElements(64 << 10);
    AtomicReference<CounterSnapshot> last = new AtomicReference<>();
    SnapshotSink sink =
        SnapshotSink.to(
            s -> {
              if (last.getAndSet(s) == null) System.out.println("RUNNING rank=" + rank);
            });
    Emitter.Result result;
    try (CudaCollective c =
        CudaCollective.openProcessRank(
            cfg,
            FaultPlan.NONE,
            CudaCollective.Options.defaults(world),
            rank,
            rank % CudaProbe.gpuCount(),
            dir,
            Duration.ofSeconds(60))) {
      Emitter e =
          new Emitter(c, Identity.of("test", "clean-stop", "tp0"), sink, Duration.ofMillis(200));
      result = e.run(Duration.ofSeconds(seconds));
    } catch (Throwable t) {
      t.printStackTrace(System.out);
      System.out.println("FAILED rank=" + rank + ": " + t);
      System.exit(1);
      return;
    }
    CounterSnapshot s = last.get();
    System.out.printf(
        "LAST rank=%d calls=%d timeouts=%d%n",
        rank, s == null ? -1 : s.getCalls(), s == null ? -1 : s.getTimeouts());
    if (result.failure().isPresent()) {
      System.out.println("FAILED rank=" + rank + ": " + result.failure().get());
      System.exit(1);
    }
    System.out.println("OK rank=" + rank);
    System.exit(0);
  }
}
