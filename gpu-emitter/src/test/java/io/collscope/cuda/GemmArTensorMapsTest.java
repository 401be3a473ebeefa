package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The tensor maps' arguments as the TMA programs read them; the driver call needs a GPU. */
class GemmArTensorMapsTest {

  @Test
  void anOperandIsKInnermostRowsOuterOneStagePerBox() {
    GemmArTensorMaps.Args a = GemmArTensorMaps.operand(0x7f00_0000_0000L, 16384, 4096);
    // cuTensorMapEncodeTiled: dimensions innermost first, strides of the outer dimensions only
    assertThat(a.globalDim()).containsExactly(4096L, 16384L);
    assertThat(a.globalStrides()).containsExactly(4096L);
    // one stage of load_stage: 64 bytes of K by 128 rows, i.e. what the 64-byte swizzle spans
    assertThat(a.boxDim()).containsExactly(GemmArLayout.BK, GemmArLayout.BM);
    assertThat(GemmArLayout.BK).isEqualTo(64);
    assertThat(GemmArTensorMaps.describe(a)).isEqualTo("16384 x 4096 bytes, box 128 x 64");
  }

  @Test
  void operandsTheMapCannotTileAreRefused() {
    assertThatThrownBy(() -> GemmArTensorMaps.operand(0x1008, 128, 64))
        .hasMessageContaining("aligned");
    assertThatThrownBy(() -> GemmArTensorMaps.operand(0x1000, 100, 64))
        .hasMessageContaining("not whole 128 x 64 tiles");
    assertThatThrownBy(() -> GemmArTensorMaps.operand(0x1000, 128, 96))
        .hasMessageContaining("not whole");
  }
}
