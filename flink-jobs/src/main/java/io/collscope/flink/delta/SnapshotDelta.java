package io.collscope.flink.delta;

import io.collscope.model.RankKey;
import io.collscope.model.RankTotals;

/**
 * What one rank did between two consecutive snapshots of one boot: the counters' differences, with
 * the start-up clock rate for deltas without clock samples. Timestamped with the later snapshot's
 * event time.
 */
public class SnapshotDelta {
  public String cluster;
  public String job;
  public String communicator;
  public String collective;
  public int rank;
  public int worldSize;
  public String host;
  public String bootId;
  public long eventTimeMs;
  public long cyclesPerSecond;
  public RankTotals totals;

  /**
   * Persistent-CTA kernels (CounterSnapshot version 5): tiles begun per quarter-round lead bucket,
   * throttle stalls and tiles, as differences; empty / 0 for other collectives.
   */
  public long[] leadHistogram = new long[0];

  public long throttleStalls;
  public long tiles;

  public SnapshotDelta() {}

  public RankKey key() {
    return new RankKey(cluster, job, communicator, rank);
  }
}
