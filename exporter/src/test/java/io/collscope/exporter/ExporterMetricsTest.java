package io.collscope.exporter;

import static io.collscope.exporter.ExporterMetrics.*;
import static io.collscope.exporter.ExporterRecords.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.AlertKind;
import io.collscope.avro.AlertState;
import io.collscope.avro.Cause;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.Finding;
import io.collscope.avro.FindingKind;
import io.collscope.avro.Stage;
import io.collscope.avro.Verdict;
import io.collscope.schema.AvroCodec;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/** The metric mapping of each output record, the latest-window rule, and series expiry. */
class ExporterMetricsTest {

  private static final Instant T0 = Instant.parse("2026-05-01T12:00:00Z");
  private static final Duration TTL = Duration.ofMinutes(2);

  private final ManualClock clock = new ManualClock(T0);
  private final ExporterState state = new ExporterState(TTL, clock);
  private final PrometheusRegistry registry = new PrometheusRegistry();

  {
    ExporterMetrics.register(state, registry);
  }

  private void accept(org.apache.avro.specific.SpecificRecord r) {
    state.accept(r, clock.instant().toEpochMilli());
  }

  @Test
  void aRankWindowBecomesItsRanksSeries() {
    accept(rankWindow("tp0", 3, 4, T0, 310.5, 512));
    Scrape s = Scrape.of(registry);
    String[] rank3 = {"cluster", "c1", "job", "train", "communicator", "tp0", "rank", "3"};
    assertThat(s.value(RANK_LATENCY_P99, rank3)).contains(512.0);
    assertThat(s.value(RANK_LATENCY_P50, rank3)).contains(256.0);
    assertThat(s.value(RANK_CALLS, rank3)).contains(1000.0);
    assertThat(s.value(RANK_TIMEOUTS, rank3)).contains(0.0);
    assertThat(s.value(RANK_WINDOW_END, rank3)).contains(T0.getEpochSecond() * 1.0);
    assertThat(s.value(RANK_PHASE, "rank", "3", "phase", "wait")).contains(310.5);
    assertThat(s.value(RANK_PHASE, "rank", "3", "phase", "guard")).contains(2.0);
    assertThat(s.series(RANK_PHASE)).hasSize(5);
    // A rank window alone says when the communicator's data ends, not what its verdict is.
    assertThat(s.value(WINDOW_END, "communicator", "tp0")).contains(T0.getEpochSecond() * 1.0);
    assertThat(s.series(VERDICT)).isEmpty();
  }

  @Test
  void anAttributionBecomesMaxWaitVerdictFindingsAndCulprits() {
    accept(
        attribution(
            "tp0",
            8,
            T0,
            4,
            310.5,
            slowRank(5, Cause.ARRIVED_LATE, 298.0, 0.93),
            slowLink(3, 6, 120.0, 0.71)));
    Scrape s = Scrape.of(registry);
    assertThat(s.value(MAX_WAIT, "communicator", "tp0")).contains(310.5);
    assertThat(s.value(MAX_WAIT_RANK, "communicator", "tp0")).contains(4.0);
    assertThat(s.value(COLLECTIVE, "communicator", "tp0")).contains(12.0);
    assertThat(s.value(BASELINE, "communicator", "tp0")).contains(11.5);
    assertThat(s.value(VERDICT, "verdict", "MULTIPLE")).contains(1.0);
    assertThat(s.value(VERDICT, "verdict", "NONE")).contains(0.0);
    assertThat(s.series(VERDICT)).hasSize(Verdict.values().length);
    assertThat(s.value(FINDINGS, "kind", "SLOW_RANK")).contains(1.0);
    assertThat(s.value(FINDINGS, "kind", "SLOW_LINK")).contains(1.0);
    assertThat(s.value(FINDINGS, "kind", "SILENT_RANK")).contains(0.0);
    assertThat(s.series(FINDINGS)).hasSize(FindingKind.values().length);
    assertThat(s.value(CULPRIT_EXCESS, "kind", "SLOW_RANK", "rank", "5", "cause", "ARRIVED_LATE"))
        .contains(298.0);
    // A link's receiver is not the culprit: the link is, and the rank label stays empty.
    assertThat(s.value(CULPRIT_EXCESS, "kind", "SLOW_LINK", "link", "3->6", "rank", ""))
        .contains(120.0);
    assertThat(s.value(CULPRIT_CONFIDENCE, "kind", "SLOW_RANK")).contains(0.93);
  }

