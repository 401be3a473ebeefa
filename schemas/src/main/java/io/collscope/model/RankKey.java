package io.collscope.model;

import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import java.io.Serializable;

/**
 * One rank's counter series: the key of per-rank state. A cluster runs many jobs, each with many
 * communicators, so all three are part of the key; two jobs that both call their communicator
 * {@code comm0} never share state.
 */
public record RankKey(String cluster, String job, String communicator, int rank)
    implements Serializable {

  public static RankKey of(CounterSnapshot s) {
    return CommunicatorKey.of(s).rank(s.getRank());
  }

  public static RankKey of(RankWindow w) {
    return CommunicatorKey.of(w).rank(w.getRank());
  }

  public CommunicatorKey communicatorKey() {
    return new CommunicatorKey(cluster, job, communicator);
  }

  /** Readable form, also the Kafka record key (used for partitioning only, never parsed). */
  @Override
  public String toString() {
    return communicatorKey() + "/" + rank;
  }
}
