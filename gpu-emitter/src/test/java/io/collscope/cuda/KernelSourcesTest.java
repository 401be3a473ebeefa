package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The committed kernel image matches its sources, and the Java layout matches the C header. */
class KernelSourcesTest {

  private static final Path CUDA = Path.of("src/main/cuda");

  @Test
  void theCommittedFatbinWasBuiltFromTheseSources() throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    for (String f :
        new String[] {"osar.cu", "osar_params.h", "counter_block.h", "memory_model.h"}) {
      sha.update(Files.readAllBytes(CUDA.resolve(f)));
    }
    String recorded =
        Files.readString(Path.of("src/main/resources/collscope/cuda/osar.fatbin.sha256")).trim();
    assertThat(HexFormat.of().formatHex(sha.digest()))
        .as(
            "osar.fatbin is stale: run gpu-emitter/src/main/cuda/build-fatbin.sh with nvcc and commit it")
        .isEqualTo(recorded);
    assertThat(OsarModule.fatbin().length).isGreaterThan(10_000);
  }

  @Test
  void theCommittedGemmArFatbinWasBuiltFromTheseSources() throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    for (String f :
        new String[] {"gemm_ar.cu", "gemm_ar_params.h", "counter_block.h", "memory_model.h"}) {
      sha.update(Files.readAllBytes(CUDA.resolve(f)));
    }
    String recorded =
        Files.readString(Path.of("src/main/resources/collscope/cuda/gemm_ar.fatbin.sha256")).trim();
    assertThat(HexFormat.of().formatHex(sha.digest()))
        .as(
            "gemm_ar.fatbin is stale: run gpu-emitter/src/main/cuda/build-fatbin.sh with nvcc and commit it")
        .isEqualTo(recorded);
    assertThat(GemmArModule.fatbin().length).isGreaterThan(10_000);
  }

  @Test
  void gemmArLayoutMirrorsTheHeader() throws Exception {
    Map<String, Long> header = new HashMap<>();
    Matcher m =
        Pattern.compile("#define\\s+(\\w+)\\s+(\\d+)")
            .matcher(Files.readString(CUDA.resolve("gemm_ar_params.h")));
    while (m.find()) header.put(m.group(1), Long.parseLong(m.group(2)));
    int checked = 0;
    for (Field f : GemmArLayout.class.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers()) || f.getType() != int.class) continue;
      String name = f.getName();
      if (name.equals("SMEM_BYTES")
          || name.equals("TILE_BYTES")
          || name.equals("GT_WORDS")
          || name.equals("GS_WORDS")) continue;
      String cName = name.startsWith("G") ? name : "GA_" + name;
      f.setAccessible(true);
      assertThat(header).as(cName).containsKey(cName);
      assertThat((long) f.getInt(null)).as(cName).isEqualTo(header.get(cName));
      checked++;
    }
    assertThat(checked).isGreaterThan(30);
  }

  /** Every kernel the host looks up by name is one osar.cu defines (a GPU would find out late). */
  @Test
  void everyCollectiveKernelNameIsAKernelOfTheSource() throws Exception {
    String src = Files.readString(CUDA.resolve("osar.cu"));
    int checked = 0;
    for (AllReduceAlgorithm a : AllReduceAlgorithm.values()) {
      for (DType d : DType.values()) {
        for (boolean instrumented : new boolean[] {true, false}) {
          String name = OsarModule.kernelName(d, instrumented, a);
          assertThat(src).as(name).contains(" " + name + "(const u64* P) {");
          checked++;
        }
      }
    }
    assertThat(checked).isEqualTo(12);
    assertThat(OsarModule.kernelName(DType.BF16, false, AllReduceAlgorithm.TWO_SHOT))
        .isEqualTo("osar_bf16_two_plain");
  }

  @Test
  void osarLayoutMirrorsTheHeader() throws Exception {
    Map<String, Long> header = new HashMap<>();
    Matcher m =
        Pattern.compile("#define\\s+(\\w+)\\s+(\\d+)")
            .matcher(Files.readString(CUDA.resolve("osar_params.h")));
    while (m.find()) header.put(m.group(1), Long.parseLong(m.group(2)));
    int checked = 0;
    for (Field f : OsarLayout.class.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers()) || f.getType() != int.class) continue;
      String name = f.getName();
      String cName =
          name.startsWith("SYNC_")
              ? null
              : name.equals("MAX_RANKS")
                      || name.equals("ACK_HISTORY")
                      || name.equals("HIST_MAX")
                      || name.equals("MAX_FAULTS")
                      || name.equals("PIECE_BYTES")
                      || name.equals("RECORDS")
                  ? "OSAR_" + name
                  : name;
      if (cName == null) continue;
      f.setAccessible(true);
      assertThat(header).as(cName).containsKey(cName);
      assertThat((long) f.getInt(null)).as(cName).isEqualTo(header.get(cName));
      checked++;
    }
    assertThat(checked).isGreaterThan(25);
  }
}
