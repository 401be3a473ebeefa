package io.collscope.load;

import io.collscope.avro.CounterSnapshot;
import io.collscope.collective.FaultPlan;
import io.collscope.model.CompactPeers;
import io.collscope.schema.Snapshots;
import io.collscope.sim.FaultModel;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A cluster's snapshot stream: {@code ranks} ranks, each in one communicator of every kind of the
 * spec (e.g. tensor-parallel groups of 8, pipeline groups of 16, data-parallel groups of 1,024),
 * each rank reporting each of its communicators once per interval. Every communicator replays a
 * {@link SnapshotTemplate} of its size (clean ones share one, each at its own phase; one with
 * faults gets its own), so the records are the simulator's, in the compact form from {@code
 * compactFrom} ranks on.
 *
 * <p>Rounds: round j (from 1) holds every live rank's record of every communicator, stamped {@code
 * start + j × interval} plus a fixed per-rank skew of up to {@link #SKEW_MS}; how fast rounds go
 * out is the caller's (real time, accelerated, or as fast as the sink takes them).
 */
public final class LoadGenerator {

  /** A kind of communicator: every rank belongs to one group of {@code size} ranks of it. */
  public record Kind(String name, int size) {
    public Kind {
      if (!name.matches("[a-z][a-z0-9_-]*")) {
        throw new IllegalArgumentException("communicator kind '" + name + "': lower-case name");
      }
      if (size < 2) throw new IllegalArgumentException("communicator size must be >= 2: " + name);
    }
  }

  /** One communicator of the load: its name, size and the template it replays at which phase. */
  record Instance(String name, int firstRank, SnapshotTemplate template, long phase, String boot) {}

  /** Reporters of one round are spread over this much event time, as real ones are. */
  public static final long SKEW_MS = 20;

  /** Intervals each template simulates (and the cycle replays). */
  public static final int DEFAULT_TEMPLATE_INTERVALS = 5;

  private final String cluster;
  private final String job;
  private Instant start;
  private final long intervalMs;
  private final List<Instance> instances = new ArrayList<>();
  private long round;

  /** Per-generated-record sink. */
  public interface Sink {
    void send(byte[] key, byte[] value, long timestampMs);
  }

  /**
   * Parses "tp:8,pp:16,dp:1024" into kinds. Sizes must divide {@code ranks} (a cluster is made of
   * whole groups).
   */
  public static List<Kind> parseKinds(String spec, int ranks) {
    List<Kind> kinds = new ArrayList<>();
    for (String part : spec.split(",")) {
      String[] kv = part.trim().split(":");
      if (kv.length != 2) {
        throw new IllegalArgumentException(
            "--communicators: '" + part + "' is not KIND:SIZE (e.g. tp:8,pp:16,dp:1024)");
      }
      int size;
      try {
        size = Integer.parseInt(kv[1].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--communicators: size of '" + part + "' not a number");
      }
      Kind k = new Kind(kv[0].trim(), size);
      if (ranks % size != 0) {
        throw new IllegalArgumentException(
            "--communicators: " + k.name() + " size " + size + " does not divide --ranks " + ranks);
      }
      kinds.add(k);
    }
    return kinds;
  }

  /**
   * Builds the communicators: {@code ranks / size} of each kind, named kind + index ({@code dp0});
   * {@code faults} maps a communicator name to fault specs in its own rank numbers ({@link
   * FaultPlan}). Simulates each template (seconds at 1,024 ranks).
   */
  public LoadGenerator(
      String cluster,
      String job,
      int ranks,
      List<Kind> kinds,
      Map<String, List<String>> faults,
      long intervalMs,
      int templateIntervals,
      int compactFrom,
      int maxPeers,
      Instant start) {
    this.cluster = cluster;
    this.job = job;
    this.start = start;
    this.intervalMs = intervalMs;
    Map<String, Boolean> used = new LinkedHashMap<>();
    faults.keySet().forEach(k -> used.put(k, false));
    Map<Integer, SnapshotTemplate> clean = new LinkedHashMap<>();
    long intervalNanos = intervalMs * 1_000_000L;
    for (Kind kind : kinds) {
      for (int i = 0; i < ranks / kind.size(); i++) {
        String name = kind.name() + i;
        SnapshotTemplate t;
        List<String> specs = faults.get(name);
        if (specs != null) {
          used.put(name, true);
          FaultModel model = FaultPlanModel.of(FaultPlan.parse(specs, kind.size()));
          t =
              SnapshotTemplate.simulate(
                  kind.size(),
                  templateIntervals,
                  intervalNanos,
                  model,
                  compactFrom,
                  maxPeers,
                  name.hashCode());
        } else {
          t =
              clean.computeIfAbsent(
                  kind.size(),
                  size ->
                      SnapshotTemplate.simulate(
                          size,
                          templateIntervals,
                          intervalNanos,
                          FaultModel.NONE,
                          compactFrom,
                          maxPeers,
                          size));
        }
        String boot =
            new UUID(name.hashCode() * 0x9E3779B97F4A7C15L, start.toEpochMilli()).toString();
        instances.add(new Instance(name, i * kind.size(), t, i % templateIntervals, boot));
      }
    }
    for (var e : used.entrySet()) {
      if (!e.getValue()) {
        throw new IllegalArgumentException(
            "--inject " + e.getKey() + ":...: no communicator of that name");
      }
    }
  }

  /**
   * Moves the event time so that round 1 is stamped {@code firstRound}: a load in real time starts
   * its clock when sending starts, not before the templates were simulated. Only before the first
   * round.
   */
  public void startAt(Instant firstRound) {
    if (round > 0) throw new IllegalStateException("rounds already sent");
    start = firstRound.minusMillis(intervalMs);
  }

  /** Records of one round. */
  public long recordsPerRound() {
    long n = 0;
    for (Instance c : instances) {
      for (int r = 0; r < c.template().worldSize; r++) if (c.template().alive(r)) n++;
    }
    return n;
  }

  public int communicators() {
    return instances.size();
  }

  /** Event time at which round {@code j} (from 1) is stamped (before the per-rank skew). */
  public long roundTimeMs(long j) {
    return start.toEpochMilli() + j * intervalMs;
  }

  /** Sends the next round's records to {@code sink}; returns the round's number (from 1). */
  public long nextRound(Sink sink) {
    long j = ++round;
    for (Instance c : instances) {
      SnapshotTemplate t = c.template();
      for (int r = 0; r < t.worldSize; r++) {
        if (!t.alive(r)) continue;
        CounterSnapshot s = snapshot(c, r, j);
        byte[] key =
            (cluster + "/" + job + "/" + c.name() + "/" + r).getBytes(StandardCharsets.UTF_8);
        sink.send(key, Snapshots.encode(s), s.getEventTime().toEpochMilli());
      }
    }
    return j;
  }

  private CounterSnapshot snapshot(Instance c, int r, long j) {
    SnapshotTemplate t = c.template();
    CounterSnapshot s = new CounterSnapshot();
    s.setTimedKeys(List.of());
    s.setTimedKernelNs(List.of());
    s.setNetPeers(List.of());
    s.setNetSendWaitNs(List.of());
    s.setNetSendSteps(List.of());
    s.setNetRecvWaitNs(List.of());
    s.setNetRecvSteps(List.of());
    s.setCluster(cluster);
    s.setJob(job);
    s.setCommunicator(c.name());
    s.setCollective(SimIdentity.COLLECTIVE);
    s.setBackend(OneShotSimulator.BACKEND);
    s.setWorldSize(t.worldSize);
    s.setRank(r);
    s.setHost("node-" + (c.firstRank() + r) / 8);
    s.setDevice(OneShotSimulator.BACKEND);
    s.setBootId(c.boot() + "." + r);
    s.setSeq(j);
    s.setEventTime(Instant.ofEpochMilli(roundTimeMs(j) + (r * 7919L) % SKEW_MS));
    s.setCyclesPerSecond(OneShotSimulator.CYCLES_PER_SECOND);
    s.setReadRetries(0L);
    // a simulated one-shot all-reduce: no persistent-CTA drift (version 5's fields, empty)
    s.setCtaLeadHistogram(java.util.List.of());
    // every collective accounted (version 7's fields): the no-argument constructor leaves
    // sample_every 0, which the job refuses
    s.setSampleEvery(1);
    s.setSampledCalls(null);
    t.writeCounters(s, r, t.cumulative(r, c.phase(), c.phase() + j));
    return s;
  }

  /** Default for {@code compactFrom}. */
  public static final int DEFAULT_COMPACT_FROM = CompactPeers.DEFAULT_COMPACT_FROM;
}
