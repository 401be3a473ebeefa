package io.collscope.alerts;

import java.time.Instant;
import java.util.Collections;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One alert as Alertmanager's {@code POST /api/v2/alerts} takes it: labels identify it, annotations
 * describe it; {@code endsAt} in the future means firing, in the past resolved.
 *
 * @param startsAt null: Alertmanager uses the time it received the alert
 * @param generatorUrl null: not sent
 */
public record AlertmanagerAlert(
    SortedMap<String, String> labels,
    SortedMap<String, String> annotations,
    Instant startsAt,
    Instant endsAt,
    String generatorUrl) {

  public AlertmanagerAlert {
    labels = Collections.unmodifiableSortedMap(new TreeMap<>(labels));
    annotations = Collections.unmodifiableSortedMap(new TreeMap<>(annotations));
  }
}
