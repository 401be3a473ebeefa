package io.collscope.sim;

import java.time.Instant;

/**
 * Identity fields of the simulated records and the instant simulated time 0 maps to. Per rank the
 * simulator adds host {@code sim-node-<r/8>}, device and backend {@code sim}, and a boot_id derived
 * from the seed (so runs are reproducible).
 */
public record SimIdentity(
    String cluster, String job, String communicator, String collective, Instant start) {

  public static final String COLLECTIVE = "allreduce_oneshot_f32";

  /** Simulated time 0 is {@code start}, truncated to the millisecond of event_time. */
  public static SimIdentity of(String cluster, String job, String communicator, Instant start) {
    return new SimIdentity(cluster, job, communicator, COLLECTIVE, start);
  }
}
