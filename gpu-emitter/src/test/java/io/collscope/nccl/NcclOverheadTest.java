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
}
