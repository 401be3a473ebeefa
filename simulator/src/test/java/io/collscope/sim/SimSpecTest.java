package io.collscope.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.RecordComponent;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class SimSpecTest {

  private static final SimSpec BASE = SimSpec.of(8);

  /** The components of {@code s} by name. */
  private static Map<String, Object> components(SimSpec s) throws Exception {
    Map<String, Object> m = new TreeMap<>();
    for (RecordComponent c : SimSpec.class.getRecordComponents()) {
      m.put(c.getName(), c.getAccessor().invoke(s));
    }
    return m;
  }

  /** {@code with} changes exactly the components {@code changed} names, to those values. */
  private static void changesOnly(UnaryOperator<SimSpec> with, Map<String, Object> changed)
      throws Exception {
    Map<String, Object> expected = components(BASE);
    expected.putAll(changed);
    assertThat(components(with.apply(BASE))).isEqualTo(expected);
  }

  @Test
  void eachWithMethodChangesItsComponentsAndKeepsTheRest() throws Exception {
    changesOnly(s -> s.withDurationNanos(7_000_000_000L), Map.of("durationNanos", 7_000_000_000L));
    changesOnly(
        s -> s.withSnapshots(500_000_000L, 3_000_000L),
        Map.of("snapshotIntervalNanos", 500_000_000L, "snapshotSkewNanos", 3_000_000L));
    changesOnly(s -> s.withRingSlots(9), Map.of("ringSlots", 9));
    changesOnly(s -> s.withBytes(4096), Map.of("bytes", 4096L));
    changesOnly(s -> s.withLinkLatencyNanos(777), Map.of("linkLatencyNanos", 777L));
    changesOnly(
        s -> s.withComputeGap(123, 45), Map.of("computeGapNanos", 123L, "computeJitterNanos", 45L));
    changesOnly(s -> s.withWaitBudgetNanos(5_000), Map.of("waitBudgetNanos", 5_000L));
    changesOnly(s -> s.withSeed(42), Map.of("seed", 42L));
  }

  @Test
  void aChangedSpecIsCheckedAsANewOneIs() {
    assertThatThrownBy(() -> BASE.withSnapshots(1_000, 1_000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snapshotSkewNanos");
    assertThatThrownBy(() -> BASE.withRingSlots(0)).hasMessageContaining("ringSlots");
    assertThatThrownBy(() -> BASE.withWaitBudgetNanos(999)).hasMessageContaining("waitBudgetNanos");
  }
}
