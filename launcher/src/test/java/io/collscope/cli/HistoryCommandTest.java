package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.history.HistoryFixtures;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The history commands over six hours of a generated 32-rank cluster (communicators tp000..tp003),
 * whose injected episodes give known answers: rank 5 of tp003 slow from 20 % to 24 % of the span,
 * rank 1 of tp003 slow in a tenth of all windows, link 3->6 of tp001, a silent rank 2 of tp000, and
 * from the middle on tp002 20 % slower and tp001 20 % faster.
 */
class HistoryCommandTest {

  private static final Instant END = Instant.parse("2026-11-30T06:00:00Z");
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir static Path history;

  @BeforeAll
  static void generate() throws Exception {
    HistoryFixtures.generate(history, 32, Duration.ofHours(6), END);
  }

  private static CliRun run(String... args) {
    List<String> a = new ArrayList<>(List.of(args));
    a.addAll(List.of("--history", history.toString()));
    if (!a.get(0).equals("query")) a.addAll(List.of("--now", END.toString()));
    return CliRun.of(a.toArray(String[]::new));
  }

  private static List<JsonNode> json(CliRun r) throws Exception {
    assertThat(r.exitCode()).as(r.err()).isZero();
    List<JsonNode> rows = new ArrayList<>();
    for (String l : r.out().strip().lines().toList()) rows.add(JSON.readTree(l));
    return rows;
  }

  private static JsonNode culprit(List<JsonNode> rows, String communicator, String culprit) {
    return rows.stream()
        .filter(
            n ->
                n.get("communicator").asText().equals(communicator)
                    && n.get("culprit").asText().equals(culprit))
        .findFirst()
        .orElseThrow(() -> new AssertionError(communicator + " " + culprit + " not in " + rows));
  }

  @Test
  void compactRunsOnItsDefaults() {
    // --older-than's default (2h) once failed to parse: the command never ran without the flag
    CliRun r = run("history", "compact", "--dry-run");
    assertThat(r.exitCode()).as(r.err()).isZero();
    assertThat(r.err()).contains("collscope history compact:");
  }

  @Test
  void aHistoryFolderThatIsNotThereIsAUsageErrorNotAnEmptyAnswer() {
    // one message from every command that reads the history
    String missing = history.resolve("no-such-history").toString();
    for (List<String> args :
        List.of(
            List.of("history", "culprits"),
            List.of("history", "latency", "--communicator", "c/j/comm0"),
            List.of("history", "compact", "--dry-run"),
            List.of("query", "SELECT 1"),
            List.of("baselines"),
            List.of("report"))) {
      List<String> a = new ArrayList<>(args);
      a.addAll(List.of("--history", missing));
      CliRun r = CliRun.of(a.toArray(String[]::new));
      assertThat(r.exitCode()).as("%s: %s", args, r.err()).isEqualTo(2);
      assertThat(r.err().strip().lines())
          .as("%s", args)
          .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
          .contains("--history " + missing + " is not a directory");
      assertThat(r.out()).as("%s", args).isEmpty();
    }
  }

  @Test
  void culpritsNamesEachInjectedCulpritWithItsWindowsAndCost() throws Exception {
    List<JsonNode> rows = json(run("history", "culprits", "--since", "7d", "--json"));
    // 2160 windows; rank 5 slow in those at 20 % .. 24 % of the span: indices 432..518.
    JsonNode slow = culprit(rows, "tp003", "5");
    assertThat(slow.get("kind").asText()).isEqualTo("SLOW_RANK");
    assertThat(slow.get("cause").asText()).isEqualTo("ARRIVED_LATE");
    assertThat(slow.get("windows").asLong()).isEqualTo(87);
    assertThat(slow.get("mean_excess_us").asDouble()).isBetween(290.0, 310.0);
    // about 300 us × 2000 calls × 7 waiting ranks per window
    assertThat(slow.get("wait_cost_rank_s").asDouble() / 87).isBetween(3.9, 4.5);
    JsonNode flaky = culprit(rows, "tp003", "1");
    assertThat(flaky.get("cause").asText()).isEqualTo("RING_FULL");
    assertThat(flaky.get("pct_windows").asDouble()).isBetween(8.0, 12.0);
    assertThat(culprit(rows, "tp001", "3->6").get("kind").asText()).isEqualTo("SLOW_LINK");
    assertThat(culprit(rows, "tp000", "2").get("kind").asText()).isEqualTo("SILENT_RANK");
    assertThat(culprit(rows, "tp002", "all").get("kind").asText()).isEqualTo("UNIFORM_SLOWDOWN");
    // most costly first
    List<Double> costs = rows.stream().map(n -> n.get("wait_cost_rank_s").asDouble()).toList();
    assertThat(costs).isSortedAccordingTo((a, b) -> Double.compare(b, a));
  }