  @Test
  void aSlowNodeIsLabelledWithItsHostNotARank() {
    Finding node =
        ExporterRecords.finding(FindingKind.SLOW_NODE, 2, -1, Cause.ARRIVED_LATE, 2100, 0.9);
    node.setNode("node-1");
    accept(attribution("tp0", 4, T0, 0, 2100, node));
    Scrape s = Scrape.of(registry);
    assertThat(s.value(FINDINGS, "kind", "SLOW_NODE")).contains(1.0);
    assertThat(s.value(CULPRIT_EXCESS, "kind", "SLOW_NODE", "node", "node-1", "rank", ""))
        .contains(2100.0);
  }

  @Test
  void onlyTheLatestWindowIsShownAndAnOlderOneNeverReplacesIt() {
    accept(attribution("tp0", 8, T0, 4, 310.5, slowRank(5, Cause.ARRIVED_LATE, 298.0, 0.9)));
    accept(rankWindow("tp0", 5, 8, T0, 3.0, 512));
    clock.advance(Duration.ofSeconds(10));
    accept(attribution("tp0", 8, T0.plusSeconds(10), 1, 8.0));
    accept(rankWindow("tp0", 5, 8, T0.plusSeconds(10), 7.0, 64));
    // The earlier window again (a replay, or a reordered record): ignored.
    accept(attribution("tp0", 8, T0, 4, 310.5, slowRank(5, Cause.ARRIVED_LATE, 298.0, 0.9)));
    accept(rankWindow("tp0", 5, 8, T0, 3.0, 512));
    Scrape s = Scrape.of(registry);
    assertThat(s.value(MAX_WAIT, "communicator", "tp0")).contains(8.0);
    assertThat(s.value(VERDICT, "verdict", "NONE")).contains(1.0);
    assertThat(s.value(VERDICT, "verdict", "SLOW_RANK")).contains(0.0);
    assertThat(s.series(CULPRIT_EXCESS)).as("the culprit of the window before is gone").isEmpty();
    assertThat(s.value(RANK_PHASE, "rank", "5", "phase", "wait")).contains(7.0);
    assertThat(s.value(RANK_LATENCY_P99, "rank", "5")).contains(64.0);
    assertThat(s.value(WINDOW_END, "communicator", "tp0"))
        .contains(T0.plusSeconds(10).getEpochSecond() * 1.0);
  }

  @Test
  void anAlertFiresThenResolvesAndItsSeriesGoesATtlLater() {
    accept(attribution("tp0", 8, T0, 4, 310.5));
    accept(alert("tp0", AlertKind.SLOW_RANK, "5", AlertState.FIRING, T0));
    Scrape s = Scrape.of(registry);
    assertThat(
            s.value(
                ALERT_FIRING,
                "alertname",
                "CollscopeSlowRank",
                "kind",
                "SLOW_RANK",
                "rank",
                "5",
                "severity",
                "critical",
                "size_bucket",
                "64KiB",
                "collective",
                "allreduce_oneshot_f32",
                "communicator",
                "tp0",
                "link",
                ""))
        .contains(1.0);

    clock.advance(Duration.ofSeconds(30));
    accept(alert("tp0", AlertKind.SLOW_RANK, "5", AlertState.RESOLVED, clock.instant()));
    assertThat(Scrape.of(registry).value(ALERT_FIRING, "rank", "5")).contains(0.0);

    // The communicator stays alive; the resolved alert goes a TTL after it resolved.
    for (int i = 0; i < 13; i++) {
      clock.advance(Duration.ofSeconds(10));
      accept(attribution("tp0", 8, clock.instant(), 4, 10.0));
    }
    assertThat(Scrape.of(registry).series(ALERT_FIRING)).isEmpty();
    assertThat(Scrape.of(registry).value(MAX_WAIT, "communicator", "tp0")).contains(10.0);
  }

  @Test
  void aFiringAlertStaysWhileItsCommunicatorLives() {
    accept(alert("tp0", AlertKind.LATENCY_REGRESSION, null, AlertState.FIRING, T0));
    for (int i = 0; i < 30; i++) {
      clock.advance(Duration.ofSeconds(10));
      accept(attribution("tp0", 8, clock.instant(), 4, 10.0));
    }
    assertThat(
            Scrape.of(registry)
                .value(ALERT_FIRING, "alertname", "CollscopeLatencyRegression", "rank", ""))
        .contains(1.0);
  }

