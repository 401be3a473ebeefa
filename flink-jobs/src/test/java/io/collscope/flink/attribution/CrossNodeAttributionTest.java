package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.schema.Findings;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Stragglers of NCCL communicators that span nodes: named from the kernel lengths every rank timed,
 * joined in the job ({@link CrossNodeLateness}), where the plugin's node-local join sees only the
 * node's own ranks.
 */
class CrossNodeAttributionTest {

  private static Attribution attribute(List<RankWindow> windows) {
    return Attributor.attribute(
        Windows.KEY, Windows.START, Windows.END, windows, Thresholds.DEFAULT);
  }

  private static String verdict(Attribution a) {
    return a.getFindings().isEmpty()
        ? "NONE"
        : String.join(" ", a.getFindings().stream().map(Findings::token).toList());
  }

  @Test
  void aRankSlowedOnTheSecondOfTwoNodesIsNamedOnlyWithTheJoin() {
    NcclNodeWindows job = new NcclNodeWindows(2, 2, 1).slowRank(2, 2000);
    for (int i = 0; i < 5; i++) {
      List<RankWindow> windows = job.next();
      // The node-local view alone: one peer of three sees it, and that is no finding.
      assertThat(verdict(attribute(NcclNodeWindows.withoutTimed(windows))))
          .doesNotContain("SLOW_RANK(2");
      Attribution a = attribute(windows);
      assertThat(verdict(a)).isEqualTo("SLOW_RANK(2,ARRIVED_LATE)");
      Finding f = a.getFindings().get(0);
      assertThat(f.getNode()).isEqualTo("node-1");
      assertThat(f.getExcessWaitUs()).isCloseTo(2000, within(100.0));
    }
  }

  @Test
  void theRanksOfTheOtherNodeWaitForItAndBookItAsWaitNotAsTheirOwnWork() {
    List<RankWindow> windows = new NcclNodeWindows(2, 2, 2).slowRank(2, 2000).next();
    RankWindow before = windows.get(0);
    Attribution a = attribute(windows);
    var rank0 = a.getRanks().get(0);
    assertThat(before.getWaitMeanUs()).isLessThan(100); // its node's other rank was on time
    assertThat(rank0.getWaitMeanUs()).isCloseTo(2000, within(100.0));
    assertThat(rank0.getWaitMeanUs() + rank0.getReduceMeanUs())
        .isCloseTo(before.getWaitMeanUs() + before.getReduceMeanUs(), within(1e-6));
  }

  @Test
  void aWholeSlowNodeIsNamedAsTheNode() {
    NcclNodeWindows job = new NcclNodeWindows(2, 2, 3).slowNode(1, 2000);
    for (int i = 0; i < 5; i++) {
      Attribution a = attribute(job.next());
      assertThat(verdict(a)).isEqualTo("SLOW_NODE(node-1,ARRIVED_LATE)");
      assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_NODE);
      Finding f = a.getFindings().get(0);
      assertThat(f.getKind()).isEqualTo(FindingKind.SLOW_NODE);
      assertThat(f.getRank()).isEqualTo(2);
      assertThat(f.getCause()).isEqualTo(Cause.ARRIVED_LATE);
      assertThat(f.getExcessWaitUs()).isCloseTo(2000, within(100.0));
    }
  }

  @Test
  void aSlowNodeOfFourIsNamedAndOneSlowGpuOfItIsNot() {
    assertThat(verdict(attribute(new NcclNodeWindows(4, 2, 4).slowNode(3, 1000).next())))
        .isEqualTo("SLOW_NODE(node-3,ARRIVED_LATE)");
    assertThat(verdict(attribute(new NcclNodeWindows(4, 2, 5).slowRank(6, 1000).next())))
        .isEqualTo("SLOW_RANK(6,ARRIVED_LATE)");
  }

  @Test
  void oneRankPerNodeIsJoinedWholeByTheJob() {
    NcclNodeWindows job = new NcclNodeWindows(4, 1, 6).slowRank(1, 500);
    for (int i = 0; i < 3; i++) {
      Attribution a = attribute(job.next());
      assertThat(verdict(a)).isEqualTo("SLOW_RANK(1,ARRIVED_LATE)");
      assertThat(a.getFindings().get(0).getNode()).isEqualTo("node-1");
    }
  }

  @Test
  void aCleanMultiNodeRunHasNoFinding() {
    for (int nodes : new int[] {2, 4}) {
      for (int perNode : new int[] {1, 2, 4}) {
        NcclNodeWindows job = new NcclNodeWindows(nodes, perNode, 7 * nodes + perNode);
        for (int i = 0; i < 20; i++) {
          assertThat(verdict(attribute(job.next())))
              .as("%d nodes x %d, window %d", nodes, perNode, i)
              .isEqualTo("NONE");
        }
      }
    }
  }

  @Test
  void theJoinAgreesWithTheNodeLocalJoinWhereBothSeeThePair() {
    List<RankWindow> local = new NcclNodeWindows(1, 4, 8).slowRank(1, 300).next();
    List<RankWindow> joined = CrossNodeLateness.join(NcclNodeWindows.oneHostEach(local));
    for (int r = 0; r < 4; r++) {
      for (int p = 0; p < 4; p++) {
        if (p == r) continue;
        assertThat(joined.get(r).getPeerLateMeanUs().get(p))
            .as("rank %d sees %d", r, p)
            .isCloseTo(local.get(r).getPeerLateMeanUs().get(p), within(1e-3));
        assertThat(joined.get(r).getPeerLateSeUs().get(p))
            .isCloseTo(local.get(r).getPeerLateSeUs().get(p), within(1e-3));
      }
      assertThat(joined.get(r).getWaitMeanUs())
          .isCloseTo(local.get(r).getWaitMeanUs(), within(1e-3));
    }
  }

  @Test
  void windowsOfOneHostOrWithoutTimedCollectivesAreLeftAsTheyAre() {
    List<RankWindow> local = new NcclNodeWindows(1, 4, 9).next();
    assertThat(CrossNodeLateness.join(local)).isSameAs(local);
    List<RankWindow> untimed = NcclNodeWindows.withoutTimed(new NcclNodeWindows(2, 2, 9).next());
    assertThat(CrossNodeLateness.join(untimed)).isSameAs(untimed);
  }

  @Test
  void rootedCollectivesAreNotJoined() {
    assertThat(CrossNodeLateness.endsTogether((5L << 3 | 0) + 1)).isTrue(); // AllReduce
    assertThat(CrossNodeLateness.endsTogether((5L << 3 | 5) + 1)).isTrue(); // AlltoAll
    assertThat(CrossNodeLateness.endsTogether((5L << 3 | 3) + 1)).isFalse(); // Broadcast
    assertThat(CrossNodeLateness.endsTogether((5L << 3 | 4) + 1)).isFalse(); // Reduce
  }
}