  @Test
  void culpritsSinceOnlyLooksBackThatFar() throws Exception {
    // The last hour holds only tp000's slow link 7->0 (93 % .. 95 %) and the flaky rank.
    List<JsonNode> rows = json(run("history", "culprits", "--since", "1h", "--json"));
    assertThat(
            rows.stream()
                .map(n -> n.get("communicator").asText() + " " + n.get("culprit").asText()))
        .containsExactlyInAnyOrder("tp000 7->0", "tp003 1");
  }

  @Test
  void aHistoryWithoutAFindingsTableGetsTheSameCulpritsFromItsAttributions(@TempDir Path old)
      throws Exception {
    // A history written before the job wrote findings: the same files but that folder.
    for (String table : List.of("rank_windows", "attributions", "alerts")) {
      copyTree(history.resolve(table), old.resolve(table));
    }
    CliRun fromFindings = run("history", "culprits", "--since", "7d", "--json", "--limit", "100");
    CliRun fromAttributions =
        CliRun.of(
            "history",
            "culprits",
            "--since",
            "7d",
            "--json",
            "--limit",
            "100",
            "--history",
            old.toString(),
            "--now",
            END.toString());
    assertThat(json(fromFindings)).hasSizeGreaterThan(4);
    assertThat(fromAttributions.out()).isEqualTo(fromFindings.out());
    // and the view's columns are the table's, so any SQL over findings reads both alike
    String sql = "SELECT * FROM findings ORDER BY communicator, window_end, finding_index";
    CliRun rowsFromFiles = run("query", "--csv", sql);
    CliRun rowsDerived = CliRun.of("query", "--csv", sql, "--history", old.toString());
    assertThat(rowsDerived.exitCode()).as(rowsDerived.err()).isZero();
    assertThat(rowsDerived.out()).isEqualTo(rowsFromFiles.out());
  }

  private static void copyTree(Path from, Path to) throws java.io.IOException {
    try (var s = java.nio.file.Files.walk(from)) {
      for (Path p : s.toList()) {
        Path t = to.resolve(from.relativize(p).toString());
        if (java.nio.file.Files.isDirectory(p)) java.nio.file.Files.createDirectories(t);
        else java.nio.file.Files.copy(p, t);
      }
    }
  }

  @Test
  void theTableIsAlignedAndCsvIsQuotedWithAHeader() {
    CliRun table = run("history", "culprits", "--limit", "3");
    assertThat(table.exitCode()).as(table.err()).isZero();
    List<String> lines = table.out().strip().lines().toList();
    assertThat(lines.get(0)).startsWith("cluster  job    communicator  kind");
    assertThat(lines).hasSize(5).last().isEqualTo("(3 rows)");
    // right-aligned numbers: every row's line ends at the same column as the header's
    assertThat(lines.subList(0, 4).stream().map(String::length).distinct()).hasSize(1);

    CliRun csv = run("query", "--csv", "SELECT 'a,b' AS x, 'say \"hi\"' AS y, NULL AS z, 1.5 AS n");
    assertThat(csv.exitCode()).as(csv.err()).isZero();
    assertThat(csv.out()).isEqualTo("x,y,z,n\n\"a,b\",\"say \"\"hi\"\"\",,1.5\n");
  }

