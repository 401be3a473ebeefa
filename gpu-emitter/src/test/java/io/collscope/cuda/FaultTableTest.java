package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.collscope.collective.ConfigException;
import io.collscope.collective.FaultPlan;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The kernel's fault table (no GPU needed): decoded as the kernel's {@code fault_delays} decodes
 * it, it gives the delays {@link FaultPlan}'s getters give the CPU backend, sequence by sequence.
 */
class FaultTableTest {

  private static final long S = 1_000_000_000L;

  @Test
  void theTableGivesTheCpuBackendsDelaysForEverySequenceAndTime() {
    int n = 4;
    FaultPlan plan =
        FaultPlan.parse(
            List.of(
                "slow-rank=1:1ms~50%,slow-rank=1:2ms@5s-15s~25%,slow-copy=2:30us@1s",
                "slow-publish=3:20us~10%,slow-ack=0:5us@2s-3s,slow-link=0->2:7us~75%",
                "slow-all=3us@4s~33.3%,dead-rank=3@20s"),
            n);
    for (long t : new long[] {0, S, 2 * S, 4 * S, 5 * S, 15 * S, 30 * S}) {
      for (int r = 0; r < n; r++) {
        long[] table = FaultTable.of(plan, r, t);
        assertThat(table.length / OsarLayout.F_WORDS).isEqualTo(FaultTable.count(plan, r));
        for (long seq = 1; seq <= 2_000; seq++) {
          long[] d = FaultTable.delays(table, seq, r, n);
          String at = "rank " + r + " seq " + seq + " t " + t;
          assertThat(d[OsarLayout.F_ARRIVAL]).as(at).isEqualTo(plan.arrivalDelayNanos(r, seq, t));
          assertThat(d[OsarLayout.F_COPY]).as(at).isEqualTo(plan.copyDelayNanos(r, seq, t));
          assertThat(d[OsarLayout.F_PUBLISH]).as(at).isEqualTo(plan.publishDelayNanos(r, seq, t));
          assertThat(d[OsarLayout.F_ACK]).as(at).isEqualTo(plan.ackDelayNanos(r, seq, t));
          for (int p = 0; p < n; p++) {
            assertThat(d[OsarLayout.F_ALL + p])
                .as(at + " from " + p)
                .isEqualTo(plan.linkDelayNanos(p, r, seq, t));
          }
        }
      }
    }
  }

  @Test
  void rebootRankIsCpuOnlyAndTablesAreBounded() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class,
            () -> FaultTable.check(FaultPlan.parse(List.of("reboot-rank=1@5s"), 2), 2));
    assertThat(e)
        .hasMessage("fault 'reboot-rank=1@5s': reboot-rank is supported on the cpu backend only");
    StringBuilder many = new StringBuilder("slow-all=1us");
    for (int i = 1; i <= OsarLayout.MAX_FAULTS; i++)
      many.append(",slow-rank=0:").append(i).append("us");
    assertThat(
            catchThrowableOfType(
                ConfigException.class,
                () -> FaultTable.check(FaultPlan.parse(List.of(many.toString()), 2), 2)))
        .hasMessageContaining("at most 16 per rank");
    FaultTable.check(FaultPlan.parse(List.of("dead-rank=1@1s,slow-rank=0:1us~1%"), 2), 2);
  }
}
