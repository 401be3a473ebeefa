package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.collscope.bench.Classification.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The overhead table: rounds parsed by size, classified against the goals. */
class NcclOverheadTest {

  static String rounds(long bytes, String mode, double... v) {
    StringBuilder b = new StringBuilder("nccl-overhead," + bytes + "," + mode);
    for (double d : v) b.append(',').append(d);
    return b.toString();
  }

  @Test
  void aPluginThatCostsMoreThanTheGoalEveryRoundIsSlowerAndMissesIt() {
    List<NcclOverhead.Row> rows =
        NcclOverhead.parse(
            List.of(
                "torch 2.11 ...",
                rounds(4096, "on", 20.5, 20.6, 20.5, 20.7, 20.6, 20.5, 20.6),
                rounds(4096, "off", 20.0, 20.1, 20.0, 20.1, 20.0, 20.1, 20.0)));
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).verdict()).isEqualTo(Verdict.SLOWER);
    assertThat(rows.get(0).goalMet()).isEqualTo("NO");
    assertThat(NcclOverhead.table(rows)).contains("| 4096 |").contains("SLOWER");
  }

  @Test
  void withinTheGoalIsParityAndMet() {
    List<NcclOverhead.Row> rows =
        NcclOverhead.parse(
            List.of(
                rounds(1 << 24, "on", 80.1, 80.0, 80.2, 80.1, 80.0),
                rounds(1 << 24, "off", 80.0, 80.1, 80.0, 80.2, 80.1)));
    assertThat(rows.get(0).goalUs())
        .isEqualTo(0.005 * 80.1, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(rows.get(0).verdict()).isEqualTo(Verdict.PARITY);
    assertThat(rows.get(0).goalMet()).isEqualTo("yes");
  }

  @Test
  void aSizeWithoutItsBaselineOrAMalformedLineIsAnError() {
    assertThatThrownBy(() -> NcclOverhead.parse(List.of(rounds(4096, "on", 1, 2, 3, 4, 5))))
        .hasMessageContaining("no off rounds");
    assertThatThrownBy(() -> NcclOverhead.parse(List.of("nccl-overhead,4096,sideways")))
        .hasMessageContaining("malformed");
    assertThatThrownBy(() -> NcclOverhead.parse(List.of("nccl-overhead,4096,on,1,x,3")))
        .hasMessageContaining("malformed");
  }

  @Test
  void eachVariantIsClassifiedAgainstTheNamedBaselineAndASeparateProcessIsNeverPaired() {
    double[] none = {40.0, 41.0, 40.5, 40.2, 40.8, 40.1, 40.6, 40.3, 40.9};
    double[] kch = new double[9];
    double[] ours = new double[9];
    double[] noplugin = new double[9];
    for (int i = 0; i < 9; i++) {
      kch[i] = none[i] + 3.0; // consistently slower by far more than the noise (1.0)
      ours[i] = none[i] + (i % 2 == 0 ? 0.05 : -0.05);
      noplugin[i] = 40.0 + 0.1 * i;
    }
    List<String> log =
        List.of(
            rounds(4096, "none", none),
            rounds(4096, "kch", kch),
            rounds(4096, "ours:64", ours),
            "nccl-overhead-separate,4096,noplugin,"
                + String.join(
                    ",", java.util.Arrays.stream(noplugin).mapToObj(Double::toString).toList()));
    List<NcclOverhead.Row> rows = NcclOverhead.parse(log, "none");
    assertThat(rows)
        .extracting(NcclOverhead.Row::variant)
        .containsExactly("kch", "ours:64", "noplugin");
    assertThat(rows.get(0).verdict()).isEqualTo(Verdict.SLOWER);
    assertThat(rows.get(0).paired()).isTrue();
    assertThat(rows.get(1).verdict()).isEqualTo(Verdict.PARITY);
    // within the goal by its median, but rounds 0.8 µs apart cannot show a 0.2 µs goal
    assertThat(rows.get(1).goalMet()).isEqualTo("not shown");
    assertThat(rows.get(2).paired()).isFalse();
    assertThat(NcclOverhead.table(rows, "none"))
        .contains("| 4096 | kch |", "| none µs |", "(unpaired)");
  }

  @Test
  void theHarnessPairedIntervalDecidesTheGoalWhenItIsAgainstTheBaseline() {
    double[] none = {12.2, 18.0, 12.4, 17.9, 12.1, 18.3, 12.3, 17.8, 12.2};
    double[] v = new double[9];
    for (int i = 0; i < 9; i++) v[i] = none[i] + 0.1;
    List<String> log =
        List.of(
            rounds(4096, "none", none),
            rounds(4096, "cheap", v),
            rounds(4096, "dear", v),
            rounds(4096, "unsure", v),
            rounds(4096, "tooFew", v),
            "nccl-direct-paired,4096,cheap,device,0.1000,0.0500,0.1500,7,9",
            "nccl-direct-paired,4096,cheap,host,9.0,9.0,9.0,9,9",
            "nccl-direct-paired,4096,dear,device,0.3860,0.2630,0.4610,9,9",
            "nccl-direct-paired,4096,unsure,device,0.1900,0.1300,0.2300,8,9",
            "nccl-direct-paired,4096,tooFew,device,0.1000,nan,nan,2,3");
    List<NcclOverhead.Row> rows = NcclOverhead.parse(log, "none");
    // the baseline's rounds are 6 µs apart: by the medians alone nothing could be shown
    assertThat(rows)
        .extracting(NcclOverhead.Row::goalMet)
        .containsExactly("yes", "NO", "not shown", "not shown");
    assertThat(rows.get(0).diff().hiUs()).isEqualTo(0.15); // device, not the host line
    String table = NcclOverhead.table(rows, "none");
    assertThat(table)
        .contains("paired Δ µs [95 %]", "+0.386 [+0.263, +0.461] | NO |", "| +0.100 | not shown |");
  }

  @Test
  void theAbsoluteGoalPerStepCountsTheHarnessRanks() {
    double[] none = {12.2, 18.0, 12.4, 17.9, 12.1, 18.3, 12.3, 17.8, 12.2};
    double[] big = {100, 101, 100, 102, 100, 101, 100, 100, 101};
    String paired4k = "nccl-direct-paired,4096,ours:64,device,0.1515,0.0699,0.3036,44,61";
    String paired1m = "nccl-direct-paired,1048576,ours:64,device,0.30,0.20,0.40,9,9";
    List<String> oneRank =
        List.of(
            rounds(4096, "none", none),
            rounds(4096, "ours:64", none),
            rounds(1 << 20, "none", big),
            rounds(1 << 20, "ours:64", big),
            paired4k,
            paired1m);
    List<String> twoRanks = new java.util.ArrayList<>(oneRank);
    twoRanks.add(0, "nccl-direct: nccl 22809 cudart 13000 devices 2 plugin p bench b rounds 61");
    twoRanks.add("nccl-direct: done"); // the harness's last line names no devices
    // run 75's 4 KB interval: over 200 ns per step, within 200 ns per rank's collective
    assertThat(NcclOverhead.parse(oneRank, "none"))
        .extracting(NcclOverhead.Row::goalMet)
        .containsExactly("not shown", "yes");
    List<NcclOverhead.Row> rows = NcclOverhead.parse(twoRanks, "none");
    assertThat(rows).extracting(NcclOverhead.Row::goalUs).containsExactly(0.4, 0.5);
    // the relative goal at 1 MiB does not scale with the ranks
    assertThat(rows).extracting(NcclOverhead.Row::goalMet).containsExactly("yes", "yes");
    assertThat(
            NcclOverhead.parse(
                List.of(
                    "nccl-direct: devices 8", rounds(4096, "none", none), rounds(4096, "x", none)),
                "none"))
        .extracting(NcclOverhead.Row::goalUs)
        .containsExactly(1.6);
    // one enqueuing thread per rank: a step is one rank's collective per thread
    assertThat(
            NcclOverhead.parse(
                List.of(
                    "nccl-direct: nccl 22809 cudart 13000 devices 2 threads 2 plugin p",
                    rounds(4096, "none", none),
                    rounds(4096, "x", none)),
                "none"))
        .extracting(NcclOverhead.Row::goalUs)
        .containsExactly(0.2);
  }

  @Test
  void pairedIntervalsAgainstAnotherVariantAreNotUsed() {
    double[] none = {12.2, 18.0, 12.4, 17.9, 12.1, 18.3, 12.3, 17.8, 12.2};
    List<String> log =
        List.of(
            rounds(4096, "none", none),
            rounds(4096, "kch", none),
            rounds(4096, "ours:64", none),
            "nccl-direct-paired,4096,kch,device,0.0,-0.01,0.01,4,9",
            "nccl-direct-paired,4096,ours:64,device,0.0,-0.01,0.01,4,9");
    // the harness paired against none; rows against kch must not borrow those intervals
    List<NcclOverhead.Row> rows = NcclOverhead.parse(log, "kch");
    assertThat(rows).allSatisfy(r -> assertThat(r.diff()).isNull());
    assertThat(rows).extracting(NcclOverhead.Row::goalMet).containsOnly("not shown");
    assertThat(NcclOverhead.table(rows, "kch")).doesNotContain("paired Δ");
  }
}
