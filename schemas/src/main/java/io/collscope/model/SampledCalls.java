package io.collscope.model;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;

/**
 * How many collectives a record's accounted fields come from.
 *
 * <p>An emitter may account only some collectives in full (the CUDA kernel below 64 MiB per rank: 1
 * in 16; the NCCL plugin: 1 in 64), adding each one's phases, per-peer arrays, clock samples and
 * latency histogram {@code sample_every} times; calls, timeouts and bytes count every collective. A
 * per-collective mean of an accounted field is then its sum over the accounted collectives,
 * weighted: {@code sampled * sample_every}. Dividing by {@code calls} instead (what readers of
 * version 6 did) gives the same mean on average but a far noisier one — a window whose sample
 * happens to hold 3 collectives where 2 were expected reads 1.5x too slow — and a window with no
 * sampled collective reads as no wait at all. Records that say nothing (sampled_calls null) account
 * every call.
 */
public final class SampledCalls {

  private SampledCalls() {}

  /** Collectives the snapshot's accounted fields come from, cumulative (not weighted). */
  public static long of(CounterSnapshot s) {
    Long sampled = s.getSampledCalls();
    return sampled == null ? s.getCalls() : sampled;
  }

  /** The rank window's sample size: collectives whose phases were measured in the window. */
  public static long of(RankWindow w) {
    Long sampled = w.getSampledCalls();
    return sampled == null ? w.getCalls() : sampled;
  }

  /** As {@link #of(RankWindow)}, for an attribution's row. */
  public static long of(RankPhases r) {
    Long sampled = r.getSampledCalls();
    return sampled == null ? r.getCalls() : sampled;
  }

  /**
   * The collectives the window's accounted sums stand for: its sample weighted. The divisor of a
   * per-collective mean (and of an arrived-last share); equals calls where every call was
   * accounted.
   */
  public static long accounted(RankWindow w) {
    Long sampled = w.getSampledCalls();
    return sampled == null ? w.getCalls() : sampled * Math.max(1, w.getSampleEvery());
  }
}
