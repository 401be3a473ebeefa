package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The one place test snapshots are built. Shared with other modules through this module's test-jar.
 */
public final class SnapshotFixtures {

  private SnapshotFixtures() {}

  /** A valid snapshot of rank {@code rank} in a world of {@code n}, all counters zero. */
  public static CounterSnapshot.Builder snapshot(String communicator, int rank, int n) {
    return CounterSnapshot.newBuilder()
        .setCluster("test-cluster")
        .setJob("test-job")
        .setCommunicator(communicator)
        .setCollective("allreduce_oneshot_f32")
        .setBackend("cpu")
        .setWorldSize(n)
        .setRank(rank)
        .setHost("host-" + rank)
        .setDevice("cpu")
        .setBootId("boot-" + rank)
        .setSeq(1)
        .setEventTime(java.time.Instant.parse("2026-01-01T00:00:01Z"))
        .setCyclesPerSecond(1_000_000_000L)
        .setClockNs(0)
        .setClockCycles(0)
        .setCalls(0)
        .setBytes(0)
        .setTimeouts(0)
        .setGuardCycles(0)
        .setCopyCycles(0)
        .setPublishCycles(0)
        .setWaitCycles(0)
        .setReduceCycles(0)
        .setPeerWaitCycles(zeros(n))
        .setPeerArrivedLast(zeros(n))
        .setLatencyHistogram(zeros(40))
        .setReadRetries(0);
  }

  public static List<Long> zeros(int n) {
    return new ArrayList<>(Collections.nCopies(n, 0L));
  }
}