  @Test
  void latencyByRankHasEveryRankOfEveryWindowAndByCommunicatorOneRowPerWindow() throws Exception {
    List<JsonNode> byRank =
        json(run("history", "latency", "--communicator", "tp001", "--since", "1h", "--json"));
    assertThat(byRank).hasSize(361 * 8);
    assertThat(byRank).allMatch(n -> n.get("p99_us").asDouble() >= n.get("p50_us").asDouble());
    assertThat(byRank.get(0).get("window_end").asText()).isEqualTo("2026-11-30T05:00:00Z");

    // The silent rank's half hour (80 % .. 80.3 % of the span): 7 ranks report.
    List<JsonNode> silent =
        json(
            run(
                "history",
                "latency",
                "--communicator",
                "gen/train/tp000",
                "--by",
                "communicator",
                "--since",
                "2h",
                "--json"));
    assertThat(silent).hasSize(721);
    assertThat(silent.stream().filter(n -> n.get("ranks").asInt() == 7).count()).isEqualTo(7);
    assertThat(silent.stream().filter(n -> n.get("ranks").asInt() == 8).count()).isEqualTo(714);
  }

  @Test
  void compareFindsTheLastingChangesAndParityElsewhere() throws Exception {
    List<JsonNode> rows =
        json(
            run(
                "history",
                "compare",
                "--before",
                "2026-11-30T00:00Z/2026-11-30T02:00Z",
                "--after",
                "-2h/now",
                "--json"));
    assertThat(
            rows.stream()
                .map(n -> n.get("communicator").asText() + " " + n.get("classification").asText()))
        .containsExactlyInAnyOrder("tp002 SLOWER", "tp001 FASTER", "tp000 PARITY", "tp003 PARITY")
        // changes first
        .startsWith("tp002 SLOWER", "tp001 FASTER");
    JsonNode slower = rows.get(0);
    assertThat(slower.get("change_pct").asDouble()).isBetween(18.0, 22.0);
    // the span starts at 00:00: windows ending 00:00:10 .. 01:59:50
    assertThat(slower.get("before_windows").asInt()).isEqualTo(719);
  }

  @Test
  void comparingWithAPeriodOfFewWindowsIsInconclusive() throws Exception {
    List<JsonNode> rows =
        json(
            run(
                "history",
                "compare",
                "--before",
                "-4h/-3h",
                "--after",
                "-60s/now",
                "--communicator",
                "tp002",
                "--json"));
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).get("classification").asText()).isEqualTo("INCONCLUSIVE");
  }

  @Test
  void queryRunsSqlOverTheViews() throws Exception {
    List<JsonNode> rows =
        json(
            run(
                "query",
                "--json",
                "SELECT count(*) AS n, count(DISTINCT communicator) AS c, min(dt) AS first_day"
                    + " FROM rank_windows"));
    // 2160 windows of 32 ranks, less rank 2 of tp000 for its silent windows
    assertThat(rows.get(0).get("n").asLong()).isEqualTo(2160L * 32 - 7);
    assertThat(rows.get(0).get("c").asInt()).isEqualTo(4);
    assertThat(rows.get(0).get("first_day").asText()).isEqualTo("2026-11-30");
  }

  @Test
  void theGeneratorWritesTheSameHistoryWhateverTheThreads(@TempDir Path other) throws Exception {
    new io.collscope.load.HistoryGenerator(
            new io.collscope.load.HistoryGenerator.Config(
                32, 8, Duration.ofHours(6), Duration.ofSeconds(10), END, 42, "gen", "train", 1))
        .write(other);
    String digest =
        "SELECT sum(hash(communicator, rank, window_end, wait_mean_us, peer_late_mean_us))"
            + " AS h FROM rank_windows";
    CliRun a = run("query", "--csv", digest);
    CliRun b = CliRun.of("query", "--csv", "--history", other.toString(), digest);
    assertThat(a.exitCode()).as(a.err()).isZero();
    assertThat(b.out()).isEqualTo(a.out());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "history culprits --since 7x",
        "history culprits --limit 0",
        "history culprits --csv --json",
        "history latency --since 1h",
        "history latency --communicator tp001 --by host",
        "history latency --communicator a/b",
        "history compare --before yesterday --after -1h/now",
        "history compare --before -1h/-2h --after -1h/now",
        "history compare --before -2h/-1h --after -1h/now --min-effect 2",
        "history generate --out x --ranks 12",
        "history generate --out x --window 7s",
        "query SELEC 1",
        "query",
        "history"
      })
  void badFlagsAreOneLineAndExitCode2(String args) {
    CliRun r = CliRun.of(args.split(" "));
    assertThat(r.exitCode()).as(r.err()).isEqualTo(2);
    assertThat(r.err().strip().lines()).as(r.err()).hasSize(1);
    assertThat(r.err()).startsWith("collscope ");
  }
}
