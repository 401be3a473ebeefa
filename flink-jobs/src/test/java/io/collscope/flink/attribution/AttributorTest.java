package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AttributorTest {

  private static Attribution attribute(Windows w) {
    return Attributor.attribute(
        Windows.KEY, Windows.START, Windows.END, w.build(), Thresholds.DEFAULT);
  }

  private static String describe(Finding f) {
    return f.getKind() == FindingKind.SLOW_LINK
        ? "SLOW_LINK(" + f.getFromRank() + "->" + f.getRank() + ")"
        : f.getKind() + "(" + f.getRank() + "," + f.getCause() + ")";
  }

  private static List<String> findings(Attribution a) {
    return a.getFindings().stream().map(AttributorTest::describe).toList();
  }

  @Test
  void noStragglerMeansNone() {
    Attribution a = attribute(new Windows(8, 10));
    assertThat(a.getVerdict()).isEqualTo(Verdict.NONE);
    assertThat(a.getFindings()).isEmpty();
    assertThat(a.getConfidence()).isGreaterThan(0.5);
    assertThat(a.getMissingRanks()).isEmpty();
    assertThat(a.getRanks()).hasSize(8);
  }

  @Test
  void aSlowRankThatArrivedLateIsNamedWithItsCause() {
    Attribution a = attribute(new Windows(8, 10).slowRank(5, 300));
    assertThat(findings(a)).containsExactly("SLOW_RANK(5,ARRIVED_LATE)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_RANK);
    assertThat(a.getConfidence()).isGreaterThan(0.8);
    // the straggler waits least: the max wait belongs to a victim
    assertThat(a.getMaxWaitRank()).isNotEqualTo(5);
    assertThat(a.getFindings().get(0).getEvidence()).contains("7 of 7 peers waited on rank 5");
  }

  @ParameterizedTest
  @CsvSource({"guard,RING_FULL", "publish,SLOW_PUBLISH", "copyReduce,SLOW_COPY_REDUCE"})
  void theBlamedRanksOwnPhasesSayWhy(String phase, String cause) {
    Windows w = new Windows(4, 10).slowRank(1, 250);
    switch (phase) {
      case "guard" -> w.guard(1, 240);
      case "publish" -> w.publish(1, 240);
      default -> w.copyReduce(1, 240);
    }
    assertThat(findings(attribute(w))).containsExactly("SLOW_RANK(1," + cause + ")");
  }

  @Test
  void aSlowLinkIsNamedNotItsVictim() {
    Attribution a = attribute(new Windows(8, 10).slowLink(3, 6, 300));
    assertThat(findings(a)).containsExactly("SLOW_LINK(3->6)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_LINK);
  }

  @Test
  void twoCulpritsAreTwoFindings() {
    Attribution a = attribute(new Windows(8, 10).slowRank(2, 400).slowLink(4, 7, 300));
    assertThat(findings(a)).containsExactly("SLOW_RANK(2,ARRIVED_LATE)", "SLOW_LINK(4->7)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.MULTIPLE);

    // Rank 6 is 150us late, rank 1 200us: peers wait 150us for 6 and then 50us more for 1,
    // so each is named, the one that costs most first.
    Attribution b = attribute(new Windows(8, 10).slowRank(1, 200).slowRank(6, 150));
    assertThat(findings(b))
        .containsExactly("SLOW_RANK(6,ARRIVED_LATE)", "SLOW_RANK(1,ARRIVED_LATE)");
  }

  @Test
  void aMissingRankIsReportedAndTheRestStillAttributed() {
    Attribution a = attribute(new Windows(4, 10).slowRank(1, 300).absent(3));
    assertThat(a.getMissingRanks()).containsExactly(3);
    assertThat(findings(a)).containsExactly("SLOW_RANK(1,ARRIVED_LATE)");
    assertThat(a.getRanks()).extracting(r -> r.getRank()).containsExactly(0, 1, 2);
  }

  @Test
  void aDeadRankThatItsPeersTimeOutOnIsSilent() {
    // 1 s timeouts in 10 of 1000 calls: 10 ms per call on rank 3
    Attribution a = attribute(new Windows(4, 10).silent(3, 10_000, 10));
    assertThat(findings(a)).containsExactly("SILENT_RANK(3,TIMED_OUT)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.SILENT_RANK);
    assertThat(a.getMissingRanks()).containsExactly(3);
    Finding f = a.getFindings().get(0);
    assertThat(f.getFromRank()).isEqualTo(-1);
    assertThat(f.getConfidence()).isGreaterThan(0.9);
    assertThat(f.getEvidence())
        .contains("3 of 3 present ranks waited on rank 3")
        .contains("timed out in 30 of their 3000 calls");

    // With one peer left, that peer's waits are the whole evidence.
    assertThat(findings(attribute(new Windows(2, 5).silent(1, 10_000, 10))))
        .containsExactly("SILENT_RANK(1,TIMED_OUT)");
  }

  @Test
  void theAbortsOfTimedOutPeersBlameNoPresentRank() {
    // The peers fall out of step after each abort and wait ~1 ms on rank 1: a shadow of the
    // timeouts, not a culprit.
    Attribution a = attribute(new Windows(4, 10).silent(3, 300_000, 700).slowRank(1, 1_000));
    assertThat(findings(a)).containsExactly("SILENT_RANK(3,TIMED_OUT)");
  }

  @Test
  void timeoutsInGuardAreWaitsOnTheSilentRank() {
    // Every collective times out waiting for a slot's acks: no per-peer wait is billed at all.
    Windows w = new Windows(4, 10).silent(3, 0, 1000);
    for (int r = 0; r < 3; r++) w.guard(r, 1_000_000);
    assertThat(findings(attribute(w))).containsExactly("SILENT_RANK(3,TIMED_OUT)");
  }

  @Test
  void aRankWaitedOnWithoutTimeoutsRunsButDoesNotReport() {
    Attribution a = attribute(new Windows(4, 10).silent(3, 300, 0));
    assertThat(findings(a)).containsExactly("SILENT_RANK(3,NOT_REPORTING)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.SILENT_RANK);
    assertThat(a.getFindings().get(0).getEvidence()).contains("none of them timed out");
  }

  @Test
  void aMissingRankNobodyWaitsOnIsOnlyMissing() {
    Attribution a = attribute(new Windows(4, 10).absent(3));
    assertThat(a.getMissingRanks()).containsExactly(3);
    assertThat(a.getFindings()).isEmpty();
    assertThat(a.getVerdict()).isEqualTo(Verdict.NONE);
  }

  @Test
  void aSlowRankBesideASilentRankIsNamedToo() {
    // 1 timeout of 1 s in 1000 calls costs 1 ms per call; rank 2's 300 us is far above the aborts.
    Attribution a = attribute(new Windows(8, 10).slowRank(2, 300).silent(5, 1_000, 1));
    assertThat(findings(a))
        .containsExactly("SILENT_RANK(5,TIMED_OUT)", "SLOW_RANK(2,ARRIVED_LATE)");
    assertThat(a.getVerdict()).isEqualTo(Verdict.MULTIPLE);
  }

  @Test
  void worldSizeOneHasNothingToAttribute() {
    Attribution a = attribute(new Windows(1, 10));
    assertThat(a.getVerdict()).isEqualTo(Verdict.NONE);
    assertThat(a.getConfidence()).isEqualTo(1.0);
    assertThat(a.getMaxWaitRank()).isZero();
  }

  @Test
  void worldSizeTwoNamesASlowRankAndAnAmbiguousLinkOnce() {
    assertThat(findings(attribute(new Windows(2, 5).slowRank(1, 300))))
        .containsExactly("SLOW_RANK(1,ARRIVED_LATE)");
    assertThat(attribute(new Windows(2, 5)).getVerdict()).isEqualTo(Verdict.NONE);
    Attribution link = attribute(new Windows(2, 5).slowLink(0, 1, 300));
    assertThat(link.getFindings()).hasSize(1);
    assertThat(link.getVerdict()).isEqualTo(Verdict.SLOW_LINK);
    assertThat(link.getFindings().get(0).getEvidence()).contains("direction cannot be told");
    assertThat(link.getConfidence()).isLessThanOrEqualTo(0.5);
  }

  @Test
  void allButOneRankMissingIsNoneWithZeroConfidence() {
    Attribution a = attribute(new Windows(4, 10).absent(0).absent(1).absent(2));
    assertThat(a.getVerdict()).isEqualTo(Verdict.NONE);
    assertThat(a.getMissingRanks()).containsExactly(0, 1, 2);
    assertThat(a.getConfidence()).isZero();
  }
}
