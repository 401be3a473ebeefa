package io.collscope.flink.alert;

import io.collscope.model.Phase;
import java.util.Arrays;

/**
 * What a communicator's collective costs when nothing is wrong, learned online: its latency (mean
 * µs per collective, the median over ranks) and each phase's, over its most recent windows at one
 * message size that were neither under an open regression alert nor too thin to count. Robust to
 * the odd bad window: the comparison uses the median and the median absolute deviation.
 *
 * <p>A POJO (public fields, no-argument constructor) so Flink keeps it in keyed state field by
 * field. A new message size starts it over: a different size is a different collective.
 */
public class LatencyBaseline {

  /** Windows remembered: a minute of 1 s windows, ten of 10 s windows. */
  public static final int CAPACITY = 60;

  public long bytesPerCall = -1;
  public int size;
  public int next;
  public double[] latency = new double[CAPACITY];
  public double[] phases = new double[CAPACITY * Phase.COUNT];

  public LatencyBaseline() {}

  /** A baseline seeded with {@code windows} copies of one known latency (a baseline file's row). */
  public static LatencyBaseline seeded(
      long bytesPerCall, double latencyUs, double madUs, int windows) {
    LatencyBaseline b = new LatencyBaseline();
    double[] none = new double[Phase.COUNT];
    // Half the windows on each side of the median, madUs away: the same median and MAD.
    for (int i = 0; i < Math.min(windows, CAPACITY); i++) {
      b.add(bytesPerCall, latencyUs + (i % 2 == 0 ? madUs : -madUs), none);
    }
    return b;
  }

  public boolean matches(long bytesPerCall) {
    return this.bytesPerCall == bytesPerCall;
  }

  public void add(long bytesPerCall, double latencyUs, double[] phaseUs) {
    if (bytesPerCall != this.bytesPerCall) {
      this.bytesPerCall = bytesPerCall;
      size = 0;
      next = 0;
    }
    latency[next] = latencyUs;
    System.arraycopy(phaseUs, 0, phases, next * Phase.COUNT, Phase.COUNT);
    next = (next + 1) % CAPACITY;
    size = Math.min(size + 1, CAPACITY);
  }

  public double median() {
    return median(latency, 0, 1, 0);
  }

  /** Median absolute deviation of the latency, scaled to a standard deviation (× 1.4826). */
  public double spread() {
    return 1.4826 * median(latency, 0, 1, median());
  }

  public double phase(Phase p) {
    return median(phases, p.ordinal(), Phase.COUNT, 0);
  }

  /** The median of |v - center| over the remembered windows (center 0: of v itself). */
  private double median(double[] ring, int offset, int stride, double center) {
    if (size == 0) return 0;
    double[] v = new double[size];
    for (int i = 0; i < size; i++) {
      double x = ring[i * stride + offset];
      v[i] = center == 0 ? x : Math.abs(x - center);
    }
    Arrays.sort(v);
    return size % 2 == 1 ? v[size / 2] : (v[size / 2 - 1] + v[size / 2]) / 2;
  }
}
