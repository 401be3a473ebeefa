package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The table {@code bench gpu} prints, from synthetic rounds (no GPU needed). */
class OsarBenchTableTest {

  private static final double[] PLAIN = {10.0, 10.2, 10.1, 10.3, 10.0, 10.2, 10.1, 10.3, 10.2};
  private static final double[] NCCL = {14.4, 13.9, 14.6, 14.2, 14.3, 14.5, 14.1, 14.4, 14.0};

  private static double[] plus(double[] v, double delta) {
    return Arrays.stream(v).map(x -> x + delta).toArray();
  }

  private static final OsarBench.Rounds ROUNDS =
      new OsarBench.Rounds(PLAIN, plus(PLAIN, 1.7), plus(PLAIN, 0.05), true);

  @Test
  void theHeaderHasTheNcclColumnsOnlyWithABaseline() {
    String[] without = OsarBench.header(false).split("\n");
    String[] with = OsarBench.header(true).split("\n");
    assertThat(without[0])
        .isEqualTo(
            "| dtype | ranks | bytes/rank | plain us (min..max) | instrumented us (min..max) |"
                + " overhead ns (% of plain) | class vs plain | publish-every-1 us (min..max) |"
                + " class | busbw GB/s (plain) | graph counters |");
    assertThat(with[0])
        .contains(
            "| class | NCCL us (min..max) | instr/NCCL | class vs NCCL | busbw GB/s (plain) |"
                + " graph counters |");
    for (String[] h : new String[][] {without, with}) {
      assertThat(h[1].chars().filter(c -> c == '|').count())
          .isEqualTo(h[0].chars().filter(c -> c == '|').count());
    }
  }

  @Test
  void aRowShowsMediansSpreadsOverheadAndClasses() {
    assertThat(OsarBench.row(DType.F32, 2, 4 << 10, ROUNDS, false, null, 1.0))
        .isEqualTo(
            "| f32 | 2 | 4K | 10.20 (10.00..10.30) | 11.90 (11.70..12.00) | +1700 (+16.67%) | SLOWER"
                + " | 10.25 (10.05..10.35) | PARITY | 0.4 | exact |");
  }

  @Test
  void withABaselineTheInstrumentedKernelIsComparedWithNccl() {
    assertThat(OsarBench.row(DType.BF16, 2, 1 << 20, ROUNDS, true, NCCL, 1.0))
        .endsWith("| PARITY | 14.30 (13.90..14.60) | 0.83 | FASTER | 102.8 | exact |");
    assertThat(OsarBench.row(DType.BF16, 2, 1 << 20, ROUNDS, true, null, 1.0))
        .endsWith("| PARITY | not measured | - | - | 102.8 | exact |");
  }

  @Test
  void countersThatMissedReplaysShowAsMismatch() {
    OsarBench.Rounds r = new OsarBench.Rounds(PLAIN, PLAIN, PLAIN, false);
    assertThat(OsarBench.row(DType.F32, 8, 16 << 20, r, false, null, 1.0))
        .startsWith("| f32 | 8 | 16M |")
        .endsWith("| +0 (+0.00%) | PARITY | 10.20 (10.00..10.30) | PARITY | 2878.4 | MISMATCH |");
  }

  @Test
  void busBandwidthIsNcclTestsAlgorithmBandwidthTimesTwoNMinusOneOverN() {
    // run 105's f32 16 MiB on two H200s: 58.72 us, 286 GB/s, 60 % of NV18's nominal 477
    assertThat(OsarBench.busBandwidthGbps(16 << 20, 2, 58.72)).isCloseTo(285.7, within(0.1));
    // eight ranks move 7/4 of the bytes per rank on each rank's links, two ranks 1
    assertThat(OsarBench.busBandwidthGbps(1_000_000, 8, 1.0))
        .isCloseTo(1.75 * OsarBench.busBandwidthGbps(1_000_000, 2, 1.0), within(1e-9));
  }

