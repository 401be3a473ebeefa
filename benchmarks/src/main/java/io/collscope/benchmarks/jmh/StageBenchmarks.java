package io.collscope.benchmarks.jmh;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.flink.attribution.Attributor;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.flink.delta.DeltaFunction;
import io.collscope.flink.delta.SnapshotDelta;
import io.collscope.flink.window.RankWindowAccumulator;
import io.collscope.flink.window.RankWindowAggregate;
import io.collscope.model.CommunicatorKey;
import io.collscope.schema.DecodeException;
import io.collscope.schema.Snapshots;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The job's per-record stages, each alone: decode (Avro and the contract's validation), delta (two
 * consecutive snapshots of one rank), window aggregate (one delta into a rank's accumulator) and
 * attribution (one window of every rank). {@code world} is the communicator's size; from 128 ranks
 * the records are compact, as emitters send them. Run: {@code dev/jmh.sh} (adds {@code -prof gc}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class StageBenchmarks {

  @Param({"8", "64", "256", "1024"})
  public int world;

  private byte[] encoded;
  private CounterSnapshot previous;
  private CounterSnapshot current;
  private SnapshotDelta delta;
  private final RankWindowAggregate aggregate = new RankWindowAggregate();
  private RankWindowAccumulator accumulator;
  private List<RankWindow> window;
  private final CommunicatorKey key = new CommunicatorKey("bench", "bench", "c");

  @Setup(Level.Trial)
  public void setUp() {
    previous = Records.snapshot(world, 1, 1_000);
    current = Records.snapshot(world, 2, 2_000);
    encoded = Snapshots.encode(current);
    delta = DeltaFunction.delta(current, previous);
    accumulator = aggregate.add(delta, aggregate.createAccumulator());
    window = Records.window(world);
  }

  @Benchmark
  public CounterSnapshot decode() throws DecodeException {
    return Snapshots.decode(encoded);
  }

  private CounterSnapshot reused;

  /** Decode as the job's decoder does: into the previous record's object and arrays. */
  @Benchmark
  public CounterSnapshot decodeReusing() throws DecodeException {
    reused = Snapshots.decode(encoded, reused);
    return reused;
  }

  @Benchmark
  public SnapshotDelta delta() {
    String problem = DeltaFunction.backwardsField(previous, current);
    if (problem != null) throw new IllegalStateException(problem);
    return DeltaFunction.delta(current, previous);
  }

  @Benchmark
  public RankWindowAccumulator windowAggregate() {
    return aggregate.add(delta, accumulator);
  }

  @Benchmark
  public Attribution attribution() {
    return Attributor.attribute(key, 0, 10_000, window, Thresholds.DEFAULT);
  }
}
