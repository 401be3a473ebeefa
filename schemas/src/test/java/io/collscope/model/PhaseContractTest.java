package io.collscope.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankPhases;
import io.collscope.avro.RankWindow;
import java.util.List;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.junit.jupiter.api.Test;

/**
 * The phase and counter enums and the schemas describe the same counters: a phase added to one and
 * not the other fails here.
 */
class PhaseContractTest {

  @Test
  void everyPhaseAndCounterHasItsSnapshotField() {
    Schema s = CounterSnapshot.getClassSchema();
    for (Phase p : Phase.values()) assertLong(s, p.cyclesField());
    for (Counter c : Counter.values()) assertLong(s, c.fieldName());
  }

  @Test
  void everyCyclesFieldOfTheSnapshotIsAPhaseOrAClock() {
    List<String> known =
        Stream.concat(
                Stream.of(Phase.values()).map(Phase::cyclesField),
                Stream.of(
                    "clock_cycles",
                    "peer_wait_cycles",
                    "peer_late_cycles",
                    "others_wait_cycles",
                    "others_late_cycles"))
            .toList();
    for (Schema.Field f : CounterSnapshot.getClassSchema().getFields()) {
      if (f.name().endsWith("_cycles")) assertThat(known).as(f.name()).contains(f.name());
    }
  }

  @Test
  void everyPhaseHasAMeanInTheWindowAndTheTableAndNothingElseDoes() {
    for (Schema schema : List.of(RankWindow.getClassSchema(), RankPhases.getClassSchema())) {
      List<String> means =
          schema.getFields().stream()
              .map(Schema.Field::name)
              // per-peer means: listed peers' (peer_*), every other peer's (others_*) and the
              // network peers' (net_*, means per network step)
              .filter(
                  n ->
                      n.endsWith("_mean_us")
                          && !n.startsWith("peer_")
                          && !n.startsWith("others_")
                          && !n.startsWith("net_"))
              .toList();
      assertThat(means)
          .as(schema.getName())
          .containsExactlyElementsOf(Stream.of(Phase.values()).map(Phase::meanUsField).toList());
    }
  }

  @Test
  void totalsRoundTripThroughTheSnapshotRecord() {
    RankTotals t = new RankTotals(3, 4);
    long k = 1;
    for (Counter c : Counter.values()) t.set(c, k++);
    for (Phase p : Phase.values()) t.setCycles(p, 100 * k++);
    t.peerWaitCycles()[2] = 77;
    t.peerArrivedLast()[1] = 5;
    t.recordLatency(9);
    CounterSnapshot s = t.writeTo(new CounterSnapshot());
    assertThat(RankTotals.of(s)).isEqualTo(t);
    assertThat(s.getWaitCycles()).isEqualTo(t.cycles(Phase.WAIT));
    assertThat(s.getClockNs()).isEqualTo(t.get(Counter.CLOCK_NS));
  }

  @Test
  void deltasAndBackwardsChecksCoverEveryCounter() {
    RankTotals a = new RankTotals(2, 2);
    for (Counter c : Counter.values()) {
      RankTotals b = a.copy();
      b.set(c, -1);
      assertThat(b.firstBackwards(a)).startsWith(c.fieldName() + " went backwards");
    }
    for (Phase p : Phase.values()) {
      RankTotals b = a.copy();
      b.setCycles(p, 5);
      assertThat(b.firstBackwards(a)).isNull();
      assertThat(b.minus(a).cycles(p)).isEqualTo(5);
      assertThat(a.firstBackwards(b)).isEqualTo(p.cyclesField() + " went backwards 5 -> 0");
    }
    RankTotals b = a.copy();
    b.peerArrivedLast()[1] = -2;
    assertThat(b.firstNegative()).isEqualTo("peer_arrived_last[1] is negative: -2");
  }

  private static void assertLong(Schema s, String name) {
    assertThat(s.getField(name)).as(name).isNotNull();
    assertThat(s.getField(name).schema().getType()).as(name).isEqualTo(Schema.Type.LONG);
  }
}
