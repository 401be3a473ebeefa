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
  void aSizeWithOneSideOnlyOrAMalformedLineIsAnError() {
    assertThatThrownBy(() -> NcclOverhead.parse(List.of(rounds(4096, "on", 1, 2, 3, 4, 5))))
        .hasMessageContaining("only its on rounds");
    assertThatThrownBy(() -> NcclOverhead.parse(List.of("nccl-overhead,4096,sideways,1")))
        .hasMessageContaining("malformed");
  }
}
