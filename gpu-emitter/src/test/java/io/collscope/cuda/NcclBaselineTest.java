package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Reading dev/nccl_allreduce_bench.py's output as it comes out of torchrun. */
class NcclBaselineTest {

  private static final List<String> LOG =
      List.of(
          "W1129 12:00:00.000000 123 torch/distributed/run.py:792] Setting OMP_NUM_THREADS ...",
          "NCCL 2.28.9, torch 2.11.0+cu130, 2 ranks, NCCL_NVLS_ENABLE=0",
          "| dtype | ranks | bytes/rank | NCCL us (median) | min..max of 9 rounds |",
          "|---|---:|---:|---:|---|",
          "| f32 | 2 | 4K | 14.38 | 13.83..14.60 |",
          "nccl-rounds,f32,2,4096,14.381,13.832,14.600,14.2,14.4,14.3,14.5,14.1,14.35",
          "| bf16 | 2 | 1M | 22.27 | 22.01..22.90 |",
          "nccl-rounds,bf16,2,1048576,22.27,22.01,22.9,22.3,22.2,22.4,22.1,22.5,22.6");

  @Test
  void readsEveryRoundOfEveryRowAndTheHeader() {
    NcclBaseline b = NcclBaseline.parse(LOG, "bench-nccl.log");
    assertThat(b.rounds(DType.F32, 2, 4096))
        .containsExactly(14.381, 13.832, 14.600, 14.2, 14.4, 14.3, 14.5, 14.1, 14.35);
    assertThat(b.rounds(DType.BF16, 2, 1 << 20)).hasSize(9).startsWith(22.27);
    assertThat(b.header()).startsWith("NCCL 2.28.9, torch");
  }

  @Test
  void aShapeNotMeasuredHasNoRounds() {
    NcclBaseline b = NcclBaseline.parse(LOG, "bench-nccl.log");
    assertThat(b.rounds(DType.F32, 4, 4096)).isNull();
    assertThat(b.rounds(DType.BF16, 2, 4096)).isNull();
  }

  @Test
  void badRowsAreRefusedWithTheirLine() {
    assertThatThrownBy(
            () -> NcclBaseline.parse(List.of("x", "nccl-rounds,f32,2,4096,14.3,oops"), "f.log"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("f.log:2: ");
    assertThatThrownBy(() -> NcclBaseline.parse(List.of("nccl-rounds,f16,2,4096,14.3"), "f.log"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("f.log:1: ");
    assertThatThrownBy(() -> NcclBaseline.parse(List.of("nccl-rounds,f32,2,4096"), "f.log"))
        .hasMessageContaining("expected nccl-rounds,DTYPE,RANKS,BYTES,US");
    assertThatThrownBy(
            () ->
                NcclBaseline.parse(
                    List.of("nccl-rounds,f32,2,4096,14.3", "nccl-rounds,f32,2,4096,14.4"), "f.log"))
        .hasMessageContaining("f.log:2: a second row for f32,2,4096");
  }

  @Test
  void aFileWithoutRowsIsRefused() {
    assertThatThrownBy(() -> NcclBaseline.parse(LOG.subList(0, 5), "old.log"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("old.log: no nccl-rounds, lines");
  }
}