  @Test
  void theExpiredCountIsRightWhicheverCollectorAScrapeReadsFirst() {
    // The registry keeps its collectors in a set: a scrape may read the expired counter before any
    // series. Read alone, straight after the TTL passed, it must already count what expired.
    accept(rankWindow("tp0", 0, 2, T0, 5.0, 64));
    accept(attribution("tp0", 2, T0, 0, 5.0));
    clock.advance(TTL);
    assertThat(state.expired()).isEqualTo(new ExporterState.Expired(1, 1));
  }

  @Test
  void idleRanksAndCommunicatorsExpireAfterTheTtl() {
    accept(rankWindow("tp0", 0, 2, T0, 5.0, 64));
    accept(rankWindow("tp0", 1, 2, T0, 6.0, 64));
    accept(attribution("tp0", 2, T0, 1, 6.0, slowRank(0, Cause.ARRIVED_LATE, 5.5, 0.5)));
    accept(alert("tp0", AlertKind.SLOW_RANK, "0", AlertState.FIRING, T0));
    accept(rankWindow("dp0", 0, 2, T0, 5.0, 64));
    accept(attribution("dp0", 2, T0, 0, 5.0));
    assertThat(Scrape.of(registry).series(RANK_PHASE, "communicator", "tp0")).hasSize(10);

    // dp0 and rank 1 of tp0 keep reporting; rank 0 of tp0 goes silent, then the whole of tp0.
    clock.advance(TTL.minusSeconds(10));
    accept(rankWindow("tp0", 1, 2, clock.instant(), 6.0, 64));
    accept(rankWindow("dp0", 0, 2, clock.instant(), 5.0, 64));
    accept(attribution("dp0", 2, clock.instant(), 0, 5.0));
    clock.advance(Duration.ofSeconds(10));
    Scrape s = Scrape.of(registry);
    assertThat(s.series(RANK_LATENCY_P99, "communicator", "tp0", "rank", "0")).isEmpty();
    assertThat(s.series(RANK_PHASE, "communicator", "tp0", "rank", "0")).isEmpty();
    assertThat(s.series(RANK_LATENCY_P99, "communicator", "tp0", "rank", "1")).hasSize(1);
    assertThat(s.series(MAX_WAIT, "communicator", "tp0"))
        .as("tp0 itself is alive while a rank of it reports")
        .hasSize(1);
    assertThat(s.value(EXPIRED + "_total", "scope", "rank")).contains(1.0);

    clock.advance(TTL);
    accept(rankWindow("dp0", 0, 2, clock.instant(), 5.0, 64));
    accept(attribution("dp0", 2, clock.instant(), 0, 5.0));
    s = Scrape.of(registry);
    for (String name :
        new String[] {
          RANK_LATENCY_P99,
          RANK_PHASE,
          MAX_WAIT,
          VERDICT,
          FINDINGS,
          CULPRIT_EXCESS,
          ALERT_FIRING,
          PIPELINE_LAG,
          WINDOW_END
        }) {
      assertThat(s.series(name, "communicator", "tp0")).as(name).isEmpty();
    }
    assertThat(s.series(MAX_WAIT, "communicator", "dp0")).hasSize(1);
    assertThat(s.series(RANK_PHASE, "communicator", "dp0")).hasSize(5);
    assertThat(s.value(EXPIRED + "_total", "scope", "communicator")).contains(1.0);
    assertThat(s.value(EXPIRED + "_total", "scope", "rank")).contains(2.0);

    // It comes back when it reports again.
    accept(rankWindow("tp0", 0, 2, clock.instant(), 5.0, 64));
    assertThat(Scrape.of(registry).series(RANK_PHASE, "communicator", "tp0")).hasSize(5);
  }

  @Test
  void aCommunicatorOfNRanksHas10NPlus22SeriesPlusItsFindingsAndAlerts() {
    int n = 6;
    for (int r = 0; r < n; r++) accept(rankWindow("tp0", r, n, T0, 5.0, 64));
    accept(attribution("tp0", n, T0, 1, 6.0, slowRank(2, Cause.ARRIVED_LATE, 5.5, 0.5)));
    accept(alert("tp0", AlertKind.SLOW_RANK, "2", AlertState.FIRING, T0));
    long series =
        Scrape.of(registry).samples().stream()
            .filter(s -> "tp0".equals(s.labels().get("communicator")))
            .count();
    assertThat(series).isEqualTo(10 * n + 22 + 2 + 1);
  }

