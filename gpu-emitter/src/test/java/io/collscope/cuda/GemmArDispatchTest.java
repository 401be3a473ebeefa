package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.collective.ConfigException;
import io.collscope.cuda.GemmArDispatch.Capacity;
import io.collscope.cuda.GemmArDispatch.Key;
import io.collscope.cuda.GemmArDispatch.Lever;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every key a call can reach has a measured route, and every route is reached by some call. */
class GemmArDispatchTest {

  // Around every boundary of the rules: K at the raster-group threshold, tile counts at the
  // throttle threshold (M x N / 128^2: 65536 x 6144 = 24576 tiles, 65536 x 6016 = 24064; the
  // seed's 12288 = 32768 x 6144), M at the 4096-row capacity.
  private static final int[] MS = {128, 256, 4096, 4224, 8192, 32768, 65536, 130944, 131072};
  private static final int[] NS = {128, 6016, 6144, 8064, 8192, 49024, 49152, 65536};
  private static final int[] KS = {64, 1024, 4032, 4096, 8192};

  private static Set<Lever> reachable() {
    Set<Lever> reached = new HashSet<>();
    for (int world : GemmArDispatch.WORLDS)
      for (Capacity c : Capacity.values())
        for (int m : MS)
          for (int n : NS)
            for (int k : KS) {
              if (m > c.rows) continue; // refused: the communicator cannot hold the call
              reached.add(GemmArDispatch.lever(new Key(world, m, n, k, c)));
            }
    return reached;
  }

  @Test
  void everyReachableKeyHasAMeasuredRoute() {
    for (Lever l : reachable()) {
      assertThat(GemmArDispatch.ROUTES).as("route for %s", l).containsKey(l);
    }
  }

  @Test
  void everyRouteIsReachable() {
    assertThat(reachable()).containsExactlyInAnyOrderElementsOf(GemmArDispatch.ROUTES.keySet());
  }

  @Test
  void theThrottleOnlyWhereItWasMeasuredToHelp() {
    // measured FASTER at 24576, 32768 and 65536 tiles, PARITY at 6144 and 12288 (run 122)
    assertThat(GemmArDispatch.THROTTLE_MIN_TILES).isEqualTo(24_576);
    for (int world : GemmArDispatch.WORLDS)
      for (Capacity c : Capacity.values())
        for (int m : MS)
          for (int n : NS)
            for (int k : KS) {
              if (m > c.rows) continue;
              Lever l = GemmArDispatch.route(new Key(world, m, n, k, c));
              long tiles = (long) (m / 128) * (n / 128);
              assertThat(l.throttled())
                  .as("M=%d N=%d K=%d %s", m, n, k, c)
                  .isEqualTo(
                      k >= 4096
                          && tiles >= GemmArDispatch.THROTTLE_MIN_TILES
                          && c == Capacity.FULL);
            }
    // the measured keys: throttled at 24576 tiles and more, not just below, nor without a raster
    // group (K 1024: 0.981x-0.982x PARITY in run 122, 0.919x-0.977x SLOWER with cp.async loads)
    assertThat(GemmArDispatch.route(new Key(2, 65536, 8192, 4096, Capacity.FULL)).throttled())
        .isTrue();
    assertThat(GemmArDispatch.route(new Key(2, 131072, 8192, 4096, Capacity.FULL)).throttled())
        .isTrue();
    assertThat(GemmArDispatch.route(new Key(2, 65536, 6144, 4096, Capacity.FULL)).throttled())
        .isTrue();
    assertThat(GemmArDispatch.route(new Key(2, 65536, 6016, 4096, Capacity.FULL)).throttled())
        .isFalse();
    assertThat(GemmArDispatch.route(new Key(2, 32768, 6144, 4096, Capacity.FULL)).throttled())
        .isFalse();
    assertThat(GemmArDispatch.route(new Key(2, 65536, 8192, 1024, Capacity.FULL)).throttled())
        .isFalse();
  }

  @Test
  void unmeasuredWorldsAndOversizedCallsAreRefused() {
    assertThatThrownBy(() -> GemmArDispatch.route(new Key(4, 4096, 6144, 4096, Capacity.FULL)))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("4 ranks");
    assertThatThrownBy(() -> GemmArDispatch.route(new Key(2, 8192, 6144, 4096, Capacity.ROWS_4096)))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("capacity");
    // a lever the rules never select: no route, and none is needed
    assertThat(GemmArDispatch.ROUTES).doesNotContainKey(new Lever(2, Capacity.FULL, 1, true));
    assertThat(GemmArDispatch.ROUTES)
        .doesNotContainKey(new Lever(2, Capacity.ROWS_4096, GemmArDispatch.GROUP_M, true));
  }
}
