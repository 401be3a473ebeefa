package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.schema.Findings;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Slow inter-node links named from NCCL's network proxy steps ({@link NetworkLinks}): what the
 * kernel-length join cannot tell (a slow link slows every rank's kernel alike), the senders' own
 * network waits per peer can.
 */
class NetworkLinkAttributionTest {

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
  void aSlowLinkBetweenTwoNodesIsNamedFromItsSendersNetworkWaits() {
    // 2 nodes × 2: the ring crosses the nodes at 1→2 and 3→0 (channel 0) and 2→1, 0→3 (channel 1)
    NcclNodeWindows job = new NcclNodeWindows(2, 2, 11).slowLink(1, 2, 40);
    for (int i = 0; i < 5; i++) {
      List<RankWindow> windows = job.next();
      Attribution a = attribute(windows);
      assertThat(verdict(a)).isEqualTo("SLOW_LINK(1->2)");
      assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_LINK);
      Finding f = a.getFindings().get(0);
      assertThat(f.getCause()).isEqualTo(Cause.LINK);
      assertThat(f.getNode()).isEqualTo("node-0"); // the sender's host
      assertThat(f.getEvidence())
          .startsWith("rank 1's sends to rank 2 (node-0 → node-1) took")
          .contains("on the other ranks' links");
      // the same windows without network waits: the kernel lengths alone see nothing
      assertThat(verdict(attribute(NcclNodeWindows.withoutNetwork(windows)))).isEqualTo("NONE");
    }
  }

  @Test
  void aSlowLinkOfARankWithTwoNetworkPeersStandsOutAgainstItsOtherPeer() {
    // one rank a node (data-parallel replicas): every ring neighbour is across the network
    NcclNodeWindows job = new NcclNodeWindows(4, 1, 12).slowLink(1, 2, 40);
    Attribution a = attribute(job.next());
    assertThat(verdict(a)).isEqualTo("SLOW_LINK(1->2)");
    assertThat(a.getFindings().get(0).getEvidence()).contains("to its other peers");
  }

  @Test
  void aRankWhoseSendsAreAllSlowIsNotOneSlowLink() {
    // both of rank 1's links slow: its NIC, not a link (no SLOW_LINK from it)
    NcclNodeWindows job = new NcclNodeWindows(4, 1, 13).slowLink(1, 2, 40).slowLink(1, 0, 40);
    assertThat(verdict(attribute(job.next()))).doesNotContain("SLOW_LINK(1->");
  }

  @Test
  void aSendersOwnHiccupThatTheReceiverDidNotSeeIsNoSlowLink() {
    NcclNodeWindows job = new NcclNodeWindows(2, 2, 19).sendSideOnly(1, 2, 40);
    assertThat(verdict(attribute(job.next()))).isEqualTo("NONE");
    // the same on both ends is the link
    Attribution a = attribute(new NcclNodeWindows(2, 2, 19).slowLink(1, 2, 40).next());
    assertThat(a.getFindings().get(0).getEvidence()).contains("rank 2 waited");
  }

  @Test
  void cleanNetworksNameNothing() {
    for (int nodes : new int[] {2, 4}) {
      NcclNodeWindows job = new NcclNodeWindows(nodes, 2, 14);
      for (int i = 0; i < 5; i++) assertThat(verdict(attribute(job.next()))).isEqualTo("NONE");
    }
  }

  @Test
  void recordsWithoutNetworkWaitsKeepTheirVerdicts() {
    // Old records (before CounterSnapshot 9 / RankWindow 10): the same findings as before, a slow
    // rank and a slow node included; and a slow link adds its finding next to a slow rank's.
    List<List<RankWindow>> cases =
        List.of(
            new NcclNodeWindows(2, 2, 15).slowRank(2, 2000).next(),
            new NcclNodeWindows(2, 2, 16).slowNode(1, 2000).next(),
            new NcclNodeWindows(2, 2, 17).next());
    for (List<RankWindow> windows : cases) {
      Attribution with = attribute(windows);
      Attribution without = attribute(NcclNodeWindows.withoutNetwork(windows));
      assertThat(verdict(with)).isEqualTo(verdict(without));
      assertThat(with.getVerdict()).isEqualTo(without.getVerdict());
    }
    Attribution both =
        attribute(new NcclNodeWindows(2, 2, 18).slowRank(0, 2000).slowLink(1, 2, 40).next());
    assertThat(verdict(both)).isEqualTo("SLOW_RANK(0,ARRIVED_LATE) SLOW_LINK(1->2)");
  }
}
