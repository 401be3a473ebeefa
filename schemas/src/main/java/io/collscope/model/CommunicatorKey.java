package io.collscope.model;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.GpuHealth;
import io.collscope.avro.RankWindow;
import java.io.Serializable;

/** One communicator of one job of one cluster: the key of cross-rank state (attribution). */
public record CommunicatorKey(String cluster, String job, String communicator)
    implements Serializable {

  public static CommunicatorKey of(Attribution a) {
    return new CommunicatorKey(a.getCluster(), a.getJob(), a.getCommunicator());
  }

  public static CommunicatorKey of(RankWindow w) {
    return new CommunicatorKey(w.getCluster(), w.getJob(), w.getCommunicator());
  }

  public static CommunicatorKey of(CounterSnapshot s) {
    return new CommunicatorKey(s.getCluster(), s.getJob(), s.getCommunicator());
  }

  public static CommunicatorKey of(GpuHealth h) {
    return new CommunicatorKey(h.getCluster(), h.getJob(), h.getCommunicator());
  }

  public RankKey rank(int rank) {
    return new RankKey(cluster, job, communicator, rank);
  }

  /** Readable form, also the Kafka record key (used for partitioning only, never parsed). */
  @Override
  public String toString() {
    return cluster + "/" + job + "/" + communicator;
  }
}
