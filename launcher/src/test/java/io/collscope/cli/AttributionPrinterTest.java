package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.avro.Attribution;
import io.collscope.avro.Cause;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.RankPhases;
import io.collscope.avro.Verdict;
import io.collscope.model.Phase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The demo's table and JSON line for one attribution window, without a broker. */
class AttributionPrinterTest {

  private static final Instant START = Instant.parse("2026-11-29T10:00:00Z");
  private static final Instant END = START.plusSeconds(10);
  // Strict: a second value after the object (two lines run together) is an error.
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  @Test
  void theTableHasOneColumnPerPhaseInPhaseOrderWithEachRanksMean() {
    String table = AttributionPrinter.table(window(Verdict.NONE, List.of(), 4), true);

    List<String> lines = table.strip().lines().toList();
    List<String> header = Arrays.asList(lines.get(1).trim().split("\\s+"));
    List<String> expected = new ArrayList<>(List.of("rank", "calls"));
    for (Phase p : Phase.values()) expected.add(p.fieldName() + "_us");
    expected.add("p99_us");
    assertThat(header).containsExactlyElementsOf(expected);

    List<String> rows = lines.subList(2, lines.size());
    assertThat(rows).hasSize(4);
    for (int r = 0; r < rows.size(); r++) {
      String[] cells = rows.get(r).trim().split("\\s+");
      assertThat(cells).hasSize(header.size());
      for (Phase p : Phase.values()) {
        assertThat(cells[2 + p.ordinal()])
            .isEqualTo(String.format(Locale.ROOT, "%.1f", mean(r, p)));
      }
    }
  }

  @Test
  void aMultipleVerdictListsEveryFindingStrongestFirst() {
    Attribution a =
        window(
            Verdict.MULTIPLE, List.of(slowRank(5, Cause.RING_FULL, 0.8), slowLink(3, 6, 0.6)), 8);

    assertThat(verdictLine(AttributionPrinter.table(a, true)))
        .contains("MULTIPLE: SLOW_RANK(5,RING_FULL) + SLOW_LINK(3->6)");
    JsonNode json = parse(AttributionPrinter.jsonLine(a, true));
    assertThat(json.get("verdict").asText()).isEqualTo("MULTIPLE");
    assertThat(json.get("rank").asInt()).isEqualTo(5);
    assertThat(json.get("cause").asText()).isEqualTo("RING_FULL");
    assertThat(json.get("findings")).hasSize(2);
    assertThat(json.get("findings").get(0).get("kind").asText()).isEqualTo("SLOW_RANK");
    assertThat(json.get("findings").get(1).get("kind").asText()).isEqualTo("SLOW_LINK");
    assertThat(json.get("findings").get(1).get("from_rank").asInt()).isEqualTo(3);
  }

  @Test
  void aSlowLinkIsPrintedAsSenderArrowReceiver() {
    Attribution a = window(Verdict.SLOW_LINK, List.of(slowLink(3, 6, 0.9)), 8);

    assertThat(verdictLine(AttributionPrinter.table(a, true))).contains("  SLOW_LINK(3->6)  ");
    JsonNode json = parse(AttributionPrinter.jsonLine(a, true));
    assertThat(json.get("link").asText()).isEqualTo("3->6");
    assertThat(json.get("rank").isNull()).isTrue();
    assertThat(json.get("cause").asText()).isEqualTo("LINK");
  }

  @Test
  void aSilentRankIsPrintedWithItsCauseAndIsTheJsonRank() {
    Finding silent = finding(FindingKind.SILENT_RANK, 3, -1, Cause.TIMED_OUT, 1.0);
    Attribution a = window(Verdict.SILENT_RANK, List.of(silent), 3);
    a.setMissingRanks(List.of(3));

    assertThat(verdictLine(AttributionPrinter.table(a, true)))
        .contains("  SILENT_RANK(3,TIMED_OUT)  ", "missing [3]");
    JsonNode json = parse(AttributionPrinter.jsonLine(a, true));
    assertThat(json.get("verdict").asText()).isEqualTo("SILENT_RANK");
    assertThat(json.get("rank").asInt()).isEqualTo(3);
    assertThat(json.get("link").isNull()).isTrue();
    assertThat(json.get("cause").asText()).isEqualTo("TIMED_OUT");
  }

