package io.collscope.eval;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.collective.FaultPlan;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ExpectationTest {

  private static final long S = 1_000_000_000L;

  private static FaultPlan plan(String spec, int n) {
    return FaultPlan.parse(List.of(spec), n);
  }

  @Test
  void aWindowIsJudgedFromTheSecondFullWindowAfterOnsetUntilTheFaultEnds() {
    FaultPlan p = plan("slow-rank=2:300us@10s-20s", 4);
    assertThat(Expectation.of(p, 4, 8 * S, 9 * S, S)).get().hasToString("NONE");
    // [9, 10) ends at the onset: clean. [10, 11) is the first full window after it: not judged
    assertThat(Expectation.of(p, 4, 9 * S, 10 * S, S)).get().hasToString("NONE");
    assertThat(Expectation.of(p, 4, 10 * S, 11 * S, S)).isEmpty();
    assertThat(Expectation.of(p, 4, 9500_000_000L, 10500_000_000L, S)).isEmpty();
    assertThat(Expectation.of(p, 4, 11 * S, 12 * S, S))
        .get()
        .hasToString("SLOW_RANK(2,ARRIVED_LATE)");
    assertThat(Expectation.of(p, 4, 20 * S, 21 * S, S)).isEmpty();
    assertThat(Expectation.of(p, 4, 21 * S, 22 * S, S)).get().hasToString("NONE");
  }

  @Test
  void everyFaultKindHasItsFinding() {
    assertThat(Expectation.of(plan("slow-publish=1:1ms,slow-ack=2:1ms", 4), 4, S, 2 * S, S))
        .get()
        .hasToString("SLOW_RANK(1,SLOW_PUBLISH) + SLOW_RANK(2,RING_FULL)");
    assertThat(Expectation.of(plan("slow-copy=3:1ms,slow-link=0->3:1ms", 8), 8, S, 2 * S, S))
        .get()
        .hasToString("SLOW_LINK(0->3) + SLOW_RANK(3,SLOW_COPY_REDUCE)");
    assertThat(Expectation.of(plan("slow-all=1ms", 8), 8, S, 2 * S, S))
        .get()
        .hasToString("UNIFORM_SLOWDOWN(LINK)");
    assertThat(Expectation.of(plan("reboot-rank=1@5s", 4), 4, 8 * S, 9 * S, S))
        .get()
        .hasToString("NONE");
    // A dead rank stays dead after its end.
    assertThat(Expectation.of(plan("dead-rank=3@5s", 4), 4, 8 * S, 9 * S, S))
        .get()
        .hasToString("SILENT_RANK(3,TIMED_OUT)");
  }

  @Test
  void findingsAreExactlyTheFaultsNotASupersetOrASubset() {
    Expectation e =
        Expectation.of(plan("slow-rank=2:1ms,slow-rank=5:1ms", 8), 8, S, 2 * S, S).get();
    assertThat(e.matches(Set.of("SLOW_RANK(2,ARRIVED_LATE)", "SLOW_RANK(5,ARRIVED_LATE)")))
        .isTrue();
    assertThat(e.missed(Set.of("SLOW_RANK(2,ARRIVED_LATE)")))
        .containsExactly("SLOW_RANK(5,ARRIVED_LATE)");
    assertThat(
            e.wrong(
                Set.of(
                    "SLOW_RANK(2,ARRIVED_LATE)",
                    "SLOW_RANK(5,ARRIVED_LATE)",
                    "SLOW_RANK(6,ARRIVED_LATE)")))
        .containsExactly("SLOW_RANK(6,ARRIVED_LATE)");
    assertThat(e.matches(Set.of("SLOW_RANK(2,RING_FULL)", "SLOW_RANK(5,ARRIVED_LATE)")))
        .as("the wrong cause is wrong")
        .isFalse();
  }

  @Test
  void withTwoRanksASlowLinkMayReadAsItsSendersLateness() {
    Expectation e = Expectation.of(plan("slow-link=0->1:1ms", 2), 2, S, 2 * S, S).get();
    assertThat(e.matches(Set.of("SLOW_LINK(0->1)"))).isTrue();
    assertThat(e.matches(Set.of("SLOW_RANK(0,ARRIVED_LATE)"))).isTrue();
    assertThat(e.matches(Set.of("UNIFORM_SLOWDOWN(LINK)"))).isTrue();
    assertThat(e.matches(Set.of("SLOW_RANK(1,ARRIVED_LATE)"))).isFalse();
    assertThat(e.matches(Set.of())).isFalse();
  }

  @Test
  void theSameFaultOnEveryRankIsAUniformSlowdown() {
    assertThat(Expectation.of(plan("slow-copy=0:1us,slow-copy=1:1us", 2), 2, S, 2 * S, S))
        .get()
        .hasToString("UNIFORM_SLOWDOWN(SLOW_COPY_REDUCE)");
    assertThat(Expectation.of(plan("slow-rank=0:1ms,slow-rank=1:1ms", 2), 2, S, 2 * S, S))
        .get()
        .hasToString("NONE");
  }
}
