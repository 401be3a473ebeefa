package io.collscope.schema;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetterReason;
import io.collscope.model.CompactPeers;
import io.collscope.model.Counter;
import io.collscope.model.LongList;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;

/** Contract checks for {@link CounterSnapshot} beyond what the Avro schema can express. */
public final class Snapshots {

  private Snapshots() {}

  /** Decodes and validates a snapshot record. */
  public static CounterSnapshot decode(byte[] bytes) throws DecodeException {
    return decode(bytes, null);
  }

  /**
   * As {@link #decode(byte[])}, filling {@code reuse} when it is not null and the record is of the
   * current version (as {@code AvroCodec.decode(bytes, reuse)}): for a caller that is done with the
   * previous snapshot.
   */
  public static CounterSnapshot decode(byte[] bytes, CounterSnapshot reuse) throws DecodeException {
    CounterSnapshot s = AvroCodec.of(CounterSnapshot.class).decode(bytes, reuse);
    String problem = validate(s);
    if (problem != null) {
      throw new DecodeException(DeadLetterReason.INVALID, problem);
    }
    return s;
  }

  public static byte[] encode(CounterSnapshot s) {
    return AvroCodec.of(CounterSnapshot.class).encode(s);
  }

  /** The most ranks a communicator may have (the scale goal is 100,000). */
  public static final int MAX_WORLD_SIZE = 1 << 20;

  /** The longest name (cluster, job, communicator, host, ...) or boot id, in characters. */
  public static final int MAX_NAME = 256;

  /**
   * The largest counter value: 2^62 cycles is 73 years at 2 GHz, and a window's sum of deltas stays
   * far from overflowing.
   */
  public static final long MAX_COUNTER = 1L << 62;

  /** 100 GHz: no clock that counts cycles runs faster. */
  public static final long MAX_CYCLES_PER_SECOND = 100_000_000_000L;

  /** The largest {@code sample_every}: the CUDA emitter's own bound (1 collective in 65,536). */
  public static final int MAX_SAMPLE_EVERY = 1 << 16;

  /**
   * Most timed collectives one record may carry (timed_keys): the plugin's rings hold 2,048 per
   * collective type, and a sidecar reads each at most once per interval.
   */
  public static final int MAX_TIMED = 8 * 2048;

  /** Event times before this are implausible (a clock at zero, a bad conversion). */
  public static final long MIN_EVENT_TIME_MS = 946_684_800_000L; // 2000-01-01T00:00:00Z

  /**
   * How far ahead of this machine's clock an event time may be: beyond it a record would drag the
   * job's watermark into the future and make every later window late.
   */
  public static final long MAX_EVENT_TIME_AHEAD_MS = 24L * 3600 * 1000;

  /** Whether an event time (or a Kafka record timestamp) is plausible now. */
  public static boolean plausibleEventTime(long ms, long nowMs) {
    return ms >= MIN_EVENT_TIME_MS && ms <= nowMs + MAX_EVENT_TIME_AHEAD_MS;
  }

  /** Returns null when the snapshot honours the contract, else what is wrong. */
  public static String validate(CounterSnapshot s) {
    return validate(s, System.currentTimeMillis());
  }

