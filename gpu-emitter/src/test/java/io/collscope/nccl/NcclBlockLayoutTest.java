package io.collscope.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code collscope_block.h}, which the plugin writes its file through, defines the extension layout
 * {@link NcclBlockFile} reads: every numeric constant on both sides, every value equal.
 */
class NcclBlockLayoutTest {

  static Map<String, Long> header() throws Exception {
    Map<String, Long> h = new LinkedHashMap<>();
    Matcher m =
        Pattern.compile("(?m)^#define\\s+(CSN_\\w+)\\s+(\\d+)\\b")
            .matcher(Files.readString(Path.of("src/main/c/nccl-profiler/collscope_block.h")));
    while (m.find()) h.put(m.group(1), Long.parseLong(m.group(2)));
    return h;
  }

  @Test
  void theHeaderDefinesExactlyTheJavaLayout() throws Exception {
    assertThat(header()).containsExactlyInAnyOrderEntriesOf(NcclBlockFile.headerConstants());
  }

  @Test
  void theDerivedOffsetsAgreeToo() throws Exception {
    String h = Files.readString(Path.of("src/main/c/nccl-profiler/collscope_block.h"));
    assertThat(h)
        .contains("#define CSN_X_FUNCS (CSN_X_STATS + 8 * 16)")
        .contains("#define CSN_X_HWM (CSN_X_FUNCS + CSN_N_FUNCS * CSN_FUNC_STRIDE)")
        .contains("#define CSN_X_RING (CSN_X_HWM + 8 * CSN_N_FUNCS)")
        .contains("#define CSN_X_NET CSN_EXT_SIZE");
    assertThat(NcclBlockFile.X_NET).isEqualTo(NcclBlockFile.EXT_SIZE);
    assertThat(NcclBlockFile.X_FUNCS).isEqualTo(NcclBlockFile.X_STATS + 8 * 16);
    assertThat(NcclBlockFile.X_RING)
        .isEqualTo(
            NcclBlockFile.X_FUNCS
                + NcclBlockFile.N_FUNCS * NcclBlockFile.FUNC_STRIDE
                + 8 * NcclBlockFile.N_FUNCS);
  }
}
