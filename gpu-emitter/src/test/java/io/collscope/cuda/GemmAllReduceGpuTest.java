package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.counters.CounterBlock;
import io.collscope.counters.Counters;
import io.collscope.counters.SnapshotReader;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fused FP8 GEMM + all-reduce against the host reference, on every rank, for every program the
 * dispatcher can choose (throttled or not, instrumented or not), with inputs that change every call
 * so an output or a receive buffer left over from the call before fails the check. Two ranks: one
 * per GPU when there are two, else both on one GPU (each with half its SMs).
 */
@EnabledIf(value = "io.collscope.cuda.CudaProbe#available", disabledReason = "no usable GPU here")
class GemmAllReduceGpuTest {

  private static final int WORLD = 2;
  private static final int CALLS = 3;
  private static final long BUDGET_NS = 2_000_000_000L;

  static Stream<Arguments> programs() {
    // a few tiles (fewer than the grid: no CTA has a second one), and many (over 2 rounds per
    // CTA, so the throttle has something to hold back), with raster groups of 1 and 8
    GemmAllReduce.Shape few = new GemmAllReduce.Shape(256, 384, 256);
    GemmAllReduce.Shape many = new GemmAllReduce.Shape(4096, 4096, 128);
    return Stream.of(
        Arguments.of(few, 1, false, true),
        Arguments.of(few, 1, true, true),
        Arguments.of(many, 8, false, true),
        Arguments.of(many, 8, true, true),
        Arguments.of(many, 8, false, false),
        Arguments.of(many, 8, true, false),
        Arguments.of(many, 1, false, true));
  }

  @ParameterizedTest(name = "{0} group {1} throttled={2} instrumented={3}")
  @MethodSource("programs")
  void everyRankMatchesTheReferenceEveryCall(
      GemmAllReduce.Shape shape, int groupM, boolean throttled, boolean instrumented)
      throws Exception {
    try (GemmAllReduce g =
        GemmAllReduce.open(
            WORLD, shape, groupM, GemmAllReduce.defaultDevices(WORLD), 40, BUDGET_NS)) {
      // sampled rows: the first and last of the output, and rows across the tiles
      int[] rows =
          shape.m() <= 512 ? range(shape.m()) : new int[] {0, 1, 127, 128, 1000, 2049, 4095};
      for (int call = 1; call <= CALLS; call++) {
        GemmArReference.Inputs[] in = new GemmArReference.Inputs[WORLD];
        for (int r = 0; r < WORLD; r++) {
          in[r] = GemmArReference.random(shape, r, call);
          g.upload(r, in[r].a(), in[r].w(), in[r].sa(), in[r].sw());
        }
        g.launch(throttled, instrumented);
        g.synchronize();
        short[] first = null;
        for (int r = 0; r < WORLD; r++) {
          assertThat(g.abortedAt(r)).as("rank %d aborted", r).isZero();
          short[] out = g.output(r);
          for (int row : rows) {
            short[] got = Arrays.copyOfRange(out, row * shape.n(), (row + 1) * shape.n());
            assertThat(GemmArReference.check(shape, in, row, got))
                .as("rank %d call %d row %d", r, call, row)
                .isNull();
          }
          if (first == null) first = out;
          else assertThat(out).as("rank %d's bits equal rank 0's", r).isEqualTo(first);
        }
      }
      g.publish();
      g.synchronize();
      for (int r = 0; r < WORLD; r++) {
        Counters c = new SnapshotReader(g.block(r)).read();
        if (!instrumented) {
          assertThat(c.calls()).isZero();
          continue;
        }
        assertThat(c.calls()).isEqualTo(CALLS);
        assertThat(c.timeouts()).isZero();
        assertThat(c.get(Counter.BYTES)).isEqualTo(2L * CALLS * shape.m() * shape.n());
        assertThat(c.cycles(Phase.COPY)).as("GEMM cycles").isPositive();
        assertThat(c.cycles(Phase.REDUCE)).as("reduce/store cycles").isPositive();
        assertThat(c.ext(CounterBlock.EXT_TILES)).isEqualTo(CALLS * shape.tiles());
        assertThat(Arrays.stream(c.leadHistogram()).sum()).isEqualTo(CALLS * shape.tiles());
        assertThat(c.get(Counter.CLOCK_CYCLES)).isPositive();
        if (throttled) {
          // never 2 rounds ahead of the grid's begun tiles (lead < 2000 thousandths)
          assertThat(c.ext(CounterBlock.EXT_LEAD_MAX)).as("lead max").isLessThan(2000);
          long[] lead = c.leadHistogram();
          for (int b = 2 * CounterBlock.EXT_LEAD_PER_ROUND; b < lead.length; b++) {
            assertThat(lead[b]).as("tiles begun %s rounds ahead", b / 4.0).isZero();
          }
        }
        System.out.printf(
            "rank %d %s group %d %s: grid %d, lead max %.3f rounds, stalls %d, phases (cycles/call) guard %d gemm %d publish %d wait %d reduce %d%n",
            r,
            shape,
            groupM,
            GemmAllReduce.collectiveName(throttled),
            g.grid(),
            c.ext(CounterBlock.EXT_LEAD_MAX) / 1000.0,
            c.ext(CounterBlock.EXT_THROTTLE_STALLS),
            c.cycles(Phase.GUARD) / CALLS,
            c.cycles(Phase.COPY) / CALLS,
            c.cycles(Phase.PUBLISH) / CALLS,
            c.cycles(Phase.WAIT) / CALLS,
            c.cycles(Phase.REDUCE) / CALLS);
      }
    }
  }

  @Test
  void aRankWhosePeerNeverComesTimesOutInsteadOfHanging() throws Exception {
    GemmAllReduce.Shape shape = new GemmAllReduce.Shape(256, 256, 128);
    try (GemmAllReduce g =
        GemmAllReduce.open(WORLD, shape, 1, GemmAllReduce.defaultDevices(WORLD), 40, 50_000_000L)) {
      g.launchRank(0, true, true); // rank 1 never runs: rank 0's wait for its partials is bounded
      g.synchronize();
      assertThat(g.abortedAt(0)).as("the call that aborted").isEqualTo(1);
      g.launchRank(0, true, true); // sticky: returns at entry, counted once
      g.publish();
      g.synchronize();
      Counters c = new SnapshotReader(g.block(0)).read();
      assertThat(c.timeouts()).isEqualTo(1);
      assertThat(c.calls()).isEqualTo(1);
    }
  }

  private static int[] range(int n) {
    int[] r = new int[n];
    for (int i = 0; i < n; i++) r[i] = i;
    return r;
  }
}
