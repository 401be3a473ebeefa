package io.collscope.model;

import java.io.Serializable;

/** One communicator of one job of one cluster: the key of cross-rank state (attribution). */
public record CommunicatorKey(String cluster, String job, String communicator)
    implements Serializable {

  public RankKey rank(int rank) {
    return new RankKey(cluster, job, communicator, rank);
  }

  /** Readable form, also the Kafka record key (used for partitioning only, never parsed). */
  @Override
  public String toString() {
    return cluster + "/" + job + "/" + communicator;
  }
}
