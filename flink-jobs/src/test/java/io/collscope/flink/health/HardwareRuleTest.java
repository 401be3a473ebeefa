package io.collscope.flink.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.HardwareCause;
import io.collscope.avro.Verdict;
import io.collscope.flink.testing.RecordedHealth;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The join's rule on windows of real H100 reads, with one condition planted on one GPU. */
class HardwareRuleTest {

  static final RecordedHealth H100 = RecordedHealth.load(RecordedHealth.H100_NCCL);
  static final int RANKS = 8;

  /**
   * A 10 s window of 8 GPUs (one rank each) reading the recording from {@code from}, 4 reads a
   * second; {@code planted} on rank {@code culprit}'s GPU.
   */
  static List<GpuHealth> window(int from, int culprit, HardwareCause planted) {
    List<GpuHealth> out = new ArrayList<>();
    for (int k = 0; k < 40; k++) {
      for (int r = 0; r < RANKS; r++) {
        GpuHealth h =
            H100.read(
                from + k + r % 3,
                "c",
                "j",
                "comm",
                r,
                "node-a",
                r,
                k + 1,
                Instant.ofEpochMilli(10_000 + 250L * k));
        out.add(r == culprit ? RecordedHealth.plant(h, planted, k + 1) : h);
      }
    }
    return out;
  }

  static Finding finding(FindingKind kind, int rank, int from) {
    return Finding.newBuilder()
        .setKind(kind)
        .setRank(rank)
        .setFromRank(from)
        .setCause(kind == FindingKind.SLOW_LINK ? Cause.LINK : Cause.ARRIVED_LATE)
        .setConfidence(0.9)
        .setExcessWaitUs(300)
        .setEvidence("e")
        .setNode("node-a")
        .build();
  }

  static HardwareCause judge(Finding f, List<GpuHealth> w) {
    return HardwareRule.judge(f, HardwareRule.gpus(w, Map.of())).cause();
  }

  // The recording's reads 150..190 are under NCCL load: SW power cap (0x4) in most of them, on
  // every GPU; reads 0..40 are idle (0x1).
  static final int LOADED = 150;

  @ParameterizedTest
  @EnumSource(HardwareCause.class)
  void aConditionPlantedOnTheSlowRanksGpuIsItsCause(HardwareCause planted) {
    for (int from : new int[] {0, LOADED}) {
      List<GpuHealth> w = window(from, 5, planted);
      assertThat(judge(finding(FindingKind.SLOW_RANK, 5, -1), w))
          .as("from read %d", from)
          .isEqualTo(planted);
      // ... and no other rank's
      assertThat(judge(finding(FindingKind.SLOW_RANK, 2, -1), w)).isEqualTo(HardwareCause.NONE);
    }
  }

  @Test
  void aPowerCapEveryGpuHitsUnderLoadExplainsNoOneRank() {
    List<GpuHealth> w = window(LOADED, 5, HardwareCause.NONE);
    long capped = w.stream().filter(h -> (h.getClockEventReasons() & 0x4) != 0).count();
    assertThat(capped).as("the recording is power-capped under load").isGreaterThan(w.size() / 2);
    assertThat(judge(finding(FindingKind.SLOW_RANK, 5, -1), w)).isEqualTo(HardwareCause.NONE);
    // the same cap on every GPU while the collective got slower: the uniform slowdown's cause
    assertThat(judge(finding(FindingKind.UNIFORM_SLOWDOWN, -1, -1), w))
        .isEqualTo(HardwareCause.POWER_CAP);
  }

  @Test
  void aSlowLinkTakesEitherEndsLinkErrorsBeforeClocks() {
    List<GpuHealth> w = window(0, 6, HardwareCause.LINK_ERRORS);
    assertThat(judge(finding(FindingKind.SLOW_LINK, 6, 3), w)).isEqualTo(HardwareCause.LINK_ERRORS);
    assertThat(judge(finding(FindingKind.SLOW_LINK, 3, 6), w)).isEqualTo(HardwareCause.LINK_ERRORS);
    assertThat(judge(finding(FindingKind.SLOW_LINK, 1, 2), w)).isEqualTo(HardwareCause.NONE);
    HardwareRule.Judged j =
        HardwareRule.judge(finding(FindingKind.SLOW_LINK, 6, 3), HardwareRule.gpus(w, Map.of()));
    assertThat(j.evidence()).contains("GPU 6 of node-a").contains("NVLink replay/recovery/CRC +");
  }

  @Test
  void theEvidenceGivesClocksTemperatureAndTheShareOfTheWindow() {
    List<GpuHealth> w = window(0, 5, HardwareCause.THERMAL);
    HardwareRule.Judged j =
        HardwareRule.judge(finding(FindingKind.SLOW_RANK, 5, -1), HardwareRule.gpus(w, Map.of()));
    assertThat(j.evidence())
        .startsWith("GPU 5 of node-a (rank 5): SM ")
        .contains("/1,980 MHz")
        .contains("THERMAL 100 % of the window's 40 reads (peers' median 0 %, SM ");
  }

  @Test
  void countersGrowFromTheLastReadBeforeTheWindow() {
    // ECC counts that grew before the window (and not in it) are no cause in it
    List<GpuHealth> w = window(0, 5, HardwareCause.NONE);
    List<GpuHealth> grownBefore = new ArrayList<>();
    for (GpuHealth h : w) {
      GpuHealth g = GpuHealth.newBuilder(h).build();
      if (h.getRank() == 5) g.setEccCorrected(12);
      grownBefore.add(g);
    }
    GpuHealth before = GpuHealth.newBuilder(w.get(5)).setEccCorrected(12).build();
    assertThat(
            HardwareRule.judge(
                    finding(FindingKind.SLOW_RANK, 5, -1),
                    HardwareRule.gpus(grownBefore, Map.of(5, before)))
                .cause())
        .isEqualTo(HardwareCause.NONE);
    GpuHealth earlier = GpuHealth.newBuilder(before).setEccCorrected(10).build();
    assertThat(
            HardwareRule.judge(
                    finding(FindingKind.SLOW_RANK, 5, -1),
                    HardwareRule.gpus(grownBefore, Map.of(5, earlier)))
                .cause())
        .isEqualTo(HardwareCause.ECC);
  }

  @Test
  void withoutHealthTheAttributionIsUnchanged() {
    Attribution a =
        Attribution.newBuilder()
            .setCommunicator("comm")
            .setWindowStart(Instant.ofEpochMilli(10_000))
            .setWindowEnd(Instant.ofEpochMilli(20_000))
            .setWorldSize(RANKS)
            .setRanks(List.of())
            .setMaxWaitRank(5)
            .setMaxWaitMeanUs(300)
            .setVerdict(Verdict.SLOW_RANK)
            .setFindings(List.of(finding(FindingKind.SLOW_RANK, 5, -1)))
            .setConfidence(0.9)
            .setMissingRanks(List.of())
            .build();
    assertThat(HardwareRule.join(a, List.of())).isSameAs(a);
    Attribution joined =
        HardwareRule.join(a, HardwareRule.gpus(window(0, 5, HardwareCause.XID), Map.of()));
    assertThat(joined.getFindings().get(0).getHardwareCause()).isEqualTo(HardwareCause.XID);
    // everything but the two hardware fields is the attribution's own
    Finding f = Finding.newBuilder(joined.getFindings().get(0)).build();
    f.setHardwareCause(HardwareCause.NONE);
    f.setHardwareEvidence("");
    assertThat(f).isEqualTo(a.getFindings().get(0));
    assertThat(joined.getVerdict()).isEqualTo(a.getVerdict());
  }
}
