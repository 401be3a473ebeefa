package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's path at cluster scale (issue 47): a recording of thousands of ranks, made by {@code
 * collscope load --record}, replayed by {@code collscope demo --replay} through the embedded broker
 * and the job on its MiniCluster. The job's state is then larger than the 5 MB a memory-backed
 * checkpoint takes: no checkpoint may fail, and every communicator gets every window.
 */
class DemoReplayCheckpointsITCase {

  /** 500 communicators of 8: each of the demo's two subtasks holds about 2,000 ranks' state. */
  private static final int RANKS = 4000;

  private static final int COMMUNICATOR_SIZE = 8;
  private static final int SECONDS = 12;
  private static final long WINDOW_MS = 2000;

  private static final Pattern CHECKPOINTS =
      Pattern.compile("checkpoints: (\\d+) completed \\(the latest [^)]*\\), (\\d+) failed");

  @TempDir Path dir;

  @Test
  void aReplayOfThousandsOfRanksCheckpointsWithoutAFailureAndEveryCommunicatorGetsEveryWindow()
      throws Exception {
    Path recording = dir.resolve(RANKS + "-ranks.snapshots");
    CliRun load =
        CliRun.of(
            "load",
            "--ranks",
            Integer.toString(RANKS),
            "--communicators",
            "tp:" + COMMUNICATOR_SIZE,
            "--rate",
            "2/s",
            "--seconds",
            Integer.toString(SECONDS),
            "--record",
            recording.toString());
    assertThat(load.exitCode()).as(load.err()).isZero();

    CliRun demo =
        CliRun.of(
            "demo",
            "--replay",
            recording.toString(),
            "--window",
            WINDOW_MS / 1000 + "s",
            "--json",
            "--ui-port",
            "18381",
            "--history",
            dir.resolve("history").toString());
    System.err.print(demo.err()); // the run's checkpoint line, for the record
    assertThat(demo.exitCode()).as(demo.err()).isZero();

    Matcher m = CHECKPOINTS.matcher(demo.err());
    assertThat(m.find()).as("the demo reports its checkpoints:%n%s", demo.err()).isTrue();
    SoftAssertions soft = new SoftAssertions();
    // Checkpoints that started and failed; Flink also counts as failed the ones it triggered while
    // a task was still starting, which the demo reports apart ("not started").
    soft.assertThat(Long.parseLong(m.group(2))).as("failed checkpoints: %s", m.group()).isZero();
    soft.assertThat(Long.parseLong(m.group(1))).as("completed checkpoints").isPositive();

    // Every window any communicator got, every communicator got, once; and they follow each other.
    ObjectMapper json = new ObjectMapper();
    Map<String, List<Long>> windowEnds = new TreeMap<>();
    for (String line : demo.out().strip().lines().toList()) {
      JsonNode w = json.readTree(line);
      if (!w.path("type").asText().equals("window")) continue;
      windowEnds
          .computeIfAbsent(w.path("communicator").asText(), c -> new ArrayList<>())
          .add(Instant.parse(w.path("window_end").asText()).toEpochMilli());
      if (w.path("full_window").asBoolean()) {
        soft.assertThat(w.path("missing_ranks")).as(line).isEmpty();
      }
    }
    soft.assertThat(windowEnds).as("communicators with windows").hasSize(RANKS / COMMUNICATOR_SIZE);
    SortedSet<Long> all = new TreeSet<>();
    windowEnds.values().forEach(all::addAll);
    // 12 s of snapshots in 2 s windows: the last window or two never close (the watermark trails
    // the last snapshot), the first may be partial.
    soft.assertThat(all).as("windows").hasSizeGreaterThanOrEqualTo(4);
    if (!all.isEmpty()) {
      soft.assertThat(all.last() - all.first())
          .as("windows one after the other")
          .isEqualTo((all.size() - 1) * WINDOW_MS);
    }
    long incomplete = windowEnds.values().stream().filter(ends -> !everyOnce(ends, all)).count();
    soft.assertThat(incomplete)
        .as("communicators without every one of the %d windows exactly once", all.size())
        .isZero();
    soft.assertAll();
  }

  private static boolean everyOnce(List<Long> ends, SortedSet<Long> all) {
    return ends.size() == all.size() && new TreeSet<>(ends).equals(all);
  }
}
