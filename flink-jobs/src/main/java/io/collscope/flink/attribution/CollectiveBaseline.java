package io.collscope.flink.attribution;

import io.collscope.model.Phase;
import java.util.Arrays;

/**
 * What one communicator's collective costs when nothing is wrong: the collective's own cost and the
 * median time of each phase over its most recent windows without findings, at one message size. A
 * window whose cost stands well above it, with no culprit to explain it, is a uniform slowdown. The
 * regression alerts keep their own, richer baselines; this one only lets a single window say
 * "everyone got slower" instead of "nothing is wrong".
 *
 * <p>A POJO (public fields, no-argument constructor) so Flink keeps it in keyed state field by
 * field. A change of bytes per call starts it over: a different message size is a different
 * collective, not a regression.
 */
public class CollectiveBaseline {

  /** Windows remembered: half a minute of 1 s windows. */
  public static final int CAPACITY = 32;

  public long bytesPerCall = -1;
  public int size;
  public int next;

  /** Ring of the collective's own cost per window, µs. */
  public double[] costs = new double[CAPACITY];

  /** Ring of the median over ranks of each phase, µs: {@code [slot * Phase.COUNT + phase]}. */
  public double[] phases = new double[CAPACITY * Phase.COUNT];

  public CollectiveBaseline() {}

  public boolean ready(int minWindows) {
    return size >= minWindows;
  }

  /** Remembers one clean window; a new message size forgets the old ones first. */
  public void add(long bytesPerCall, double cost, double[] phaseMedians) {
    if (bytesPerCall != this.bytesPerCall) {
      this.bytesPerCall = bytesPerCall;
      size = 0;
      next = 0;
    }
    costs[next] = cost;
    System.arraycopy(phaseMedians, 0, phases, next * Phase.COUNT, Phase.COUNT);
    next = (next + 1) % CAPACITY;
    size = Math.min(size + 1, CAPACITY);
  }

  /** Whether it describes collectives of this size. */
  public boolean matches(long bytesPerCall) {
    return this.bytesPerCall == bytesPerCall;
  }

  public double cost() {
    return median(costs, 0, 1);
  }

  /**
   * How much the cost varies from window to window: the median absolute deviation of the remembered
   * costs, scaled to a standard deviation (× 1.4826).
   */
  public double costSpread() {
    if (size == 0) return 0;
    double m = cost();
    double[] dev = new double[size];
    for (int i = 0; i < size; i++) dev[i] = Math.abs(costs[i] - m);
    Arrays.sort(dev);
    double mad = size % 2 == 1 ? dev[size / 2] : (dev[size / 2 - 1] + dev[size / 2]) / 2;
    return 1.4826 * mad;
  }

  public double phase(Phase p) {
    return median(phases, p.ordinal(), Phase.COUNT);
  }

  private double median(double[] ring, int offset, int stride) {
    if (size == 0) return 0;
    double[] v = new double[size];
    for (int i = 0; i < size; i++) v[i] = ring[i * stride + offset];
    Arrays.sort(v);
    return size % 2 == 1 ? v[size / 2] : (v[size / 2 - 1] + v[size / 2]) / 2;
  }
}
