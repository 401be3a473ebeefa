package io.collscope.alerts;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** An Alert record as Alertmanager's API takes it. */
class AlertMappingTest {

  private static final Instant START = Instant.parse("2025-03-04T05:06:07.890Z");
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void alertnameComesFromTheKind() {
    assertThat(AlertMapping.alertname(AlertKind.LATENCY_REGRESSION))
        .isEqualTo("CollscopeLatencyRegression");
    assertThat(AlertMapping.alertname(AlertKind.SLOW_RANK)).isEqualTo("CollscopeSlowRank");
    assertThat(AlertMapping.alertname(AlertKind.SLOW_LINK)).isEqualTo("CollscopeSlowLink");
    assertThat(AlertMapping.alertname(AlertKind.DEAD_RANK)).isEqualTo("CollscopeDeadRank");
    assertThat(AlertMapping.alertname(AlertKind.UNKNOWN)).isEqualTo("CollscopeAlert");
  }

  @Test
  void aFiringAlertIsTheRecordsLabelsPlusAlertnameAndItsAnnotationsPlusSummary() throws Exception {
    Alert a = TestAlerts.firing("id1", START);
    Instant endsAt = START.plusSeconds(120);
    String json =
        AlertMapping.toJson(
            List.of(AlertMapping.toAlertmanager(a, endsAt, "http://grafana/d/collscope")));
    JsonNode o = JSON.readTree(json).get(0);
    assertThat(JSON.convertValue(o.get("labels"), Map.class))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "alertname", "CollscopeSlowRank",
                "cluster", "c1",
                "job", "train",
                "communicator", "tp0",
                "collective", "all_reduce",
                "kind", "SLOW_RANK",
                "rank", "5",
                "severity", "critical"));
    assertThat(JSON.convertValue(o.get("annotations"), Map.class))
        .containsEntry("summary", a.getMessage())
        .containsEntry("description", a.getAnnotations().get("description"))
        .containsEntry("baseline", "12.0")
        .containsEntry("current", "312.0");
    assertThat(o.get("startsAt").asText()).isEqualTo("2025-03-04T05:06:07.890Z");
    assertThat(o.get("endsAt").asText()).isEqualTo("2025-03-04T05:08:07.890Z");
    assertThat(o.get("generatorURL").asText()).isEqualTo("http://grafana/d/collscope");
  }

  @Test
  void theRecordsOwnAlertnameAndSummaryWin() {
    Alert a = TestAlerts.firing("id1", START);
    a.setLabels(Map.of("alertname", "MyName", "rank", "5"));
    a.setAnnotations(Map.of("summary", "own summary"));
    AlertmanagerAlert m = AlertMapping.toAlertmanager(a, START.plusSeconds(1), null);
    assertThat(m.labels()).containsEntry("alertname", "MyName").containsEntry("rank", "5");
    // Fields fill in what the labels lack.
    assertThat(m.labels())
        .containsEntry("cluster", "c1")
        .containsEntry("job", "train")
        .containsEntry("communicator", "tp0")
        .containsEntry("severity", "critical");
    assertThat(m.annotations()).containsExactlyEntriesOf(Map.of("summary", "own summary"));
    assertThat(m.generatorUrl()).isNull();
  }

  @Test
  void noGeneratorUrlAndNoStartMeansNoSuchKeys() throws Exception {
    Alert a = TestAlerts.firing("id1", Instant.EPOCH);
    JsonNode o =
        JSON.readTree(
                AlertMapping.toJson(
                    List.of(AlertMapping.toAlertmanager(a, START.plusSeconds(1), " "))))
            .get(0);
    assertThat(o.has("generatorURL")).isFalse();
    assertThat(o.has("startsAt")).isFalse();
    assertThat(o.get("endsAt").asText()).isEqualTo("2025-03-04T05:06:08.890Z");
  }

  @Test
  void endsAtIsNeverBeforeStartsAtWhichAlertmanagerRejects() {
    Alert r = TestAlerts.resolved(TestAlerts.firing("id1", START), START.minusSeconds(5));
    AlertmanagerAlert m = AlertMapping.toAlertmanager(r, r.getEndsAt(), null);
    assertThat(m.endsAt()).isEqualTo(START);
    assertThat(m.startsAt()).isEqualTo(START);
  }

  @Test
  void namesAlertmanagerWouldRejectAreMadeValidAndEmptyValuesLeftOut() {
    Alert a = TestAlerts.firing("id1", START);
    a.setLabels(Map.of("size-bucket", "1M", "9lives", "x", "empty", "", "rank", "5"));
    a.setAnnotations(Map.of("runbook.url", "http://x"));
    AlertmanagerAlert m = AlertMapping.toAlertmanager(a, START.plusSeconds(1), null);
    assertThat(m.labels())
        .containsEntry("size_bucket", "1M")
        .containsEntry("_9lives", "x")
        .doesNotContainKey("empty");
    assertThat(m.annotations()).containsEntry("runbook_url", "http://x");
  }

  @Test
  void rfc3339IsUtcWithMilliseconds() {
    assertThat(AlertMapping.rfc3339(Instant.parse("2025-01-02T03:04:05Z")))
        .isEqualTo("2025-01-02T03:04:05Z");
    assertThat(AlertMapping.rfc3339(Instant.parse("2025-01-02T03:04:05.123456Z")))
        .isEqualTo("2025-01-02T03:04:05.123Z");
  }
}
