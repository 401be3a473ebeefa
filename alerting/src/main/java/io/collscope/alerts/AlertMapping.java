package io.collscope.alerts;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.collscope.avro.Alert;
import io.collscope.avro.AlertKind;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * An {@link Alert} record as Alertmanager takes it, and the JSON of {@code POST /api/v2/alerts}.
 *
 * <p>Labels are the record's labels plus, where absent, {@code alertname} (from the kind: {@code
 * SLOW_RANK} → {@code CollscopeSlowRank}), {@code cluster}, {@code job}, {@code communicator} and
 * {@code severity} from the record's fields. Annotations are the record's plus {@code summary} =
 * the message where absent. Empty values are left out (to Alertmanager an empty label is no label),
 * and names Alertmanager would reject (it answers 400 for the alert) get every character outside
 * {@code [a-zA-Z0-9_]} replaced by {@code _}.
 */
public final class AlertMapping {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern VALID_NAME = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");

  private AlertMapping() {}

  /**
   * {@code CollscopeLatencyRegression}, {@code CollscopeSlowRank}, ...; UNKNOWN: CollscopeAlert.
   */
  public static String alertname(AlertKind kind) {
    if (kind == null || kind == AlertKind.UNKNOWN) return "CollscopeAlert";
    StringBuilder sb = new StringBuilder("Collscope");
    for (String word : kind.name().split("_")) {
      if (word.isEmpty()) continue;
      sb.append(word.charAt(0)).append(word.substring(1).toLowerCase(Locale.ROOT));
    }
    return sb.toString();
  }

  /**
   * The alert to send for a transition: {@code endsAt} is the given instant (a FIRING alert's now +
   * 4 × resend), never before {@code startsAt} (Alertmanager rejects that).
   */
  public static AlertmanagerAlert toAlertmanager(Alert a, Instant endsAt, String generatorUrl) {
    TreeMap<String, String> labels = new TreeMap<>();
    putAll(labels, a.getLabels());
    putIfAbsent(labels, "alertname", alertname(a.getKind()));
    putIfAbsent(labels, "cluster", a.getCluster());
    putIfAbsent(labels, "job", a.getJob());
    putIfAbsent(labels, "communicator", a.getCommunicator());
    putIfAbsent(labels, "severity", a.getSeverity());
    TreeMap<String, String> annotations = new TreeMap<>();
    putAll(annotations, a.getAnnotations());
    putIfAbsent(annotations, "summary", a.getMessage());
    Instant startsAt =
        a.getStartsAt() == null || a.getStartsAt().toEpochMilli() <= 0 ? null : a.getStartsAt();
    Instant end = startsAt != null && endsAt.isBefore(startsAt) ? startsAt : endsAt;
    String url = generatorUrl == null || generatorUrl.isBlank() ? null : generatorUrl;
    return new AlertmanagerAlert(labels, annotations, startsAt, end, url);
  }

  /** The body of {@code POST /api/v2/alerts}. */
  public static String toJson(List<AlertmanagerAlert> alerts) {
    ArrayNode array = JSON.createArrayNode();
    for (AlertmanagerAlert a : alerts) {
      ObjectNode o = array.addObject();
      ObjectNode labels = o.putObject("labels");
      a.labels().forEach(labels::put);
      ObjectNode annotations = o.putObject("annotations");
      a.annotations().forEach(annotations::put);
      if (a.startsAt() != null) o.put("startsAt", rfc3339(a.startsAt()));
      o.put("endsAt", rfc3339(a.endsAt()));
      if (a.generatorUrl() != null) o.put("generatorURL", a.generatorUrl());
    }
    return array.toString();
  }

  /** RFC 3339 in UTC with millisecond precision, e.g. {@code 2025-01-02T03:04:05.678Z}. */
  public static String rfc3339(Instant t) {
    return DateTimeFormatter.ISO_INSTANT.format(t.truncatedTo(ChronoUnit.MILLIS));
  }

  /** A label or annotation name Alertmanager accepts. */
  static String name(String n) {
    if (VALID_NAME.matcher(n).matches()) return n;
    String s = n.replaceAll("[^a-zA-Z0-9_]", "_");
    return s.isEmpty() || Character.isDigit(s.charAt(0)) ? "_" + s : s;
  }

  private static void putAll(Map<String, String> into, Map<String, String> from) {
    if (from == null) return;
    from.forEach(
        (k, v) -> {
          if (k != null && v != null && !v.isEmpty()) into.put(name(k), v);
        });
  }

  private static void putIfAbsent(Map<String, String> into, String key, String value) {
    if (value != null && !value.isEmpty()) into.putIfAbsent(key, value);
  }
}