  @Test
  void theJsonLineIsOneLineOfValidJsonWithTheDocumentedKeys() {
    Attribution a = window(Verdict.SLOW_RANK, List.of(slowRank(2, Cause.ARRIVED_LATE, 0.7)), 4);
    a.setMissingRanks(List.of(3));

    String line = AttributionPrinter.jsonLine(a, false);

    assertThat(line).doesNotContain("\n", "\r");
    JsonNode json = parse(line);
    Set<String> keys = new TreeSet<>();
    json.fieldNames().forEachRemaining(keys::add);
    assertThat(keys)
        .containsExactlyInAnyOrder(
            "type",
            "window_start",
            "window_end",
            "full_window",
            "cluster",
            "job",
            "communicator",
            "verdict",
            "rank",
            "link",
            "cause",
            "hardware_cause",
            "confidence",
            "max_wait_rank",
            "max_wait_us",
            "missing_ranks",
            "findings");
    assertThat(json.get("type").asText()).isEqualTo("window");
    assertThat(json.get("window_start").asText()).isEqualTo(START.toString());
    assertThat(json.get("window_end").asText()).isEqualTo(END.toString());
    assertThat(json.get("full_window").asBoolean()).isFalse();
    assertThat(json.get("cluster").asText()).isEqualTo("c1");
    assertThat(json.get("job").asText()).isEqualTo("j1");
    assertThat(json.get("communicator").asText()).isEqualTo("comm0");
    assertThat(json.get("verdict").asText()).isEqualTo("SLOW_RANK");
    assertThat(json.get("rank").asInt()).isEqualTo(2);
    assertThat(json.get("link").isNull()).isTrue();
    assertThat(json.get("cause").asText()).isEqualTo("ARRIVED_LATE");
    assertThat(json.get("confidence").asDouble()).isEqualTo(0.7);
    assertThat(json.get("max_wait_rank").asInt()).isEqualTo(1);
    assertThat(json.get("max_wait_us").asDouble()).isEqualTo(123.5);
    assertThat(json.get("missing_ranks").toString()).isEqualTo("[3]");
  }

  @Test
  void aNoneVerdictHasNoCulprit() {
    Attribution a = window(Verdict.NONE, List.of(), 4);

    assertThat(verdictLine(AttributionPrinter.table(a, true))).contains("  NONE  ");
    JsonNode json = parse(AttributionPrinter.jsonLine(a, true));
    assertThat(json.get("rank").isNull()).isTrue();
    assertThat(json.get("link").isNull()).isTrue();
    assertThat(json.get("cause").isNull()).isTrue();
    assertThat(json.get("findings")).isEmpty();
  }

  @Test
  void aWindowIsFullOnlyWhenTheFeedRanOverAllOfIt() {
    Attribution a = window(Verdict.NONE, List.of(), 2);

    assertThat(AttributionPrinter.fullWindow(a, null, null)).isFalse();
    assertThat(AttributionPrinter.fullWindow(a, START, null)).isTrue();
    assertThat(AttributionPrinter.fullWindow(a, START.plusMillis(1), null)).isFalse();
    assertThat(AttributionPrinter.fullWindow(a, START, END)).isTrue();
    assertThat(AttributionPrinter.fullWindow(a, START, END.minusMillis(1))).isFalse();
  }

  @Test
  void thePrinterMarksPartialWindowsAndPrintsJsonWhenAsked() {
    StringWriter text = new StringWriter();
    AttributionPrinter table = new AttributionPrinter(new PrintWriter(text), false);
    table.feedStarted(START.plusSeconds(1));
    table.accept(window(Verdict.NONE, List.of(), 2));
    assertThat(verdictLine(text.toString())).contains("10:00:00-10:00:10 (partial)");

    StringWriter json = new StringWriter();
    AttributionPrinter lines = new AttributionPrinter(new PrintWriter(json), true);
    lines.feedStarted(START);
    lines.accept(window(Verdict.NONE, List.of(), 2));
    assertThat(json.toString().lines()).hasSize(1);
    assertThat(parse(json.toString()).get("full_window").asBoolean()).isTrue();
  }

  @Test
  void aNoneOnAWindowWithTooFewCollectivesSaysHowBigACulpritHadToBe() {
    // A large bar alone is not noise to apologise for: over 1000 collectives it is what the host's
    // spread between peers is.
    Attribution busy = window(Verdict.NONE, List.of(), 4);
    busy.setThresholdUs(412.0);
    busy.setNoiseUs(80.0);
    assertThat(verdictLine(AttributionPrinter.table(busy, true))).doesNotContain("noisy");

    Attribution few = window(Verdict.NONE, List.of(), 4);
    few.getRanks().get(2).setSampledCalls(7L); // rank 2 started at the window's end
    few.setThresholdUs(412.0);
    assertThat(verdictLine(AttributionPrinter.table(few, true)))
        .endsWith("(noisy: 7 collectives sampled, a culprit needed > 412us)");
  }

