package io.collscope.flink.window;

/**
 * Running sums of one rank's deltas within one window. Cycles are converted to microseconds per
 * delta with that delta's own clock rate, so a recalibration mid-window is handled.
 */
public class RankWindowAccumulator {
  public String communicator;
  public int rank = -1;
  public int worldSize;
  public String host;
  public long cyclesPerSecond;
  public long calls;
  public long bytes;
  public long timeouts;
  public double guardUs;
  public double copyUs;
  public double publishUs;
  public double waitUs;
  public double reduceUs;
  public double[] peerWaitUs;
  public long[] peerArrivedLast;
  public long[] histogram;

  public RankWindowAccumulator() {}
}
