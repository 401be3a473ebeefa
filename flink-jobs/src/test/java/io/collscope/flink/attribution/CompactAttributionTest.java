package io.collscope.flink.attribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.collscope.avro.Attribution;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankWindow;
import io.collscope.avro.Verdict;
import io.collscope.model.CompactPeers;
import io.collscope.model.Phase;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The attribution over compact rank windows (listed peers and one value for the others) is the
 * attribution over the dense windows they stand for ({@link CompactPeers#expand}): same verdict,
 * findings, floor, noise and confidence — whether the culprit is a listed cell (a slow link seen by
 * one rank of 1,024) or hides in the others' value (late ranks no early rank lists one by one).
 */
class CompactAttributionTest {

  static final double FLOOR = 10;

  /** One rank's compact window: listed peers by rank → {mean, p99, arrived last}. */
  static RankWindow compact(
      int n,
      int r,
      TreeMap<Integer, double[]> listed,
      double others,
      long othersLast,
      double wait) {
    long calls = 1000;
    listed.putIfAbsent(r, new double[] {0, 0, 0});
    RankWindow w = new RankWindow();
    w.setTimedKeys(List.of());
    w.setTimedKernelNs(List.of());
    w.setNetPeers(List.of());
    w.setNetSendWaitMeanUs(List.of());
    w.setNetSendSteps(List.of());
    w.setNetRecvWaitMeanUs(List.of());
    w.setNetRecvSteps(List.of());
    w.setCluster(Windows.KEY.cluster());
    w.setJob(Windows.KEY.job());
    w.setCommunicator(Windows.KEY.communicator());
    w.setCollective("allreduce_oneshot_f32");
    w.setRank(r);
    w.setWorldSize(n);
    w.setHost("h" + r);
    w.setWindowStart(Instant.ofEpochMilli(Windows.START));
    w.setWindowEnd(Instant.ofEpochMilli(Windows.END));
    w.setCalls(calls);
    w.setBytes(4096 * calls);
    w.setTimeouts(0L);
    w.put(Phase.GUARD.meanUsField(), 0.5);
    w.put(Phase.COPY.meanUsField(), 1.0);
    w.put(Phase.PUBLISH.meanUsField(), 0.3);
    w.put(Phase.WAIT.meanUsField(), wait);
    w.put(Phase.REDUCE.meanUsField(), 2.0);
    w.setP50Us(wait + 4);
    w.setP99Us(2 * wait + 8);
    w.setClockHz(1e9);
    List<Integer> index = new ArrayList<>(listed.keySet());
    List<Double> mean = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    List<Long> last = new ArrayList<>();
    for (double[] v : listed.values()) {
      mean.add(v[0]);
      p99.add(v[1]);
      last.add((long) v[2]);
    }
    w.setPeerIndex(index);
    w.setPeerWaitMeanUs(mean);
    w.setPeerLateMeanUs(mean);
    w.setPeerLateP99Us(p99);
    w.setPeerArrivedLast(last);
    w.setOthersWaitMeanUs(others);
    w.setOthersLateMeanUs(others);
    w.setOthersLateP99Us(others + 16);
    w.setOthersArrivedLast(othersLast);
    return w;
  }

  static double[] cell(double mean, Random rnd) {
    return new double[] {mean, mean + 16, rnd.nextInt(5)};
  }

  static Attribution attribute(List<RankWindow> windows) {
    return Attributor.attribute(
        Windows.KEY, Windows.START, Windows.END, windows, Thresholds.DEFAULT);
  }

  /** The attribution of the compact windows, checked against that of their dense expansion. */
  static Attribution attributedAsDense(List<RankWindow> compact) {
    Attribution a = attribute(compact);
    Attribution d = attribute(compact.stream().map(CompactPeers::expand).toList());
    assertThat(a.getVerdict()).isEqualTo(d.getVerdict());
    assertThat(a.getThresholdUs()).isCloseTo(d.getThresholdUs(), within(1e-9));
    assertThat(a.getNoiseUs()).isCloseTo(d.getNoiseUs(), within(1e-9));
    assertThat(a.getConfidence()).isCloseTo(d.getConfidence(), within(1e-9));
    assertThat(a.getMissingRanks()).isEqualTo(d.getMissingRanks());
    assertThat(a.getFindings()).hasSameSizeAs(d.getFindings());
    for (int i = 0; i < a.getFindings().size(); i++) {
      Finding x = a.getFindings().get(i);
      Finding y = d.getFindings().get(i);
      assertThat(culprit(x)).as("finding %d", i).isEqualTo(culprit(y));
      assertThat(x.getCause()).isEqualTo(y.getCause());
      assertThat(x.getExcessWaitUs()).isCloseTo(y.getExcessWaitUs(), within(1e-6));
      assertThat(x.getConfidence()).isCloseTo(y.getConfidence(), within(1e-9));
    }
    return a;
  }

  static String culprit(Finding f) {
    return f.getKind() + " " + f.getRank() + " " + f.getFromRank();
  }

  @Test
  void aSlowLinkListedByOneRankOfAThousandIsNamed() {
    int n = 1024;
    Random rnd = new Random(1);
    List<RankWindow> windows = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      TreeMap<Integer, double[]> listed = new TreeMap<>();
      while (listed.size() < 15) {
        int p = rnd.nextInt(n);
        if (p != r) listed.put(p, cell(FLOOR + 5 * rnd.nextDouble(), rnd));
      }
      if (r == 900) listed.put(3, new double[] {FLOOR + 300, FLOOR + 316, 900});
      windows.add(compact(n, r, listed, FLOOR + 2.5, 1, r == 900 ? 300 : 5));
    }
    Attribution a = attributedAsDense(windows);
    assertThat(a.getVerdict()).isEqualTo(Verdict.SLOW_LINK);
    assertThat(culprit(a.getFindings().get(0))).isEqualTo("SLOW_LINK 900 3");
  }

  @Test
  void lateRanksThatOnlyTheOthersValueCarriesAreNamed() {
    // 8 early ranks and 248 late ones (late by 300 us): an early rank lists its 7 early peers and
    // 8 late ones; the other 240 late ranks are its others' value. No early rank lists most of
    // the late ranks one by one: they are found through the others' value or not at all.
    int n = 256;
    int early = 8;
    Random rnd = new Random(2);
    List<RankWindow> windows = new ArrayList<>();
    TreeSet<Integer> listedSomewhere = new TreeSet<>();
    for (int r = 0; r < n; r++) {
      TreeMap<Integer, double[]> listed = new TreeMap<>();
      boolean isEarly = r < early;
      if (isEarly) {
        for (int p = 0; p < early; p++) {
          if (p != r) listed.put(p, cell(FLOOR + 5 * rnd.nextDouble(), rnd));
        }
        while (listed.size() < 15) {
          int p = early + rnd.nextInt(n - early);
          listed.put(p, cell(FLOOR + 300 + 5 * rnd.nextDouble(), rnd));
          listedSomewhere.add(p);
        }
      } else {
        while (listed.size() < 15) {
          int p = rnd.nextInt(n);
          if (p != r) listed.put(p, cell(FLOOR + 5 * rnd.nextDouble(), rnd));
        }
      }
      windows.add(compact(n, r, listed, FLOOR + (isEarly ? 302.5 : 2.5), 4, isEarly ? 310 : 5));
    }
    Attribution a = attributedAsDense(windows);
    assertThat(a.getVerdict()).isEqualTo(Verdict.MULTIPLE);
    List<Integer> named =
        a.getFindings().stream()
            .filter(f -> f.getKind() == FindingKind.SLOW_RANK)
            .map(Finding::getRank)
            .sorted()
            .toList();
    assertThat(named).isEqualTo(IntStream.range(early, n).boxed().toList());
    assertThat(listedSomewhere.size()).isLessThan((n - early) / 2);
  }

  @Test
  void randomCompactWindowsAreAttributedAsTheirDenseExpansion() {
    for (int seed = 0; seed < 40; seed++) {
      Random rnd = new Random(seed);
      int n = 130 + rnd.nextInt(100);
      List<RankWindow> windows = new ArrayList<>();
      int slow = rnd.nextInt(n);
      for (int r = 0; r < n; r++) {
        if (rnd.nextInt(40) == 0) continue; // missing
        TreeMap<Integer, double[]> listed = new TreeMap<>();
        int k = 1 + rnd.nextInt(16);
        while (listed.size() < k) {
          int p = rnd.nextInt(n);
          if (p == r) continue;
          double v = FLOOR + 5 * rnd.nextDouble();
          if (p == slow && rnd.nextInt(4) > 0) v += 300; // most rows list the slow rank
          if (rnd.nextInt(50) == 0) v += 100 + 300 * rnd.nextDouble(); // now and then a link
          listed.put(p, new double[] {v, v + 8 + 32 * rnd.nextDouble(), rnd.nextInt(900)});
        }
        double others = FLOOR + 5 * rnd.nextDouble() + (rnd.nextInt(30) == 0 ? 300 : 0);
        windows.add(compact(n, r, listed, others, rnd.nextInt(5), r == slow ? 5 : 300));
      }
      attributedAsDense(windows);
    }
  }
}