  @Test
  void aFindingWithHardwareEvidenceHasItsLineUnderTheVerdict() {
    Finding f = slowRank(5, Cause.ARRIVED_LATE, 0.9);
    Attribution without = window(Verdict.SLOW_RANK, List.of(f), 8);
    assertThat(AttributionPrinter.table(without, true)).doesNotContain("hardware");
    assertThat(parse(AttributionPrinter.jsonLine(without, true)).get("hardware_cause").asText())
        .isEqualTo("NONE");

    Finding hot = Finding.newBuilder(f).build();
    hot.setHardwareCause(io.collscope.avro.HardwareCause.THERMAL);
    hot.setHardwareEvidence("GPU 5 of node-a (rank 5): SM 1,386/1,980 MHz, 87 °C");
    Attribution with = window(Verdict.SLOW_RANK, List.of(hot), 8);
    String table = AttributionPrinter.table(with, true);
    assertThat(table.strip().lines().skip(1).findFirst().orElseThrow())
        .isEqualTo(
            "  hardware SLOW_RANK(5,ARRIVED_LATE): THERMAL: GPU 5 of node-a (rank 5): SM"
                + " 1,386/1,980 MHz, 87 °C");
    assertThat(parse(AttributionPrinter.jsonLine(with, true)).get("hardware_cause").asText())
        .isEqualTo("THERMAL");
  }

  private static Attribution window(Verdict verdict, List<Finding> findings, int ranks) {
    List<RankPhases> rows = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      RankPhases row = new RankPhases();
      row.setRank(r);
      row.setCalls(1000L + r);
      for (Phase p : Phase.values()) row.put(p.meanUsField(), mean(r, p));
      row.setP99Us(512.0);
      rows.add(row);
    }
    return Attribution.newBuilder()
        .setCluster("c1")
        .setJob("j1")
        .setCommunicator("comm0")
        .setWindowStart(START)
        .setWindowEnd(END)
        .setWorldSize(ranks)
        .setRanks(rows)
        .setMaxWaitRank(1)
        .setMaxWaitMeanUs(123.5)
        .setVerdict(verdict)
        .setFindings(findings)
        .setConfidence(findings.isEmpty() ? 0.9 : findings.get(0).getConfidence())
        .setMissingRanks(List.of())
        .build();
  }

  /** A value unique to rank and phase, so a column in the wrong place shows. */
  private static double mean(int rank, Phase p) {
    return rank * 100 + p.ordinal() + 0.5;
  }

  private static Finding slowRank(int rank, Cause cause, double confidence) {
    return finding(FindingKind.SLOW_RANK, rank, -1, cause, confidence);
  }

  private static Finding slowLink(int from, int to, double confidence) {
    return finding(FindingKind.SLOW_LINK, to, from, Cause.LINK, confidence);
  }

  private static Finding finding(
      FindingKind kind, int rank, int from, Cause cause, double confidence) {
    return Finding.newBuilder()
        .setKind(kind)
        .setRank(rank)
        .setFromRank(from)
        .setCause(cause)
        .setConfidence(confidence)
        .setExcessWaitUs(250.0)
        .setEvidence("test \"quoted\" evidence")
        .build();
  }

  private static String verdictLine(String table) {
    return table.strip().lines().findFirst().orElseThrow();
  }

  private static JsonNode parse(String line) {
    try {
      return JSON.readTree(line);
    } catch (java.io.IOException e) {
      throw new AssertionError("not JSON: " + line, e);
    }
  }

  @Test
  void anAlertIsOneJsonLineWithItsStateLabelsAndTimes() {
    io.collscope.avro.Alert a =
        io.collscope.avro.Alert.newBuilder()
            .setAlertId("0123456789abcdef")
            .setCluster("c1")
            .setJob("j1")
            .setCommunicator("comm0")
            .setKind(io.collscope.avro.AlertKind.LATENCY_REGRESSION)
            .setState(io.collscope.avro.AlertState.RESOLVED)
            .setSeverity("warning")
            .setLabels(java.util.Map.of("alertname", "CollscopeLatencyRegression", "cluster", "c1"))
            .setAnnotations(java.util.Map.of("phase", "wait"))
            .setStartsAt(START)
            .setEndsAt(END)
            .setClassification(io.collscope.avro.Classification.PARITY)
            .setMetric("latency_mean_us")
            .setBaseline(100)
            .setCurrent(101)
            .setNoise(5)
            .setWindowEnd(END)
            .setMessage("collective latency is back")
            .build();
    String line = AttributionPrinter.alertJson(a);
    assertThat(line).doesNotContain("\n", "\r");
    JsonNode json = parse(line);
    assertThat(json.get("type").asText()).isEqualTo("alert");
    assertThat(json.get("state").asText()).isEqualTo("RESOLVED");
    assertThat(json.get("kind").asText()).isEqualTo("LATENCY_REGRESSION");
    assertThat(json.get("labels").get("alertname").asText())
        .isEqualTo("CollscopeLatencyRegression");
    assertThat(json.get("starts_at").asText()).isEqualTo(START.toString());
    assertThat(json.get("ends_at").asText()).isEqualTo(END.toString());
    assertThat(json.get("summary").asText()).isEqualTo("collective latency is back");
    a.setState(io.collscope.avro.AlertState.FIRING);
    a.setEndsAt(null);
    assertThat(parse(AttributionPrinter.alertJson(a)).get("ends_at").isNull()).isTrue();
    assertThat(AttributionPrinter.alertLine(a))
        .contains("ALERT FIRING CollscopeLatencyRegression c1/j1/comm0")
        .doesNotContain("until");
  }
}
