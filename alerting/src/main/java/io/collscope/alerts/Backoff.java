package io.collscope.alerts;

import java.time.Duration;

/**
 * Exponential back-off, bounded and jittered: the n-th consecutive failure waits {@code min(max,
 * initial × 2^(n-1))}, shortened by a random fraction of up to {@code jitter} of it (with 0.5 the
 * wait lies in [d/2, d]), so that forwarders that failed together do not retry together.
 */
public record Backoff(Duration initial, Duration max, double jitter) {

  public Backoff {
    if (initial.isNegative() || initial.isZero()) {
      throw new IllegalArgumentException("back-off initial delay must be > 0, got " + initial);
    }
    if (max.compareTo(initial) < 0) {
      throw new IllegalArgumentException("back-off max " + max + " < initial " + initial);
    }
    if (!(jitter >= 0 && jitter < 1)) {
      throw new IllegalArgumentException("back-off jitter must be in [0,1), got " + jitter);
    }
  }

  /**
   * The wait after the {@code failures}-th consecutive failure (1 for the first).
   *
   * @param random a uniform draw in [0,1)
   */
  public Duration delay(int failures, double random) {
    if (failures < 1) throw new IllegalArgumentException("failures must be >= 1, got " + failures);
    long maxNanos = max.toNanos();
    long d = initial.toNanos();
    for (int i = 1; i < failures && d < maxNanos; i++) d = d > maxNanos / 2 ? maxNanos : d * 2;
    d = Math.min(d, maxNanos);
    return Duration.ofNanos(d - (long) (d * jitter * random));
  }
}