  @Test
  void recordsCaughtUpOnAfterTheTtlAreNotShownAsLive() {
    // Written long ago, read now: the record's timestamp decides, not when it was read.
    state.accept(rankWindow("tp0", 0, 2, T0.minus(TTL), 5.0, 64), T0.minus(TTL).toEpochMilli());
    assertThat(Scrape.of(registry).series(RANK_PHASE)).isEmpty();
  }

  @Test
  void pipelineLagIsNowMinusTheLatestWindowEnd() {
    accept(rankWindow("tp0", 0, 2, T0, 5.0, 64));
    clock.advance(Duration.ofMillis(4500));
    assertThat(Scrape.of(registry).value(PIPELINE_LAG, "communicator", "tp0")).contains(4.5);
  }

  @Test
  void deadLettersAreCountedByReasonFromZero() {
    assertThat(Scrape.of(registry).series(DEAD_LETTERS + "_total"))
        .hasSize(DeadLetterReason.values().length)
        .allMatch(s -> s.value() == 0);
    accept(deadLetter(DeadLetterReason.COUNTER_WENT_BACKWARDS, Stage.DELTA, T0));
    accept(deadLetter(DeadLetterReason.COUNTER_WENT_BACKWARDS, Stage.DELTA, T0));
    accept(deadLetter(DeadLetterReason.CORRUPT_BODY, Stage.DECODE, T0));
    Scrape s = Scrape.of(registry);
    assertThat(s.value(DEAD_LETTERS + "_total", "reason", "COUNTER_WENT_BACKWARDS")).contains(2.0);
    assertThat(s.value(DEAD_LETTERS + "_total", "reason", "CORRUPT_BODY")).contains(1.0);
    assertThat(s.value(DEAD_LETTERS + "_total", "reason", "EMPTY")).contains(0.0);
  }

  @Test
  void theReaderCountsUndecodableRecordsAndSkipsThem() {
    OutputTopicReader reader =
        new OutputTopicReader(state, new OutputTopicReader.Topics("rw", "at", "al", "dl"));
    byte[] good =
        AvroCodec.of(io.collscope.avro.RankWindow.class)
            .encode(rankWindow("tp0", 0, 2, T0, 5.0, 64));
    reader.accept(record("rw", good));
    reader.accept(record("rw", "not avro".getBytes(StandardCharsets.UTF_8)));
    reader.accept(record("rw", null));
    Scrape s = Scrape.of(registry);
    assertThat(s.value(RECORDS + "_total", "topic", "rw")).contains(3.0);
    assertThat(s.value(UNDECODABLE + "_total", "topic", "rw")).contains(2.0);
    assertThat(s.series(RANK_PHASE)).hasSize(5);
  }

  @Test
  void everyMetricHasHelpAndNoSeriesIsDuplicated() {
    accept(attribution("tp0", 8, T0, 4, 310.5, slowRank(5, Cause.ARRIVED_LATE, 298.0, 0.9)));
    accept(rankWindow("tp0", 5, 8, T0, 3.0, 512));
    String text = Scrape.of(registry).text();
    assertThat(text).contains("# HELP " + MAX_WAIT + " ");
    Optional<String> dup =
        text
            .lines()
            .filter(l -> !l.startsWith("#"))
            .map(l -> l.substring(0, l.lastIndexOf(' ')))
            .collect(
                java.util.stream.Collectors.groupingBy(
                    l -> l, java.util.stream.Collectors.counting()))
            .entrySet()
            .stream()
            .filter(e -> e.getValue() > 1)
            .map(java.util.Map.Entry::getKey)
            .findFirst();
    assertThat(dup).isEmpty();
  }

  private static ConsumerRecord<byte[], byte[]> record(String topic, byte[] value) {
    return new ConsumerRecord<>(
        topic,
        0,
        0,
        T0.toEpochMilli(),
        org.apache.kafka.common.record.TimestampType.CREATE_TIME,
        0,
        value == null ? 0 : value.length,
        null,
        value,
        new org.apache.kafka.common.header.internals.RecordHeaders(),
        Optional.empty());
  }
}