  /** As {@link #validate(CounterSnapshot)}, with "now" given (for event-time bounds). */
  public static String validate(CounterSnapshot s, long nowMs) {
    int n = s.getWorldSize();
    if (n < 1) {
      return "world_size " + n + " < 1";
    }
    if (n > MAX_WORLD_SIZE) {
      return "world_size " + n + " > " + MAX_WORLD_SIZE;
    }
    for (var f :
        java.util.List.of(
            java.util.Map.entry("cluster", s.getCluster()),
            java.util.Map.entry("job", s.getJob()),
            java.util.Map.entry("communicator", s.getCommunicator()),
            java.util.Map.entry("collective", s.getCollective()),
            java.util.Map.entry("backend", s.getBackend()),
            java.util.Map.entry("host", s.getHost()),
            java.util.Map.entry("device", s.getDevice()),
            java.util.Map.entry("boot_id", s.getBootId()))) {
      if (f.getValue() != null && f.getValue().length() > MAX_NAME) {
        return f.getKey() + " is " + f.getValue().length() + " characters, more than " + MAX_NAME;
      }
    }
    long t = s.getEventTime().toEpochMilli();
    if (!plausibleEventTime(t, nowMs)) {
      return "event_time " + s.getEventTime() + " is before 2000 or more than a day ahead";
    }
    if (s.getRank() < 0 || s.getRank() >= n) {
      return "rank " + s.getRank() + " outside [0, " + n + ")";
    }
    if (s.getLatencyHistogram().isEmpty()) {
      return "latency_histogram is empty";
    }
    String compact = CompactPeers.validate(s);
    if (compact != null) {
      return compact;
    }
    if (!CompactPeers.isCompact(s)
        && (s.getPeerWaitCycles().size() != n || s.getPeerArrivedLast().size() != n)) {
      return "per-peer arrays have "
          + s.getPeerWaitCycles().size()
          + "/"
          + s.getPeerArrivedLast().size()
          + " entries, world_size is "
          + n;
    }
    int late = s.getPeerLateCycles().size();
    int lateHist = s.getPeerLateHistogram().size();
    if (!CompactPeers.isCompact(s)
        && !(late == 0 && lateHist == 0)
        && !(late == n && lateHist == n * RankTotals.LATE_BUCKETS)) {
      return "peer_late_cycles/peer_late_histogram have "
          + late
          + "/"
          + lateHist
          + " entries, expected none or "
          + n
          + "/"
          + n * RankTotals.LATE_BUCKETS;
    }
    if (s.getCyclesPerSecond() <= 0 || s.getCyclesPerSecond() > MAX_CYCLES_PER_SECOND) {
      return "cycles_per_second " + s.getCyclesPerSecond() + " outside (0, 1e11]";
    }
    if (s.getSeq() < 1) {
      return "seq " + s.getSeq() + " < 1";
    }
    if (s.getCommunicator().isEmpty() || s.getBootId().isEmpty()) {
      return "communicator and boot_id must be non-empty";
    }
    if (s.getSampleEvery() < 1 || s.getSampleEvery() > MAX_SAMPLE_EVERY) {
      return "sample_every " + s.getSampleEvery() + " outside [1, " + MAX_SAMPLE_EVERY + "]";
    }
    Long sampled = s.getSampledCalls();
    if (sampled != null && (sampled < 0 || sampled > s.getCalls())) {
      return "sampled_calls " + sampled + " outside [0, calls " + s.getCalls() + "]";
    }
    String timed = timedProblem(s);
    if (timed != null) return timed;
    String net = netProblem(s);
    if (net != null) return net;
    // Straight over the record's fields: expanding a compact record (or copying a dense one) to
    // check its bounds would cost more than decoding it. One pass says whether every counter is
    // within [0, MAX_COUNTER], as almost every record's are; only when one is not do the two passes
    // below find the first one to name (a negative counter before one above the maximum, as they
    // always have).
    if (firstOutside(s, 0, MAX_COUNTER) == null) return null;
    String negative = firstOutside(s, 0, Long.MAX_VALUE);
    if (negative != null) {
      return negative;
    }
    return firstOutside(s, Long.MIN_VALUE, MAX_COUNTER);
  }

  /** What is wrong with the record's timed collectives (version 8), or null. */
  private static String timedProblem(CounterSnapshot s) {
    java.util.List<Long> keys = s.getTimedKeys() == null ? java.util.List.of() : s.getTimedKeys();
    java.util.List<Long> ns =
        s.getTimedKernelNs() == null ? java.util.List.of() : s.getTimedKernelNs();
    if (keys.size() != ns.size()) {
      return "timed_keys has " + keys.size() + " entries, timed_kernel_ns " + ns.size();
    }
    if (keys.size() > MAX_TIMED) {
      return "timed_keys has " + keys.size() + " entries, more than " + MAX_TIMED;
    }
    for (int i = 0; i < keys.size(); i++) {
      if (keys.get(i) < 1) return "timed_keys[" + i + "] is " + keys.get(i) + ", below 1";
      if (ns.get(i) < 0) return "timed_kernel_ns[" + i + "] is negative: " + ns.get(i);
    }
    return null;
  }

