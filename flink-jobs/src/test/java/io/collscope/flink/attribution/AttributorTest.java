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
        : "SLOW_RANK(" + f.getRank() + "," + f.getCause() + ")";
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
