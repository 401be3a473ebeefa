package io.collscope.benchmarks;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.collective.FaultPlan;
import io.collscope.emitter.SnapshotSink;
import io.collscope.flink.attribution.Attributor;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.flink.delta.Baseline;
import io.collscope.flink.offline.OfflineAttribution;
import io.collscope.flink.window.RankWindowAccumulator;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.CompactPeers;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.Snapshots;
import io.collscope.sim.FaultPlanModel;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.io.PrintStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Cost of one window against the communicator's size: a world of W ranks with one slow rank,
 * simulated by the protocol model for a few seconds, its rank windows built, and then the
 * attribution of one full window timed (median of repeats, after warm-up), with the state a window
 * holds in the job per rank: the delta's baseline (the last snapshot), the rank window's
 * accumulator (as Flink's POJO serializer writes it) and the pending rank window the attribution
 * keeps until the watermark passes.
 */
public final class WorldCostBench {

  private WorldCostBench() {}

  /** One world's row. */
  public record Row(
      int world,
      boolean compact,
      double snapshotBytes,
      double attributeMs,
      double attributeCpuMs,
      double baselineBytesPerRank,
      double accumulatorBytesPerRank,
      double rankWindowBytesPerRank,
      String verdict) {
    double statePerRank() {
      return baselineBytesPerRank + accumulatorBytesPerRank + rankWindowBytesPerRank;
    }
  }

  public static List<Row> run(int[] worlds, int compactFrom, int repeats, PrintStream out) {
    List<Row> rows = new ArrayList<>();
    out.println(
        "| ranks | record form | bytes/snapshot | attribution ms/window, wall (median) | attribution ms/window, CPU (median) | delta baseline B/rank | window accumulator B/rank | pending rank window B/rank | state B/rank | verdict |");
    out.println("|---|---|---|---|---|---|---|---|---|---|");
    for (int w : worlds) {
      Row r = one(w, compactFrom, repeats);
      rows.add(r);
      out.printf(
          Locale.ROOT,
          "| %d | %s | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %s |%n",
          r.world(),
          r.compact() ? "compact" : "dense",
          r.snapshotBytes(),
          r.attributeMs(),
          r.attributeCpuMs(),
          r.baselineBytesPerRank(),
          r.accumulatorBytesPerRank(),
          r.rankWindowBytesPerRank(),
          r.statePerRank(),
          r.verdict());
      out.flush();
    }
    return rows;
  }

  private static final TypeSerializer<RankWindowAccumulator> ACCUMULATOR =
      TypeInformation.of(RankWindowAccumulator.class).createSerializer(new SerializerConfigImpl());

  private static final TypeSerializer<Baseline> BASELINE =
      TypeInformation.of(Baseline.class).createSerializer(new SerializerConfigImpl());

  static int serializedBytes(RankWindowAccumulator a) {
    return serializedBytes(ACCUMULATOR, a);
  }

  static <T> int serializedBytes(TypeSerializer<T> serializer, T value) {
    DataOutputSerializer out = new DataOutputSerializer(4096);
    try {
      serializer.serialize(value, out);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return out.length();
  }

  static Row one(int world, int compactFrom, int repeats) {
    boolean compact = world >= compactFrom;
    long windowMs = 2_000;
    SimSpec spec = SimSpec.of(world).withDurationNanos(4_000_000_000L);
    FaultPlan plan = FaultPlan.parse(List.of("slow-rank=" + world / 2 + ":300us"), world);
    OfflineAttribution offline = new OfflineAttribution(windowMs, Thresholds.DEFAULT);
    CompactPeers.Compactor compactor = new CompactPeers.Compactor(world);
    CounterSnapshot[] last = new CounterSnapshot[world];
    long[] bytes = {0, 0};
    OneShotSimulator.run(
        spec,
        FaultPlanModel.of(plan),
        SimIdentity.of("bench", "bench", "w" + world, Instant.parse("2026-01-01T00:00:00Z")),
        new SnapshotSink() {
          @Override
          public void send(CounterSnapshot s) {
            CounterSnapshot rec = s;
            if (compact) {
              rec = compactor.compact(s);
            }
            bytes[0] += Snapshots.encode(rec).length;
            bytes[1]++;
            last[rec.getRank()] = rec;
            offline.add(rec);
          }

          @Override
          public void flush() {}

          @Override
          public long failed() {
            return 0;
          }

          @Override
          public void close() {}
        });
    Map.Entry<Long, List<RankWindow>> full = offline.rankWindows().lastEntry();
    List<RankWindow> windows = full.getValue();
    CommunicatorKey key = new CommunicatorKey("bench", "bench", "w" + world);
    long start = full.getKey();
    Attribution a = null;
    // Warm up until the JIT has compiled the rule (at least 3 s or 20 runs), then time: wall and
    // this thread's CPU time, which a machine shared with other work inflates much less.
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
    long warmUntil = System.nanoTime() + 3_000_000_000L;
    for (int i = 0; i < 20 || System.nanoTime() < warmUntil; i++) {
      a = Attributor.attribute(key, start, start + windowMs, windows, Thresholds.DEFAULT);
    }
    double[] ms = new double[repeats];
    double[] cpuMs = new double[repeats];
    for (int i = 0; i < repeats; i++) {
      long c0 = threads.getCurrentThreadCpuTime();
      long t0 = System.nanoTime();
      a = Attributor.attribute(key, start, start + windowMs, windows, Thresholds.DEFAULT);
      long t1 = System.nanoTime();
      cpuMs[i] = (threads.getCurrentThreadCpuTime() - c0) / 1e6;
      ms[i] = (t1 - t0) / 1e6;
    }
    Arrays.sort(cpuMs);
    Arrays.sort(ms);
    double baseline = 0;
    // The delta's baseline as its state serializer writes it: the record's bytes.
    for (CounterSnapshot s : last) {
      if (s != null) baseline += serializedBytes(BASELINE, Baseline.of(Snapshots.encode(s)));
    }
    double rankWindow = 0;
    for (RankWindow rw : windows) rankWindow += AvroCodec.of(RankWindow.class).encode(rw).length;
    // The accumulators as the job's state backend writes them: Flink's POJO serializer, the
    // mean over the window's ranks (compact ones hold the peers their deltas listed).
    double accumulator = 0;
    var accumulators = offline.accumulators(start);
    for (RankWindowAccumulator acc : accumulators.values()) accumulator += serializedBytes(acc);
    accumulator /= Math.max(1, accumulators.size());
    return new Row(
        world,
        compact,
        (double) bytes[0] / bytes[1],
        ms[ms.length / 2],
        cpuMs[cpuMs.length / 2],
        baseline / world,
        accumulator,
        rankWindow / windows.size(),
        a.getVerdict()
            + (a.getFindings().isEmpty() ? "" : "(" + a.getFindings().get(0).getRank() + ")"));
  }
}
