package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.model.Counter;
import io.collscope.model.Phase;
import io.collscope.model.RankTotals;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.Test;

/** tail's one-line text form names every phase, without a broker. */
class TailCommandTest {

  private static final Instant AT = Instant.parse("2026-11-29T10:00:00Z");

  @Test
  void aSnapshotLineHasEveryPhasesMeanPerCallAtTheSampledClockRate() {
    RankTotals totals = new RankTotals(2, 4);
    totals.set(Counter.CALLS, 100);
    // The clock ran at 2 GHz while counting, twice the start-up rate below.
    totals.set(Counter.CLOCK_NS, 1_000_000_000L);
    totals.set(Counter.CLOCK_CYCLES, 2_000_000_000L);
    for (Phase p : Phase.values()) totals.setCycles(p, (p.ordinal() + 1) * 2_000_000L);
    CounterSnapshot s = totals.writeTo(new CounterSnapshot());
    s.setCluster("c1");
    s.setJob("j1");
    s.setCommunicator("comm0");
    s.setCollective("allreduce_oneshot_f32");
    s.setBackend("cpu");
    s.setWorldSize(2);
    s.setRank(1);
    s.setHost("h");
    s.setDevice("cpu");
    s.setBootId("0123456789");
    s.setSeq(7);
    s.setEventTime(AT);
    s.setCyclesPerSecond(1_000_000_000L);

    String line = TailCommand.format(s);

    assertThat(line).startsWith(AT + " snapshot c1/j1/comm0/1 seq=7 boot=01234567 calls=100");
    // (ordinal + 1) * 2e6 cycles at 2e9 per second over 100 calls: (ordinal + 1) * 10 us.
    assertThat(line).contains("us/call" + perPhase(p -> (p.ordinal() + 1) * 10.0) + " timeouts=0");
  }

  @Test
  void aRankWindowLineHasEveryPhasesMean() {
    RankWindow w = new RankWindow();
    w.setTimedKeys(List.of());
    w.setTimedKernelNs(List.of());
    w.setNetPeers(List.of());
    w.setNetSendWaitMeanUs(List.of());
    w.setNetSendSteps(List.of());
    w.setNetRecvWaitMeanUs(List.of());
    w.setNetRecvSteps(List.of());
    w.setCluster("c1");
    w.setJob("j1");
    w.setCommunicator("comm0");
    w.setRank(3);
    w.setWindowStart(AT);
    w.setWindowEnd(AT.plusSeconds(10));
    w.setCalls(500L);
    for (Phase p : Phase.values()) w.put(p.meanUsField(), p.ordinal() + 0.25);
    w.setP50Us(64.0);
    w.setP99Us(128.0);
    w.setPeerWaitMeanUs(List.of());
    w.setPeerArrivedLast(List.of());

    String line = TailCommand.format(w);

    assertThat(line).startsWith(AT + " window c1/j1/comm0/3 calls=500");
    assertThat(line).endsWith("us" + perPhase(p -> p.ordinal() + 0.25) + " p50=64 p99=128");
  }

  private static String perPhase(ToDoubleFunction<Phase> us) {
    StringBuilder sb = new StringBuilder();
    for (Phase p : Phase.values()) {
      sb.append(String.format(Locale.ROOT, " %s=%.1f", p.fieldName(), us.applyAsDouble(p)));
    }
    return sb.toString();
  }
}
