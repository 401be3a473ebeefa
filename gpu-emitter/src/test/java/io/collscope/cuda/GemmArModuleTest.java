package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The program names the host asks the module for, against the kernel image; no GPU needed. */
class GemmArModuleTest {

  @Test
  void everyProgramOfEveryMainLoopIsInTheImage() {
    // the ELF symbol names are stored uncompressed in the fatbin: a name the host would ask for
    // that the image lacks is a cuModuleGetFunction failure on the GPU, caught here instead
    String image = new String(GemmArModule.fatbin(), StandardCharsets.ISO_8859_1);
    int checked = 0;
    for (String loop : new String[] {"mma", "wgmma", "wgmma-tma"})
      for (boolean throttled : new boolean[] {false, true})
        for (boolean instrumented : new boolean[] {false, true}) {
          String name = GemmArModule.name(loop, throttled, instrumented);
          assertThat(image).as(loop).contains("\0" + name + "\0");
          checked++;
        }
    assertThat(checked).isEqualTo(12);
  }

  @Test
  void namesSayTheMainLoopAndTheLoads() {
    assertThat(GemmArModule.name("mma", true, false)).isEqualTo("gemm_ar_fp8_bf16_throttled_plain");
    assertThat(GemmArModule.name("wgmma", false, true)).isEqualTo("gemm_ar_fp8_bf16_wg");
    assertThat(GemmArModule.name("wgmma-tma", false, false))
        .isEqualTo("gemm_ar_fp8_bf16_plain_wg_tma");
    assertThat(GemmArModule.tma("wgmma-tma")).isTrue();
    assertThat(GemmArModule.tma("wgmma")).isFalse();
    assertThat(GemmArModule.wgmma("wgmma-tma")).isTrue();
    assertThatThrownBy(() -> GemmArModule.name("tma", false, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mma, wgmma or wgmma-tma");
  }
}
