package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import io.collscope.model.RankTotals;

/** Contract checks for {@link CounterSnapshot} beyond what the Avro schema can express. */
public final class Snapshots {

  private Snapshots() {}

  /** Decodes and validates a snapshot record. */
  public static CounterSnapshot decode(byte[] bytes) throws DecodeException {
    CounterSnapshot s = AvroCodec.of(CounterSnapshot.class).decode(bytes);
    String problem = validate(s);
    if (problem != null) {
      throw new DecodeException(DeadLetterReason.INVALID, problem);
    }
    return s;
  }

  public static byte[] encode(CounterSnapshot s) {
    return AvroCodec.of(CounterSnapshot.class).encode(s);
  }

  /** Returns null when the snapshot honours the contract, else what is wrong. */
  public static String validate(CounterSnapshot s) {
    int n = s.getWorldSize();
    if (n < 1) {
      return "world_size " + n + " < 1";
    }
    if (s.getRank() < 0 || s.getRank() >= n) {
      return "rank " + s.getRank() + " outside [0, " + n + ")";
    }
    if (s.getLatencyHistogram().isEmpty()) {
      return "latency_histogram is empty";
    }
    if (s.getPeerWaitCycles().size() != n || s.getPeerArrivedLast().size() != n) {
      return "per-peer arrays have "
          + s.getPeerWaitCycles().size()
          + "/"
          + s.getPeerArrivedLast().size()
          + " entries, world_size is "
          + n;
    }
    int late = s.getPeerLateCycles().size();
    int lateHist = s.getPeerLateHistogram().size();
    if (!(late == 0 && lateHist == 0) && !(late == n && lateHist == n * RankTotals.LATE_BUCKETS)) {
      return "peer_late_cycles/peer_late_histogram have "
          + late
          + "/"
          + lateHist
          + " entries, expected none or "
          + n
          + "/"
          + n * RankTotals.LATE_BUCKETS;
    }
    if (s.getCyclesPerSecond() <= 0) {
      return "cycles_per_second " + s.getCyclesPerSecond() + " <= 0";
    }
    if (s.getSeq() < 1) {
      return "seq " + s.getSeq() + " < 1";
    }
    if (s.getCommunicator().isEmpty() || s.getBootId().isEmpty()) {
      return "communicator and boot_id must be non-empty";
    }
    String negative = RankTotals.of(s).firstNegative();
    if (negative != null) {
      return negative;
    }
    return null;
  }
}
