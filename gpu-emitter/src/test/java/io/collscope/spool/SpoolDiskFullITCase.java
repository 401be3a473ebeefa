package io.collscope.spool;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The spool on a disk that really fills up: {@link SpoolDiskFullChild} runs in a private mount
 * namespace ({@code unshare}, a test tool of dev/setup-test-tools.sh) on a 256 KiB tmpfs of its
 * own. The append that meets ENOSPC has written part of its frame; the spool must cut it back, so
 * that nothing corrupt is left behind, appends resume on a frame boundary once space is freed, and
 * every record an append acknowledged is delivered once, in order — also after a restart.
 */
class SpoolDiskFullITCase {

  @TempDir Path tmp;

  @Test
  void aWriteThatRunsOutOfSpaceMidFrameLeavesNoCorruptFrameAndLosesNothingAcknowledged()
      throws Exception {
    Path mnt = Files.createDirectories(tmp.resolve("disk"));
    String script = "mount -t tmpfs -o size=256k none \"$1\" || exit 90; shift; exec \"$@\"";
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getenv().getOrDefault("COLLSCOPE_UNSHARE_BIN", "unshare"));
    // root mounts in a mount namespace of its own; anyone else in a user namespace as well
    if (!"root".equals(System.getProperty("user.name"))) {
      cmd.addAll(List.of("--user", "--map-root-user"));
    }
    cmd.addAll(List.of("--mount", "sh", "-c", script, "sh", mnt.toString()));
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx64m", "-cp", System.getProperty("java.class.path")));
    cmd.add(SpoolDiskFullChild.class.getName());
    cmd.add(mnt.resolve("spool").toString());
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    System.out.println(out);
    assertThat(p.exitValue()).as("a private tmpfs could not be mounted:\n" + out).isNotEqualTo(90);
    assertThat(p.exitValue()).as(out).isZero();
    Map<String, String> v = new TreeMap<>();
    for (String line : out.split("\n")) {
      int sp = line.indexOf(' ');
      if (sp > 0) v.put(line.substring(0, sp), line.substring(sp + 1).trim());
    }
    assertThat(Integer.parseInt(v.get("appendErrors"))).as("the disk filled up").isPositive();
    assertThat(v.get("firstError")).contains("No space left on device");
    assertThat(v.get("appendErrorsAfterSpaceFreed")).as("appends resume").isEqualTo("0");
    assertThat(Integer.parseInt(v.get("acked"))).isPositive();
    assertThat(v.get("delivered")).as(out).isEqualTo(v.get("acked"));
    assertThat(v.get("lost")).as("acknowledged records lost").isEqualTo("0");
    assertThat(v.get("duplicated")).isEqualTo("0");
    assertThat(v.get("inOrder")).isEqualTo("true");
    assertThat(v.get("tornWhileRunning")).as("a corrupt frame was left behind").isEqualTo("0");
    assertThat(v.get("tornAfterReopen")).as("a corrupt frame was left behind").isEqualTo("0");
    assertThat(v.get("pendingAtClose")).isEqualTo("0");
    // docs/RELIABILITY.md's row (dev/chaos/run-all collects it).
    Path row = Path.of("target", "reliability", "SpoolDiskFullITCase.tsv");
    Files.createDirectories(row.getParent());
    Files.writeString(
        row,
        String.join(
                "\t",
                "disk full under the spool: an append fails mid-frame (ENOSPC), space is freed by"
                    + " delivery, appends go on, the spool is reopened",
                "`SpoolDiskFullITCase` (a 256 KiB tmpfs in a private mount namespace, 16 KiB"
                    + " segments)",
                v.get("acked")
                    + " records acknowledged ("
                    + v.get("appendErrors")
                    + " appends refused with ENOSPC, not acknowledged)",
                v.get("delivered")
                    + " delivered in order; corrupt frames left: "
                    + v.get("tornWhileRunning")
                    + " while running, "
                    + v.get("tornAfterReopen")
                    + " after reopening",
                v.get("lost"),
                v.get("duplicated"),
                "appends resume once space is freed ("
                    + v.get("appendErrorsAfterSpaceFreed")
                    + " refused after)")
            + "\n");
  }
}
