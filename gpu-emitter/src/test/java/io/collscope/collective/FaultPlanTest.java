package io.collscope.collective;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.collscope.collective.FaultPlan.Fault;
import io.collscope.collective.FaultPlan.Kind;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The {@code --inject} grammar: parsing, errors, round trip, timing, fractions and sums. */
class FaultPlanTest {

  private static final long MS = 1_000_000L;
  private static final long S = 1_000_000_000L;

  private static FaultPlan plan(String... specs) {
    return FaultPlan.parse(List.of(specs), 8);
  }

  private static Fault one(String spec) {
    return plan(spec).faults().get(0);
  }

  @Test
  void everyKindParsesWithItsTiming() {
    assertThat(one("slow-rank=3:300us@20s-60s"))
        .isEqualTo(new Fault(Kind.SLOW_RANK, 3, -1, 300_000, 20 * S, 60 * S, 100));
    assertThat(one("slow-rank=3:2ms~10%"))
        .isEqualTo(new Fault(Kind.SLOW_RANK, 3, -1, 2 * MS, 0, FaultPlan.FOREVER, 10));
    assertThat(one("slow-link=1->2:500us@5s"))
        .isEqualTo(new Fault(Kind.SLOW_LINK, 2, 1, 500_000, 5 * S, FaultPlan.FOREVER, 100));
    assertThat(one("dead-rank=4@10s"))
        .isEqualTo(new Fault(Kind.DEAD_RANK, 4, -1, 0, 10 * S, FaultPlan.FOREVER, 100));
    assertThat(one("slow-rank=2:1ms@5s-15s~25%"))
        .isEqualTo(new Fault(Kind.SLOW_RANK, 2, -1, MS, 5 * S, 15 * S, 25));
    assertThat(one("slow-copy=1:40us~12.5"))
        .isEqualTo(new Fault(Kind.SLOW_COPY, 1, -1, 40_000, 0, FaultPlan.FOREVER, 12.5));
    assertThat(one("slow-all=100us@1s"))
        .isEqualTo(new Fault(Kind.SLOW_ALL, -1, -1, 100_000, S, FaultPlan.FOREVER, 100));
    assertThat(one("reboot-rank=5@30s"))
        .isEqualTo(new Fault(Kind.REBOOT_RANK, 5, -1, 0, 30 * S, FaultPlan.FOREVER, 100));
    assertThat(one("slow-publish=0:1ms@0s-500ms"))
        .isEqualTo(new Fault(Kind.SLOW_PUBLISH, 0, -1, MS, 0, 500 * MS, 100));
    assertThat(one("slow-ack=7:3us")).isEqualTo(new Fault(Kind.SLOW_ACK, 7, -1, 3_000));
    assertThat(one("dead-rank=4")).isEqualTo(new Fault(Kind.DEAD_RANK, 4, -1, 0));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "slow-rank=3:300us@60s-20s",
        "slow-rank=3:300us@20s-20s",
        "slow-rank=3:300us~0%",
        "slow-rank=3:300us~0",
        "slow-rank=3:300us~100.5%",
        "slow-rank=3:300us~-5%",
        "slow-rank=3:300usx",
        "slow-rank=3:300us@5",
        "slow-rank=3:300us@5s~",
        "slow-rank=3:300us~5%@5s",
        "slow-rank=3:300us@5s-",
        "dead-rank=4~50%",
        "dead-rank=4@1s-2s",
        "reboot-rank=4",
        "reboot-rank=4@1s-2s",
        "reboot-rank=4@1s~50%",
        "slow-all=1->2:1ms",
        "slow-all=61s",
        "slow-copy=9:1ms",
        "slow-rank=3:300us@99999999999999999999s",
        "slow-rank=3:300us@8000000s",
        "slow-rank=1:1ms@5s,slow-rank=1:1000us@5000ms"
      })
  void aBadSpecIsOneLineNamingIt(String spec) {
    ConfigException e = catchThrowableOfType(ConfigException.class, () -> plan(spec));
    assertThat(e).as(spec).isNotNull();
    assertThat(e.parameter()).isEqualTo("fault");
    assertThat(e.getMessage()).doesNotContain("\n");
    String first = spec.split(",")[spec.contains(",") ? 1 : 0];
    assertThat(e.getMessage()).contains("'" + first + "'");
  }

  @Test
  void badSpecsSayWhatIsWrong() {
    assertThat(catchThrowableOfType(ConfigException.class, () -> plan("slow-rank=1:1ms@5s-2s")))
        .hasMessage("fault 'slow-rank=1:1ms@5s-2s': END must be after START");
    assertThat(catchThrowableOfType(ConfigException.class, () -> plan("slow-rank=1:1ms~0%")))
        .hasMessage("fault 'slow-rank=1:1ms~0%': percent must be in (0,100], got 0");
    assertThat(catchThrowableOfType(ConfigException.class, () -> plan("slow-rank=1:1msjunk")))
        .hasMessageContaining("expected slow-rank=RANK:DURATION");
    assertThat(catchThrowableOfType(ConfigException.class, () -> plan("slow-rank=1:1ms@2s!")))
        .hasMessageContaining("expected [@START[-END]][~PERCENT]");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "slow-rank=3:300us@20s-60s",
        "slow-rank=3:2ms~10%",
        "slow-link=1->2:500us@5s",
        "dead-rank=4@10s",
        "slow-rank=2:1ms@5s-15s~25%",
        "slow-rank=2:1ms@0s-15s",
        "slow-copy=1:1500ns~33.25%,slow-all=1ms@2s,reboot-rank=3@0s,reboot-rank=3@9s",
        "slow-rank=1:1ms,slow-rank=1:2ms~50%,slow-ack=0:7us,slow-publish=6:1s,dead-rank=2"
      })
  void toStringRoundTrips(String specs) {
    FaultPlan p = plan(specs);
    assertThat(plan(p.toString())).isEqualTo(p);
    assertThat(plan(p.toString()).toString()).isEqualTo(p.toString());
    for (Fault f : p.faults()) assertThat(one(f.toString())).isEqualTo(f);
  }

  @Test
  void toStringWritesTheGrammarInItsLargestExactUnits() {
    assertThat(plan("slow-rank=2:1000us@5000ms-15s~25.0%").toString())
        .isEqualTo("slow-rank=2:1ms@5s-15s~25%");
    assertThat(plan("slow-link=3->6:1500us").toString()).isEqualTo("slow-link=3->6:1500us");
    assertThat(FaultPlan.NONE.toString()).isEqualTo("none");
  }

  @Test
  void theSameFaultGivenTwiceIsRefusedButAtOtherTimesItIsNot() {
    assertThat(
            catchThrowableOfType(
                ConfigException.class, () -> plan("slow-rank=1:1ms,slow-rank=1:1000us")))
        .hasMessageContaining("is given twice");
    assertThat(plan("slow-rank=1:1ms@5s,slow-rank=1:1ms@10s").faults()).hasSize(2);
  }

  @Test
  void anIntervalFaultIsOffBeforeStartOnInsideAndOffFromEnd() {
    FaultPlan p = plan("slow-rank=3:300us@20s-60s");
    assertThat(p.arrivalDelayNanos(3, 1, 0)).isZero();
    assertThat(p.arrivalDelayNanos(3, 1, 20 * S - 1)).isZero();
    assertThat(p.arrivalDelayNanos(3, 1, 20 * S)).isEqualTo(300_000);
    assertThat(p.arrivalDelayNanos(3, 1, 60 * S - 1)).isEqualTo(300_000);
    assertThat(p.arrivalDelayNanos(3, 1, 60 * S)).isZero();
    assertThat(p.arrivalDelayNanos(2, 1, 30 * S)).isZero();
  }

  @Test
  void faultsOfOneKindOnOneRankAddUpAndSlowAllSlowsEveryLinkButNone() {
    FaultPlan p = plan("slow-rank=1:1ms", "slow-rank=1:2ms@10s", "slow-link=0->1:5us,slow-all=7us");
    assertThat(p.arrivalDelayNanos(1, 4, 0)).isEqualTo(MS);
    assertThat(p.arrivalDelayNanos(1, 4, 10 * S)).isEqualTo(3 * MS);
    assertThat(p.linkDelayNanos(0, 1, 4, 0)).isEqualTo(12_000);
    assertThat(p.linkDelayNanos(2, 1, 4, 0)).isEqualTo(7_000);
    assertThat(p.linkDelayNanos(1, 0, 4, 0)).isEqualTo(7_000);
    assertThat(p.linkDelayNanos(1, 1, 4, 0)).isZero();
    assertThat(p.slowsLinksTo(5)).isTrue();
    assertThat(plan("slow-copy=2:3us,slow-copy=2:4us").copyDelayNanos(2, 9, 0)).isEqualTo(7_000);
    assertThat(plan("slow-link=0->1:5us").slowsLinksTo(2)).isFalse();
  }

  @Test
  void anEmptyPlanDelaysNothing() {
    FaultPlan p = FaultPlan.NONE;
    assertThat(p.arrivalDelayNanos(3, 1, 0)).isZero();
    assertThat(p.linkDelayNanos(0, 3, 1, 0)).isZero();
    assertThat(p.isDeadAt(0, Long.MAX_VALUE - 1)).isFalse();
    assertThat(p.rebootsNanos(0)).isEmpty();
  }

  @Test
  void deadAndRebootTimes() {
    FaultPlan p = plan("dead-rank=4@10s,dead-rank=5,reboot-rank=2@9s,reboot-rank=2@3s");
    assertThat(p.isDead(4)).isFalse();
    assertThat(p.isDeadAt(4, 10 * S - 1)).isFalse();
    assertThat(p.isDeadAt(4, 10 * S)).isTrue();
    assertThat(p.isDead(5)).isTrue();
    assertThat(p.rebootsNanos(2)).containsExactly(3 * S, 9 * S);
    assertThat(p.hasReboots()).isTrue();
  }

  /**
   * The per-sequence pattern: fixed values of the hash, which the kernel's {@code fault_mix}
   * (osar.cu, where the same values are written down) must also give.
   */
  @Test
  void theHashIsPinned() {
    assertThat(FaultPlan.mix(1, 0)).isEqualTo(0x910a2dec89025cc1L);
    assertThat(FaultPlan.mix(2, 0)).isEqualTo(0x975835de1c9756ceL);
    assertThat(FaultPlan.mix(1, 1)).isEqualTo(0xbeeb8da1658eec67L);
    assertThat(FaultPlan.mix(1000, 3)).isEqualTo(0x4f50d8f6e14fcfa7L);
    assertThat(FaultPlan.mix(123456789, 7)).isEqualTo(0xc56da70a99d3435cL);
    assertThat(FaultPlan.threshold(100)).isEqualTo(1L << 32);
    assertThat(FaultPlan.threshold(25)).isEqualTo(1L << 30);
    assertThat(FaultPlan.threshold(10)).isEqualTo(429_496_730L);
  }

  @Test
  void aFractionSelectsThatShareOfSequencesDeterministically() {
    for (double pct : new double[] {50, 25, 10, 12.5}) {
      for (int index = 0; index < 4; index++) {
        int hit = 0;
        for (long seq = 1; seq <= 10_000; seq++) {
          if (FaultPlan.selects(seq, index, pct)) hit++;
        }
        // within 5 standard deviations of a binomial draw of 10000 (deterministic all the same)
        double mean = pct * 100;
        double sd = Math.sqrt(10_000 * pct / 100 * (1 - pct / 100));
        assertThat((double) hit)
            .as("%s%% of fault %d", pct, index)
            .isBetween(mean - 5 * sd, mean + 5 * sd);
      }
    }
    int hit50 = 0;
    for (long seq = 1; seq <= 10_000; seq++) if (FaultPlan.selects(seq, 0, 50)) hit50++;
    assertThat(hit50).isEqualTo(4959); // pinned: the same count on every run and backend
    for (long seq = 1; seq <= 1000; seq++) assertThat(FaultPlan.selects(seq, 5, 100)).isTrue();
  }

  @Test
  void theGettersApplyTheFractionByFaultIndex() {
    FaultPlan p = plan("slow-rank=0:1ms,slow-rank=1:1ms~50%");
    int delayed = 0;
    for (long seq = 1; seq <= 10_000; seq++) {
      long d = p.arrivalDelayNanos(1, seq, 0);
      assertThat(d).isEqualTo(FaultPlan.selects(seq, 1, 50) ? MS : 0);
      if (d > 0) delayed++;
    }
    assertThat(delayed).isBetween(4700, 5300);
  }
}
