package io.collscope.cuda;

import io.collscope.collective.ConfigException;
import java.util.Map;

/**
 * Which fused FP8 GEMM + all-reduce program runs a call: the lockstep-throttled one only where it
 * was measured to help (raster group > 1, at least {@value #THROTTLE_MIN_TILES} output tiles, a
 * full-capacity communicator), the unthrottled one elsewhere; and only programs that were measured
 * on this kind of machine at all ({@link #ROUTES}, each with the run that measured it). A call
 * whose program was never measured is refused rather than run on a guess; GemmArDispatchTest proves
 * that every key a call can reach has a route and that every route is reached.
 */
public final class GemmArDispatch {
  private GemmArDispatch() {}

  /**
   * Rows of output a communicator's receive buffers were sized for: {@link #FULL} (any M; the
   * default), or {@link #ROWS_4096}, a communicator that keeps its buffers small (M up to 4096 per
   * call).
   */
  public enum Capacity {
    FULL(Integer.MAX_VALUE),
    ROWS_4096(4096);

    public final int rows;

    Capacity(int rows) {
      this.rows = rows;
    }
  }

  /** A call: world size, the output's M x N, the per-rank K slice, the communicator's capacity. */
  public record Key(int world, int m, int n, int k, Capacity capacity) {}

  /** What the dispatcher chooses: the program's raster group and whether it is throttled. */
  public record Lever(int world, Capacity capacity, int groupM, boolean throttled) {
    public String program() {
      return GemmAllReduce.collectiveName(throttled) + "_g" + groupM;
    }
  }

  /** Raster groups of more than one tile row pay off from this K slice up (and only then). */
  public static final int GROUP_MIN_K = 4096;

  public static final int GROUP_M = 8;

  /**
   * The throttle runs from this many output tiles (with a raster group and a full-capacity
   * communicator). The seed's kernel gained from 12,288 tiles. This one, with the TMA main loop
   * (run 122, docs/BENCHMARKS.md), throttled against unthrottled at K = 4096, raster group 8: 6,144
   * tiles PARITY 1.004x, 12,288 PARITY 1.005x, 24,576 FASTER 1.058x, 32,768 FASTER 1.092x, 65,536
   * FASTER 1.204x; never SLOWER. (With the cp.async loop, runs 113-119, it helped only from 32,768
   * tiles, and by 2-4 %: the faster GEMM drifts further.) The threshold is the smallest count
   * measured to help, not the seed's: at 12,288 it did not.
   */
  public static final int THROTTLE_MIN_TILES = 24_576;

  /** World sizes measured (two H200s). */
  public static final int[] WORLDS = {2};

  /**
   * The measured programs: lever -> the run (docs/gpu-runs/) whose bench measured it. Add a lever
   * only with a measurement; a lever the rules reach but that is missing here fails the coverage
   * test instead of running unmeasured.
   */
  public static final Map<Lever, String> ROUTES =
      Map.of(
          new Lever(2, Capacity.FULL, 1, false),
              "2026-11-30-run121-x2, run122-x2 (16384x8192x1024, 65536x8192x1024, 4096x8192x1024)",
          new Lever(2, Capacity.FULL, GROUP_M, false),
              "2026-11-30-run122-x2 (16384x6144x4096, 32768x6144x4096)",
          new Lever(2, Capacity.FULL, GROUP_M, true),
              "2026-11-30-run122-x2 (65536x6144x4096, 65536x8192x4096, 131072x8192x4096)",
          new Lever(2, Capacity.ROWS_4096, 1, false),
              "2026-11-30-run121-x2, run132-x2 (4096x8192x1024: the g1 program; M <= 4096 runs"
                  + " the same kernel)",
          new Lever(2, Capacity.ROWS_4096, GROUP_M, false),
              "2026-11-30-run132-x2 (4096x6144x4096)");

  /** The dispatch rules: the lever a call selects (whether or not it is measured). */
  public static Lever lever(Key key) {
    GemmAllReduce.checkShape(new GemmAllReduce.Shape(key.m(), key.n(), key.k()));
    if (key.m() > key.capacity().rows) {
      throw new ConfigException(
          "M", key.m() + " rows exceed the communicator's capacity of " + key.capacity().rows);
    }
    int groupM = key.k() >= GROUP_MIN_K ? GROUP_M : 1;
    long tiles = new GemmAllReduce.Shape(key.m(), key.n(), key.k()).tiles();
    // The throttle only where it was measured to help: raster groups (drift breaks their L2
    // locality), tens of thousands of tiles (drift grows with rounds), and a full-capacity
    // communicator (the 4096-row variant runs few rounds per call).
    boolean throttled =
        groupM > 1 && tiles >= THROTTLE_MIN_TILES && key.capacity() == Capacity.FULL;
    return new Lever(key.world(), key.capacity(), groupM, throttled);
  }

  /** The measured program for a call, or a refusal naming what was not measured. */
  public static Lever route(Key key) {
    boolean worldMeasured = false;
    for (int w : WORLDS) worldMeasured |= w == key.world();
    if (!worldMeasured) {
      throw new ConfigException(
          "ranks", "no fused GEMM + all-reduce program was measured for " + key.world() + " ranks");
    }
    Lever l = lever(key);
    if (!ROUTES.containsKey(l)) {
      throw new IllegalStateException("no measured program for " + l + " (call " + key + ")");
    }
    return l;
  }
}
