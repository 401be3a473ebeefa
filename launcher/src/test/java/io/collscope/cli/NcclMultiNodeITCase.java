package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.nccl.NcclTestPrograms;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NCCL communicators across two "nodes" on one machine, end to end: the real profiler plugin in
 * processes that send it NCCL's events (the C stand-in; one process a node, its own {@code
 * COLLSCOPE_SHM_DIR}, nNodes 2, 4 ranks of which 2 a node), one {@code collscope emit --source nccl
 * --node ...} sidecar a node, and the two recordings replayed through the demo (Kafka broker, Flink
 * job). The plugin joins lateness only within a node; the job joins the ranks' timed kernel lengths
 * across the nodes. Four communicators side by side: rank 2 (node 1) 2 ms late at each collective,
 * the whole of node 1 2 ms late, the network link from rank 1 (node 0) to rank 2 slow (its proxy
 * steps, named from the senders' and receivers' network waits), and a clean one.
 */
class NcclMultiNodeITCase {

  private static final int COLLECTIVES = 24_000;
  private static final int PACE_US = 200;

  /** slowLink: COLLSCOPE_DRIVER_SLOW_LINK (FROM:TO:NS, "" for none). */
  record Scenario(
      String name,
      String commHex,
      String lateRanks,
      long lateNs,
      String slowLink,
      String expected) {}

  private static final List<Scenario> SCENARIOS =
      List.of(
          new Scenario("slow rank 2 on node 1", "5a0e00002", "2", 2_000_000, "", "SLOW_RANK:2"),
          new Scenario(
              "slow node 1 (ranks 2, 3)", "5a0e00003", "2,3", 2_000_000, "", "SLOW_NODE:node-1"),
          // the link from rank 1 (node 0) to rank 2 (node 1): 100 us more per network step
          new Scenario("slow link 1->2", "5a0e00005", "", 0, "1:2:100000", "SLOW_LINK:2"),
          new Scenario("clean", "5a0e00004", "", 0, "", "NONE"));

  @TempDir Path dir;

  @Test
  void stragglersAcrossTwoNodesAreNamedFromTheJobsJoinAndACleanRunHasNoFinding() throws Exception {
    Path driver =
        NcclTestPrograms.compile("nccl_profiler_driver", "nccl_profiler_driver.c", "-ldl");
    Path plugin = NcclTestPrograms.plugin();
    List<Path> recordings = new ArrayList<>();
    List<CompletableFuture<CliRun>> sidecars = new ArrayList<>();
    for (int node = 0; node < 2; node++) {
      Path shm = dir.resolve("shm-node-" + node);
      Path rec = dir.resolve("node-" + node + ".snapshots");
      recordings.add(rec);
      String[] args = {
        "emit",
        "--source",
        "nccl",
        "--shm",
        shm.toString(),
        "--node",
        "node-" + node,
        "--record",
        rec.toString(),
        "--seconds",
        "14",
        "--interval",
        "250ms"
      };
      sidecars.add(CompletableFuture.supplyAsync(() -> CliRun.of(args)));
    }
    Thread.sleep(1500); // the sidecars are up before the ranks
    List<Process> ranks = new ArrayList<>();
    for (Scenario s : SCENARIOS) {
      for (int node = 0; node < 2; node++) {
        ProcessBuilder pb =
            new ProcessBuilder(
                driver.toString(),
                plugin.toString(),
                "6",
                "2",
                Integer.toString(COLLECTIVES),
                "-1",
                Long.toString(s.lateNs()));
        Map<String, String> env = pb.environment();
        env.put("COLLSCOPE_SHM_DIR", dir.resolve("shm-node-" + node).toString());
        env.put("COLLSCOPE_NCCL_NO_THREAD", "1");
        env.put("COLLSCOPE_DRIVER_COMM", s.commHex());
        env.put("COLLSCOPE_DRIVER_WORLD", "4");
        env.put("COLLSCOPE_DRIVER_FIRST_RANK", Integer.toString(2 * node));
        env.put("COLLSCOPE_DRIVER_NODES", "2");
        env.put("COLLSCOPE_DRIVER_LATE_RANKS", s.lateRanks());
        env.put("COLLSCOPE_DRIVER_JITTER_NS", "3000");
        env.put("COLLSCOPE_DRIVER_PACE_US", Integer.toString(PACE_US));
        if (!s.slowLink().isEmpty()) env.put("COLLSCOPE_DRIVER_SLOW_LINK", s.slowLink());
        ranks.add(pb.redirectErrorStream(true).start());
      }
    }
    for (Process p : ranks) {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor()).as(out).isZero();
      assertThat(out).contains("done " + COLLECTIVES + " collectives on 2 ranks");
    }
    for (CompletableFuture<CliRun> f : sidecars) {
      CliRun r = f.get();
      assertThat(r.exitCode()).as(r.err()).isZero();
      assertThat(r.err()).contains("of 8 NCCL communicator instances, 0 failed deliveries");
    }

