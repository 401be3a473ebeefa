package io.collscope.flink.testing;

import io.collscope.avro.CounterSnapshot;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a producer's own counter says it delivered against what a read_committed reader found, per
 * snapshot identity {@code (cluster, job, communicator, rank, boot, seq)}: lost is what was
 * produced and never read back (a lost tail after a boot's highest sequence included), duplicated
 * is every copy read beyond the first. Every figure is a count; none is assumed.
 */
public record DeliveryCount(
    long produced, long consumed, long records, Set<String> lost, long duplicated) {

  /** The identity of a snapshot, as the job's dedupe keys it. */
  public static String key(CounterSnapshot s) {
    return key(
        s.getCluster(), s.getJob(), s.getCommunicator(), s.getRank(), s.getBootId(), s.getSeq());
  }

  public static String key(
      String cluster, String job, String communicator, int rank, String boot, long seq) {
    return cluster + "/" + job + "/" + communicator + "/" + rank + "/" + boot + "/" + seq;
  }

  /**
   * @param produced the keys the producer counted as delivered (acknowledged, or appended to a
   *     spool that delivers them)
   * @param readBack every snapshot read back, copies included, of the producer's communicators
   */
  public static DeliveryCount of(Set<String> produced, Collection<CounterSnapshot> readBack) {
    Map<String, Integer> copies = new HashMap<>();
    for (CounterSnapshot s : readBack) copies.merge(key(s), 1, Integer::sum);
    Set<String> lost = new TreeSet<>(produced);
    lost.removeAll(copies.keySet());
    long consumed = 0;
    for (String k : produced) if (copies.containsKey(k)) consumed++;
    long duplicated = 0;
    for (int n : copies.values()) duplicated += n - 1;
    return new DeliveryCount(produced.size(), consumed, readBack.size(), lost, duplicated);
  }
}