  /**
   * What is wrong with the record's network waits (version 9), or null: the four arrays by position
   * in net_peers, the peers ascending ranks of the communicator other than this one, every value
   * within [0, MAX_COUNTER].
   */
  private static String netProblem(CounterSnapshot s) {
    java.util.List<Integer> peers = orEmpty(s.getNetPeers());
    int n = peers.size();
    String[] names = {"net_send_wait_ns", "net_send_steps", "net_recv_wait_ns", "net_recv_steps"};
    java.util.List<java.util.List<Long>> arrays =
        java.util.List.of(
            orEmpty(s.getNetSendWaitNs()),
            orEmpty(s.getNetSendSteps()),
            orEmpty(s.getNetRecvWaitNs()),
            orEmpty(s.getNetRecvSteps()));
    for (int a = 0; a < names.length; a++) {
      if (arrays.get(a).size() != n) {
        return names[a] + " has " + arrays.get(a).size() + " entries, net_peers " + n;
      }
    }
    for (int i = 0; i < n; i++) {
      int p = peers.get(i);
      if (p < 0 || p >= s.getWorldSize() || p == s.getRank()) {
        return "net_peers["
            + i
            + "] is "
            + p
            + ": not another rank of the communicator (world size "
            + s.getWorldSize()
            + ", rank "
            + s.getRank()
            + ")";
      }
      if (i > 0 && p <= peers.get(i - 1)) {
        return "net_peers is not ascending at " + i + ": " + peers.get(i - 1) + ", " + p;
      }
      for (int a = 0; a < names.length; a++) {
        long v = arrays.get(a).get(i);
        if (v < 0 || v > MAX_COUNTER) {
          return names[a] + "[" + i + "] is " + v + ", outside [0, " + MAX_COUNTER + "]";
        }
      }
    }
    return null;
  }

  private static <T> java.util.List<T> orEmpty(java.util.List<T> list) {
    return list == null ? java.util.List.of() : list;
  }

  /** The scalar counters and phase cycles of a CounterSnapshot: their field names and positions. */
  private static final String[] SCALAR_COUNTERS = scalarCounters();

  private static final int[] SCALAR_COUNTER_POSITIONS = scalarCounterPositions();

  private static String[] scalarCounters() {
    String[] out = new String[Counter.values().length + Phase.values().length];
    int i = 0;
    for (Counter c : Counter.values()) out[i++] = c.fieldName();
    for (Phase p : Phase.values()) out[i++] = p.cyclesField();
    return out;
  }

  private static int[] scalarCounterPositions() {
    org.apache.avro.Schema schema = CounterSnapshot.getClassSchema();
    int[] out = new int[SCALAR_COUNTERS.length];
    for (int i = 0; i < out.length; i++) out[i] = schema.getField(SCALAR_COUNTERS[i]).pos();
    return out;
  }

  /**
   * The first counter below {@code min} or above {@code max}, described as RankTotals describes it
   * ("x is negative: v", "x is v, above max"), or null.
   */
  private static String firstOutside(CounterSnapshot s, long min, long max) {
    for (int i = 0; i < SCALAR_COUNTERS.length; i++) {
      String f = outside(SCALAR_COUNTERS[i], (Long) s.get(SCALAR_COUNTER_POSITIONS[i]), min, max);
      if (f != null) return f;
    }
    String f = outside("peer_wait_cycles", s.getPeerWaitCycles(), min, max);
    if (f == null) f = outside("peer_arrived_last", s.getPeerArrivedLast(), min, max);
    if (f == null) f = outside("peer_late_cycles", s.getPeerLateCycles(), min, max);
    if (f == null) f = outside("peer_late_histogram", s.getPeerLateHistogram(), min, max);
    if (f == null) f = outside("latency_histogram", s.getLatencyHistogram(), min, max);
    if (f == null && CompactPeers.isCompact(s)) {
      f = outside("others_wait_cycles", s.getOthersWaitCycles(), min, max);
      if (f == null) f = outside("others_arrived_last", s.getOthersArrivedLast(), min, max);
      if (f == null) f = outside("others_late_cycles", s.getOthersLateCycles(), min, max);
      if (f == null) f = outside("others_late_histogram", s.getOthersLateHistogram(), min, max);
    }
    return f;
  }

  private static String outside(String name, java.util.List<Long> values, long min, long max) {
    if (values instanceof LongList primitive) {
      // The decoder's lists (every record the job decodes): read without boxing.
      for (int i = 0; i < primitive.size(); i++) {
        long v = primitive.getLong(i);
        if (v < min || v > max) return outside(name + "[" + i + "]", v, min, max);
      }
      return null;
    }
    for (int i = 0; i < values.size(); i++) {
      long v = values.get(i);
      // The name only for the element that is outside: every record passes here, element by
      // element.
      if (v < min || v > max) return outside(name + "[" + i + "]", v, min, max);
    }
    return null;
  }

  private static String outside(String name, long v, long min, long max) {
    if (v < min) return name + " is negative: " + v;
    if (v > max) return name + " is " + v + ", above " + max;
    return null;
  }
}