  @Test
  void blocksForGivesOneBlockPerSmallUnitUpToTheSmallCountThenOnePerLargeUnitUpTo128() {
    assertThat(CudaCollective.Options.blocksFor(4 << 10, 4096, 16, 8192)).isEqualTo(1);
    assertThat(CudaCollective.Options.blocksFor(6 << 10, 4096, 16, 8192)).isEqualTo(2);
    assertThat(CudaCollective.Options.blocksFor(64 << 10, 4096, 16, 8192)).isEqualTo(16);
    assertThat(CudaCollective.Options.blocksFor(256 << 10, 4096, 16, 8192)).isEqualTo(32);
    assertThat(CudaCollective.Options.blocksFor(1 << 20, 4096, 16, 8192)).isEqualTo(128);
    assertThat(CudaCollective.Options.blocksFor(16 << 20, 4096, 16, 8192)).isEqualTo(128);
    assertThat(CudaCollective.Options.blocksFor(1, 4096, 16, 8192)).isEqualTo(1);
    // the rule main had before run 73: 16 blocks up to 512 KiB, then one per 32 KiB
    assertThat(CudaCollective.Options.blocksFor(4 << 10, 1, 16, 32 << 10)).isEqualTo(16);
    assertThat(CudaCollective.Options.blocksFor(1 << 20, 1, 16, 32 << 10)).isEqualTo(32);
  }

  @Test
  void theDefaultRuleIsRun73s() {
    assertThat(CudaCollective.Options.defaultBlocks(4 << 10)).isEqualTo(1);
    assertThat(CudaCollective.Options.defaultBlocks(64 << 10)).isEqualTo(16);
    assertThat(CudaCollective.Options.defaultBlocks(256 << 10)).isEqualTo(32);
    assertThat(CudaCollective.Options.defaultBlocks(1 << 20)).isEqualTo(128);
    assertThat(CudaCollective.Options.defaultBlocks(16 << 20)).isEqualTo(128);
  }

  @Test
  void collectivesFrom64MiBAreAccountedEveryOneWhateverTheSampling() {
    CudaCollective.Options o = CudaCollective.Options.defaults(2).withSampleEvery(16);
    assertThat(o.sampleEveryFor(4 << 10)).isEqualTo(16);
    assertThat(o.sampleEveryFor(16 << 20)).isEqualTo(16);
    assertThat(o.sampleEveryFor((64 << 20) - 1)).isEqualTo(16);
    assertThat(o.sampleEveryFor(64 << 20)).isEqualTo(1);
    assertThat(o.withSampleEvery(1).sampleEveryFor(4 << 10)).isEqualTo(1);
    // what emit's first line says of it
    assertThat(o.accountingFor(16 << 20)).isEqualTo("1 collective in 16 accounted, weighted by 16");
    assertThat(o.accountingFor(64 << 20)).isEqualTo("every collective accounted");
    assertThat(o.withInstrumented(false).accountingFor(4 << 10)).isEqualTo("not instrumented");
    assertThatThrownBy(() -> o.withSampleEvery(3))
        .isInstanceOf(io.collscope.collective.ConfigException.class)
        .hasMessageContaining("power of two");
  }

  @Test
  void bothTypesPushFrom8MiBAsRuns103To106Measured() {
    for (DType d : DType.values()) {
      assertThat(CudaCollective.Options.pushFor(d, (8 << 20) - 1)).as("%s", d).isFalse();
      assertThat(CudaCollective.Options.pushFor(d, 8 << 20)).as("%s", d).isTrue();
      assertThat(CudaCollective.Options.pushFor(d, 64 << 20)).as("%s", d).isTrue();
    }
    assertThat(CudaCollective.Options.dataPaths())
        .isEqualTo(
            "push from 8388608 bytes per rank up to 2 ranks, pull below; two-shot from 4194304"
                + " bytes per rank at 8 ranks and more");
  }

  @Test
  void theMethodStatesTheRulesUnderTheTable() {
    String m = OsarBench.method(9, 1.0, true);
    assertThat(m)
        .contains("over 9 rounds of device us per collective")
        .contains("4 replays of a graph of 50 collectives per rank")
        .contains("minEffect = 1.0% of the baseline's median")
        .contains("every min(1024, 4096 MiB / bytes) collectives")
        .contains("paired (rounds interleaved)")
        .contains("unpaired (separate programs)");
    assertThat(OsarBench.method(9, 1.0, false)).doesNotContain("unpaired");
  }
}