    List<String> demo = new ArrayList<>(List.of("demo", "--replay"));
    for (Path r : recordings) demo.add(r.toString());
    demo.addAll(
        List.of(
            "--window",
            "1s",
            "--interval",
            "250ms",
            "--json",
            "--ui-port",
            "18183",
            "--history",
            dir.resolve("history").toString()));
    CliRun r = CliRun.of(demo.toArray(String[]::new));
    assertThat(r.exitCode()).as(r.err()).isZero();

    // Per communicator: its full windows' verdicts, the first one apart (the ranks joined mid-way).
    Pattern comm = Pattern.compile("\"communicator\":\"nccl-0*([0-9a-f]+)\"");
    Map<String, List<String>> verdicts = new LinkedHashMap<>();
    for (String line : r.out().strip().lines().toList()) {
      if (!line.startsWith("{\"type\":\"window\"") || !line.contains("\"full_window\":true")) {
        continue;
      }
      Matcher m = comm.matcher(line);
      assertThat(m.find()).as(line).isTrue();
      verdicts.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(verdictOf(line));
    }
    System.out.println(
        "NcclMultiNodeITCase: 2 nodes x 2 ranks, 1 s windows (full windows after the first)");
    System.out.println("| communicator | expected | full windows | as expected | verdicts |");
    Map<Scenario, Long> right = new LinkedHashMap<>();
    for (Scenario s : SCENARIOS) {
      List<String> v = verdicts.getOrDefault(s.commHex(), List.of());
      List<String> judged = v.size() > 1 ? v.subList(1, v.size()) : List.of();
      long ok = judged.stream().filter(s.expected()::equals).count();
      right.put(s, ok);
      System.out.printf(
          "| %s | %s | %d | %d | %s |%n", s.name(), s.expected(), judged.size(), ok, judged);
    }
    for (Scenario s : SCENARIOS) {
      List<String> judged = verdicts.getOrDefault(s.commHex(), List.of());
      assertThat(judged.size()).as(s.name() + ": " + r.out()).isGreaterThanOrEqualTo(4);
      assertThat(right.get(s)).as(s.name() + ": " + judged).isEqualTo(judged.size() - 1L);
    }
  }

  /** The window line's verdict as KIND:culprit ("NONE" without findings). */
  private static String verdictOf(String line) {
    if (line.contains("\"findings\":[]")) return "NONE";
    Matcher kind =
        Pattern.compile("\"findings\":\\[\\{\"kind\":\"([A-Z_]+)\",\"rank\":(-?\\d+)")
            .matcher(line);
    if (!kind.find()) return "?";
    if (kind.group(1).equals("SLOW_NODE")) {
      Matcher node = Pattern.compile("\"node\":\"([^\"]*)\"").matcher(line);
      return "SLOW_NODE:"
          + (node.find() ? node.group(1) : "?")
          + (line.split("\"kind\":").length > 2 ? "+" : "");
    }
    return kind.group(1) + ":" + kind.group(2) + (line.split("\"kind\":").length > 2 ? "+" : "");
  }
}
