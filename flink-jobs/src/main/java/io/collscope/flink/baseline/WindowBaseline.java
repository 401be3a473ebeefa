package io.collscope.flink.baseline;

import io.collscope.model.Phase;
import java.util.Arrays;

/**
 * What a communicator's collective costs when nothing is wrong: one value per window (the
 * attribution keeps the collective's own cost, the alerts its latency) and the median over ranks of
 * each phase, over its most recent good windows at one message size. The caller decides which
 * windows are good; comparisons use the median and the median absolute deviation, so the odd bad
 * window that slips in moves nothing.
 *
 * <p>A POJO (public fields, no-argument constructor) so Flink keeps it in keyed state field by
 * field. A new message size starts it over: a different size is a different collective.
 */
public class WindowBaseline {

  public long bytesPerCall = -1;
  public int size;
  public int next;
  public double[] values = new double[0];
  public double[] phases = new double[0];

  /** Ring of a noise measure of each window (the attribution's matrix noise; else 0). */
  public double[] noise = new double[0];

  /**
   * Two-rank communicators: a ring of the asymmetry of clean windows (rank 1's lateness as rank 0
   * saw it less rank 0's as rank 1 saw it, µs), the spread a two-rank finding must clear. Empty in
   * a baseline restored from a job before it; {@link #asymmetries} of them are held.
   */
  public double[] asymmetry = new double[0];

  public int asymmetries;
  public int nextAsymmetry;

  /**
   * How many windows in a row, up to the last one attributed, cost more than this baseline's band:
   * a uniform slowdown is named once that many reach Attributor.UNIFORM_WINDOWS.
   */
  public int slowerInARow;

  /**
   * The ranks whose effect cleared its bar in the last window attributed, and by how much (effect
   * over bar): a finding that clears its bar by less than twice is named only when the last window
   * already leaned that way (Confirmation.confirmed in the attribution package). Empty arrays:
   * none.
   */
  public int[] leaningRanks = new int[0];

  /**
   * The clean windows of the current run over the band (their costs, and their phase medians {@code
   * Phase.COUNT} a window): if the run ends before it is named a uniform slowdown, they were the
   * host's own wandering and join the ring ({@link #endExcursion}); if it is named, they were the
   * slowdown and are dropped.
   */
  public double[] excursionCosts = new double[0];

  public double[] excursionPhases = new double[0];

  /** Holds one clean window over the band until its run ends. */
  public void holdExcursion(double value, double[] phaseMedians) {
    int n = excursionCosts.length;
    excursionCosts = Arrays.copyOf(excursionCosts, n + 1);
    excursionCosts[n] = value;
    excursionPhases = Arrays.copyOf(excursionPhases, (n + 1) * Phase.COUNT);
    System.arraycopy(phaseMedians, 0, excursionPhases, n * Phase.COUNT, Phase.COUNT);
  }

  /**
   * The run over the band ended: its held windows join the ring when it was not named ({@code
   * named} false), and are dropped otherwise. Whether anything was held.
   */
  public boolean endExcursion(boolean named) {
    if (excursionCosts.length == 0) return false;
    if (!named) {
      for (int i = 0; i < excursionCosts.length; i++) {
        add(
            bytesPerCall,
            excursionCosts[i],
            Arrays.copyOfRange(excursionPhases, i * Phase.COUNT, (i + 1) * Phase.COUNT));
      }
    }
    excursionCosts = new double[0];
    excursionPhases = new double[0];
    return true;
  }

  public double[] leaningRatios = new double[0];

  /** The last window's leaning ranks, rank to effect over bar. */
  public java.util.Map<Integer, Double> leaning() {
    java.util.Map<Integer, Double> m = new java.util.HashMap<>();
    for (int i = 0; i < leaningRanks.length; i++) m.put(leaningRanks[i], leaningRatios[i]);
    return m;
  }

  /** Remembers this window's leaning ranks for the next one; whether anything changed. */
  public boolean lean(java.util.Map<Integer, Double> ratios) {
    if (ratios.isEmpty() && leaningRanks.length == 0) return false;
    leaningRanks = new int[ratios.size()];
    leaningRatios = new double[ratios.size()];
    int i = 0;
    for (var e : new java.util.TreeMap<>(ratios).entrySet()) {
      leaningRanks[i] = e.getKey();
      leaningRatios[i++] = e.getValue();
    }
    return true;
  }

  public WindowBaseline() {}

  /** An empty baseline that remembers the last {@code capacity} good windows. */
  public static WindowBaseline of(int capacity) {
    WindowBaseline b = new WindowBaseline();
    b.values = new double[capacity];
    b.phases = new double[capacity * Phase.COUNT];
    b.noise = new double[capacity];
    return b;
  }

