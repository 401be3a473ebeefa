package io.collscope.cli;

/**
 * Every option's default as a named constant, each overridable by the environment variable in its
 * name (picocli resolves {@code ${env:NAME:-default}}).
 */
final class Defaults {

  private Defaults() {}

  static final String BOOTSTRAP = "${env:COLLSCOPE_BOOTSTRAP:-localhost:9092}";
  static final String SNAPSHOT_TOPIC = "${env:COLLSCOPE_TOPIC:-collscope.snapshots}";
  static final String CLUSTER = "${env:COLLSCOPE_CLUSTER:-local}";
  static final String JOB = "${env:COLLSCOPE_JOB:-demo}";
  static final String COMMUNICATOR = "${env:COLLSCOPE_COMMUNICATOR:-comm0}";
  static final String INTERVAL = "${env:COLLSCOPE_INTERVAL:-1s}";
  static final String RANKS = "${env:COLLSCOPE_RANKS:-4}";
  static final String BACKEND = "${env:COLLSCOPE_BACKEND:-auto}";
  static final String BROKER_TIMEOUT = "${env:COLLSCOPE_BROKER_TIMEOUT:-10s}";
  static final String PARTITIONS = "${env:COLLSCOPE_PARTITIONS:-4}";
  static final String KAFKA_PORT = "${env:COLLSCOPE_KAFKA_PORT:-9092}";
  static final String KAFKA_DATA = "${env:COLLSCOPE_KAFKA_DATA:-.run/kafka}";
  static final String ALERT_TOPIC = "${env:COLLSCOPE_ALERT_TOPIC:-collscope.alerts}";
  static final String HISTORY = "${env:COLLSCOPE_HISTORY:-.run/history}";
  static final String RANK_WINDOW_TOPIC =
      "${env:COLLSCOPE_RANK_WINDOW_TOPIC:-collscope.rank-windows}";
  static final String ATTRIBUTION_TOPIC =
      "${env:COLLSCOPE_ATTRIBUTION_TOPIC:-collscope.attribution}";
  static final String DEADLETTER_TOPIC = "${env:COLLSCOPE_DEADLETTER_TOPIC:-collscope.deadletter}";
  static final String EXPORTER_PORT = "${env:COLLSCOPE_EXPORTER_PORT:-9464}";
  static final String SERIES_TTL = "${env:COLLSCOPE_SERIES_TTL:-2m}";

  static final String CLUSTER_DIR = "${env:COLLSCOPE_CLUSTER_DIR:-.run/cluster}";
  static final String FLINK_REST_PORT = "${env:COLLSCOPE_FLINK_REST_PORT:-8081}";
  static final String FLINK_REST = "${env:COLLSCOPE_FLINK_REST:-}";

  /** Exit codes, documented in the README. */
  static final int EXIT_OK = 0;

  static final int EXIT_FAILURE = 1;
  static final int EXIT_USAGE = 2;
  static final int EXIT_BROKER_UNREACHABLE = 3;

  /**
   * {@code emit}: snapshots were lost (dropped from a full spool, a spool write failed, or a
   * delivery failed without a spool); its summary says how many. Distinct from 1, where what was
   * not delivered is still in the spool for the next run.
   */
  static final int EXIT_SNAPSHOTS_LOST = 4;
}
