package io.collscope.emitter;

import io.collscope.avro.CounterSnapshot;
import io.collscope.schema.Snapshots;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What a snapshot topic holds, counted by the identity the job deduplicates on: (cluster, job,
 * communicator, rank, boot, seq). Duplicates and gaps are measured from the records read, never
 * assumed: read the topic with {@code TopicDrainer.drainToEnd}, not up to an expected count.
 */
public final class DeliveryTally {

  /** One snapshot's identity. */
  public record Key(
      String cluster, String job, String communicator, int rank, String boot, long seq) {

    public static Key of(CounterSnapshot s) {
      return new Key(
          s.getCluster(), s.getJob(), s.getCommunicator(), s.getRank(), s.getBootId(), s.getSeq());
    }

    /** The rank's boot: what one run of one rank's sequence belongs to. */
    String stream() {
      return cluster + "/" + job + "/" + communicator + "/" + rank + "@" + boot;
    }
  }

  private final Map<Key, Integer> copies = new HashMap<>();
  private long records;

  public static DeliveryTally of(Collection<ConsumerRecord<byte[], byte[]>> rs)
      throws io.collscope.schema.DecodeException {
    DeliveryTally t = new DeliveryTally();
    for (ConsumerRecord<byte[], byte[]> r : rs) t.add(Snapshots.decode(r.value()));
    return t;
  }

  public void add(CounterSnapshot s) {
    records++;
    copies.merge(Key.of(s), 1, Integer::sum);
  }

  /** Records read, copies included. */
  public long records() {
    return records;
  }

  /** Distinct snapshots: what is left after the job's dedupe by key. */
  public long distinct() {
    return copies.size();
  }

  /** Copies beyond the first, in the topic (before the job's dedupe). */
  public long duplicated() {
    return records - copies.size();
  }

  /** The distinct snapshots. */
  public java.util.Set<Key> keys() {
    return copies.keySet();
  }

  /** Of {@code expected}, how many are not in the topic. */
  public long missing(Collection<Key> expected) {
    return expected.stream().filter(k -> !copies.containsKey(k)).count();
  }

  /** Sequence numbers absent between 1 and each rank-boot's highest seen: gaps inside a run. */
  public long gaps() {
    Map<String, TreeSet<Long>> seqs = new TreeMap<>();
    for (Key k : copies.keySet())
      seqs.computeIfAbsent(k.stream(), x -> new TreeSet<>()).add(k.seq());
    long gaps = 0;
    for (TreeSet<Long> s : seqs.values()) gaps += s.last() - s.size();
    return gaps;
  }

  /** Per rank-boot, the highest sequence seen. */
  public Map<String, Long> highest() {
    Map<String, Long> m = new TreeMap<>();
    for (Key k : copies.keySet()) m.merge(k.stream(), k.seq(), Math::max);
    return m;
  }
}