  /**
   * A baseline seeded with {@code windows} values whose median is {@code value} and whose median
   * absolute deviation is {@code mad}, e.g. from a baseline file, so a restarted job does not
   * relearn from zero.
   */
  public static WindowBaseline seeded(
      int capacity, long bytesPerCall, double value, double mad, int windows) {
    WindowBaseline b = of(capacity);
    double[] none = new double[Phase.COUNT];
    for (int i = 0; i < Math.min(windows, capacity); i++) {
      b.add(bytesPerCall, value + (i % 2 == 0 ? mad : -mad), none);
    }
    return b;
  }

  public int capacity() {
    return values.length;
  }

  public boolean ready(int minWindows) {
    return size >= minWindows;
  }

  /** Whether it describes collectives of this size. */
  public boolean matches(long bytesPerCall) {
    return this.bytesPerCall == bytesPerCall;
  }

  /** Remembers one good window; a new message size forgets the old ones first. */
  public void add(long bytesPerCall, double value, double[] phaseMedians) {
    add(bytesPerCall, value, phaseMedians, 0);
  }

  /** As above, with the window's noise. */
  public void add(long bytesPerCall, double value, double[] phaseMedians, double windowNoise) {
    if (bytesPerCall != this.bytesPerCall) {
      this.bytesPerCall = bytesPerCall;
      size = 0;
      next = 0;
    }
    values[next] = value;
    noise[next] = windowNoise;
    System.arraycopy(phaseMedians, 0, phases, next * Phase.COUNT, Phase.COUNT);
    next = (next + 1) % capacity();
    size = Math.min(size + 1, capacity());
  }

  /** Remembers one clean two-rank window's asymmetry (a ring as long as the baseline's). */
  public void addAsymmetry(double us) {
    if (Double.isNaN(us)) return;
    if (asymmetry.length != capacity()) {
      asymmetry = new double[capacity()];
      asymmetries = nextAsymmetry = 0;
    }
    asymmetry[nextAsymmetry] = us;
    nextAsymmetry = (nextAsymmetry + 1) % asymmetry.length;
    asymmetries = Math.min(asymmetries + 1, asymmetry.length);
  }

  /** Whether enough clean two-rank windows were seen to judge an asymmetry by their spread. */
  public boolean asymmetryReady(int minWindows) {
    return asymmetries >= Math.max(1, minWindows);
  }

  /**
   * The clean windows' asymmetry as a standard deviation: 1.4826 × the median of its absolute
   * values — around 0, not its own median, so a lasting lean of one rank's host counts as spread.
   */
  public double asymmetrySpread() {
    if (asymmetries == 0) return 0;
    double[] v = new double[asymmetries];
    for (int i = 0; i < asymmetries; i++) v[i] = Math.abs(asymmetry[i]);
    Arrays.sort(v);
    int m = asymmetries;
    return 1.4826 * (m % 2 == 1 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2);
  }

  public double median() {
    return median(values, 0, 1, Double.NaN);
  }

  /** Median absolute deviation of the values, scaled to a standard deviation (× 1.4826). */
  public double spread() {
    return size == 0 ? 0 : 1.4826 * median(values, 0, 1, median());
  }

  /**
   * The spread above the median, as a standard deviation: the larger of {@link #spread()} and the
   * distance from the median to the 90th percentile over its normal value (1.2816). Window costs of
   * a busy host are skewed — calm for most windows, twice the median for a second or two now and
   * then — and a slowdown is judged against that upper side, which a median absolute deviation
   * alone understates.
   */
  public double upperSpread() {
    if (size == 0) return 0;
    double[] v = Arrays.copyOf(values, size);
    Arrays.sort(v);
    double p90 = v[Math.min(size - 1, (int) Math.ceil(0.9 * size) - 1)];
    return Math.max(spread(), (p90 - median()) / 1.2816);
  }

  /** The median noise of the remembered windows. */
  public double noise() {
    return median(noise, 0, 1, Double.NaN);
  }

  public double phase(Phase p) {
    return median(phases, p.ordinal(), Phase.COUNT, Double.NaN);
  }

  /** The median of the ring's values, or of their distances from {@code center} unless NaN. */
  private double median(double[] ring, int offset, int stride, double center) {
    if (size == 0) return 0;
    double[] v = new double[size];
    for (int i = 0; i < size; i++) {
      double x = ring[i * stride + offset];
      v[i] = Double.isNaN(center) ? x : Math.abs(x - center);
    }
    Arrays.sort(v);
    return size % 2 == 1 ? v[size / 2] : (v[size / 2 - 1] + v[size / 2]) / 2;
  }
}
