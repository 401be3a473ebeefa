package io.collscope.alerts;

import java.io.IOException;
import java.util.List;

/** Where the forwarder delivers alerts: Alertmanager's API, or a fake in tests. */
@FunctionalInterface
public interface AlertSink {

  /** Delivers all of {@code alerts} or throws: a failure is retried with back-off. */
  void send(List<AlertmanagerAlert> alerts) throws IOException;
}
