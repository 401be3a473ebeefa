package io.collscope.flink.delta;

/**
 * What one rank did between two consecutive snapshots of one boot: counter differences, with the
 * clock rate needed to turn cycles into time. Timestamped with the later snapshot's event time.
 */
public class SnapshotDelta {
  public String communicator;
  public int rank;
  public int worldSize;
  public String host;
  public String bootId;
  public long eventTimeMs;
  public long cyclesPerSecond;
  public long calls;
  public long bytes;
  public long guardCycles;
  public long copyCycles;
  public long publishCycles;
  public long waitCycles;
  public long reduceCycles;
  public long timeouts;
  public long[] peerWaitCycles;
  public long[] peerArrivedLast;
  public long[] histogram;

  public SnapshotDelta() {}
}
