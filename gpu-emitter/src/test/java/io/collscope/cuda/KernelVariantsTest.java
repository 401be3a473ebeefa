package io.collscope.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bisect images and the mutants of {@code dev/gpu-bisect/make-variants.py} still apply to
 * {@code osar.cu}. The script edits the kernel's text, so a change to the kernel can leave it
 * behind (run 157's out-of-line two-shot loops did), and the GPU checks that need it — the sum
 * tests must fail on the stale-slot and stale-gather mutants — would find out only on a GPU.
 * Compiling the variants needs nvcc; this checks the text, which is where the script breaks.
 */
class KernelVariantsTest {

  private static final String PYTHON =
      System.getenv().getOrDefault("COLLSCOPE_PYTHON_BIN", "python3");
  private static final Path SCRIPT = Path.of("../dev/gpu-bisect/make-variants.py");
  private static final Path KERNEL = Path.of("src/main/cuda/osar.cu");

  @Test
  void everySwitchAndMutantAppliesToTheCommittedKernel(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("osar_variants.cu");
    Run run = makeVariants(KERNEL, out);
    assertThat(run.exit).as(run.output).isZero();
    String v = Files.readString(out);
    // every switch defaults to 0, so the variants' source is the kernel until one is set
    for (String sw :
        List.of("OMIT_TOTALS", "OMIT_ACCOUNT", "MUTANT_STALE_SLOT", "MUTANT_STALE_GATHER")) {
      assertThat(v).contains("#ifndef " + sw + "\n#define " + sw + " 0\n#endif\n");
    }
    // the two-shot mutants act where its bytes move: at the calls of its out-of-line loops
    assertThat(v)
        .contains(
            "if (!(MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots))\n"
                + "      two_shot_scatter<T>(");
    assertThat(v).contains("if (!s_abort && MUTANT_STALE_GATHER && rank == 1");
    // the pipelined push path's: rank 1 skips every peer's stores, of whole and partial units
    assertThat(v)
        .contains(
            "      if (MUTANT_STALE_SLOT && rank == 1 && seq > (u64)nslots) continue;\n"
                + "      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg) + unit * UNIT_VECS + lane;");
    // the sample's record, the one billing path of every instrumented kernel since run 191
    assertThat(v)
        .contains(
            "!OMIT_TOTALS && !OMIT_ACCOUNT && sampled && s_publisher && !s_abort) store_record<PUSH>");
  }

  @Test
  void aKernelTheScriptNoLongerMatchesFailsLoudly(@TempDir Path tmp) throws Exception {
    // the kernel with the two-shot's scatter call written differently, as a refactor would
    String kernel =
        Files.readString(KERNEL)
            .replace(
                "      two_shot_scatter<T>(P, rank, world, blocks, elems, my_seg, term);",
                "      two_shot_scatter<T>(P, rank, world, blocks, elems, my_seg, /*term*/ term);");
    Path drifted = tmp.resolve("osar.cu");
    Files.writeString(drifted, kernel);
    Run run = makeVariants(drifted, tmp.resolve("out.cu"));
    assertThat(run.exit).isNotZero();
    assertThat(run.output).contains("make-variants: expected 1 match(es)").contains("found 0");
    assertThat(tmp.resolve("out.cu")).doesNotExist();
  }

  private record Run(int exit, String output) {}

  private static Run makeVariants(Path kernel, Path out) throws Exception {
    Process p =
        new ProcessBuilder(PYTHON, SCRIPT.toString(), kernel.toString(), out.toString())
            .redirectErrorStream(true)
            .start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Run(p.waitFor(), output);
  }
}
