package io.collscope.schema;

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

  /**
   * Against an emitter's own count of what it published ({@code collscope emit}'s "published N
   * snapshots"): each rank and boot numbers its snapshots 1..n, so the identities it produced are
   * 1..the highest read back, and what the counter says beyond those is a lost tail.
   */
  public static DeliveryCount ofCounter(long published, Collection<CounterSnapshot> readBack) {
    Map<String, Long> highest = new HashMap<>();
    Map<String, CounterSnapshot> any = new HashMap<>();
    for (CounterSnapshot s : readBack) {
      String boot =
          s.getCluster()
              + "/"
              + s.getJob()
              + "/"
              + s.getCommunicator()
              + "/"
              + s.getRank()
              + "/"
              + s.getBootId();
      highest.merge(boot, s.getSeq(), Math::max);
      any.putIfAbsent(boot, s);
    }
    Set<String> known = new TreeSet<>();
    highest.forEach(
        (boot, max) -> {
          CounterSnapshot s = any.get(boot);
          for (long q = 1; q <= max; q++) {
            known.add(
                key(
                    s.getCluster(),
                    s.getJob(),
                    s.getCommunicator(),
                    s.getRank(),
                    s.getBootId(),
                    q));
          }
        });
    DeliveryCount d = of(known, readBack);
    return new DeliveryCount(published, d.consumed(), d.records(), d.lost(), d.duplicated());
  }

  /** Produced and never read back: the identities missing, or the counter's excess if larger. */
  public long lostCount() {
    return Math.max(lost.size(), produced - consumed);
  }
}
