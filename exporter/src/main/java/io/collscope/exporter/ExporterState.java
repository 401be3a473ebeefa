package io.collscope.exporter;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.DeadLetterReason;
import io.collscope.avro.RankWindow;
import io.collscope.model.CommunicatorKey;
import io.collscope.model.RankKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.specific.SpecificRecord;

/**
 * What the exporter shows: the latest window of every rank and of every communicator, the alerts of
 * every communicator, dead letters by reason, and what the reader read.
 *
 * <p>Cardinality stays bounded because nothing stays for ever: a rank (its window) and a
 * communicator (its attribution and alerts) are dropped when no record about it was written for the
 * series TTL. "Written" is the Kafka record's timestamp (the job stamps its outputs with the
 * window's end), not when the exporter read it, so records read while catching up on a topic do not
 * look fresh. A resolved alert is dropped after the TTL too; a firing one stays as long as its
 * communicator does.
 *
 * <p>Only a window at least as late as the one held replaces it, so a replayed or reordered older
 * window never shows as the latest. Thread-safe: the reader writes, scrapes read.
 */
public final class ExporterState {

  /** The latest window of one rank and when a record about it was last written. */
  public record RankEntry(RankWindow window, Instant updated) {}

  /**
   * One communicator: its latest attribution (null until one arrived), the latest window end seen
   * in any of its records, its alerts by id, and when a record about it was last written.
   */
  public record CommunicatorEntry(
      CommunicatorKey key,
      Attribution attribution,
      Instant latestWindowEnd,
      List<Alert> alerts,
      Instant updated) {}

  /** The reader's counts for one topic. */
  public record TopicStats(String topic, long records, long undecodable, Long consumerLag) {}

  /** What expired since start: ranks and communicators. */
  public record Expired(long ranks, long communicators) {}

  private static final class Communicator {
    Attribution attribution;
    Instant latestWindowEnd = Instant.EPOCH;
    final Map<String, AlertEntry> alerts = new LinkedHashMap<>();
    Instant updated = Instant.EPOCH;
  }

  private record AlertEntry(Alert alert, Instant updated) {}

  private static final class Topic {
    long records;
    long undecodable;
    Long consumerLag;
  }

  private final Duration ttl;
  private final Clock clock;
  private final Map<RankKey, RankEntry> ranks = new HashMap<>();
  private final Map<CommunicatorKey, Communicator> communicators = new HashMap<>();
  private final Map<DeadLetterReason, Long> deadLetters = new EnumMap<>(DeadLetterReason.class);
  private final Map<String, Topic> topics = new TreeMap<>();
  private long expiredRanks;
  private long expiredCommunicators;

  public ExporterState(Duration ttl, Clock clock) {
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("series TTL must be > 0, got " + ttl);
    }
    this.ttl = ttl;
    this.clock = clock;
    // Every reason from zero: the first dead letter is then an increase, not a new series.
    for (DeadLetterReason r : DeadLetterReason.values()) deadLetters.put(r, 0L);
  }

  public Duration ttl() {
    return ttl;
  }

  public Clock clock() {
    return clock;
  }

  /**
   * Takes in one decoded record of any output topic, written at {@code writtenAtMs} (the Kafka
   * record timestamp; 0 or less: now). Types the exporter does not show (snapshots) are ignored.
   */
  public synchronized void accept(SpecificRecord record, long writtenAtMs) {
    Instant written = writtenAtMs > 0 ? Instant.ofEpochMilli(writtenAtMs) : clock.instant();
    if (record instanceof RankWindow w) accept(w, written);
    else if (record instanceof Attribution a) accept(a, written);
    else if (record instanceof Alert a) accept(a, written);
    else if (record instanceof DeadLetter d) accept(d);
  }

  private void accept(RankWindow w, Instant written) {
    RankKey key = RankKey.of(w);
    RankEntry held = ranks.get(key);
    if (held == null || !w.getWindowEnd().isBefore(held.window().getWindowEnd())) {
      ranks.put(key, new RankEntry(w, latest(held == null ? null : held.updated(), written)));
    } else {
      ranks.put(key, new RankEntry(held.window(), latest(held.updated(), written)));
    }
    touch(communicator(CommunicatorKey.of(w)), w.getWindowEnd(), written);
  }

  private void accept(Attribution a, Instant written) {
    Communicator c = communicator(CommunicatorKey.of(a));
    if (c.attribution == null || !a.getWindowEnd().isBefore(c.attribution.getWindowEnd())) {
      c.attribution = a;
    }
    touch(c, a.getWindowEnd(), written);
  }

  private void accept(Alert a, Instant written) {
    if (a.getState() != AlertState.FIRING && a.getState() != AlertState.RESOLVED) return;
    Communicator c =
        communicator(new CommunicatorKey(a.getCluster(), a.getJob(), a.getCommunicator()));
    AlertEntry held = c.alerts.get(a.getAlertId());
    // The transitions of one alert come in order (one key, one partition); a record that is older
    // than the one held is a replay of an earlier transition.
    if (held == null || !a.getWindowEnd().isBefore(held.alert().getWindowEnd())) {
      c.alerts.put(a.getAlertId(), new AlertEntry(a, written));
    }
    touch(c, null, written);
  }

  private void accept(DeadLetter d) {
    deadLetters.merge(d.getReason(), 1L, Long::sum);
  }

  private Communicator communicator(CommunicatorKey key) {
    return communicators.computeIfAbsent(key, k -> new Communicator());
  }

  private static void touch(Communicator c, Instant windowEnd, Instant written) {
    if (windowEnd != null && windowEnd.isAfter(c.latestWindowEnd)) c.latestWindowEnd = windowEnd;
    c.updated = latest(c.updated, written);
  }

  private static Instant latest(Instant a, Instant b) {
    return a == null || b.isAfter(a) ? b : a;
  }

  /** Counts a record read from {@code topic}, decodable or not. */
  public synchronized void read(String topic, boolean decodable) {
    Topic t = topics.computeIfAbsent(topic, k -> new Topic());
    t.records++;
    if (!decodable) t.undecodable++;
  }

  /** The consumer's lag on {@code topic} (records behind the end, summed over partitions). */
  public synchronized void consumerLag(String topic, long lag) {
    topics.computeIfAbsent(topic, k -> new Topic()).consumerLag = lag;
  }

  /** Drops ranks, communicators and resolved alerts about which nothing was written for the TTL. */
  public synchronized void expire() {
    Instant cutoff = clock.instant().minus(ttl);
    for (Iterator<RankEntry> it = ranks.values().iterator(); it.hasNext(); ) {
      if (!it.next().updated().isAfter(cutoff)) {
        it.remove();
        expiredRanks++;
      }
    }
    for (Iterator<Communicator> it = communicators.values().iterator(); it.hasNext(); ) {
      Communicator c = it.next();
      if (!c.updated.isAfter(cutoff)) {
        it.remove();
        expiredCommunicators++;
        continue;
      }
      c.alerts
          .values()
          .removeIf(
              e -> e.alert().getState() == AlertState.RESOLVED && !e.updated().isAfter(cutoff));
    }
  }

  /** The latest window of every live rank, in key order. */
  public synchronized List<RankEntry> ranks() {
    expire();
    List<RankEntry> out = new ArrayList<>(ranks.values());
    out.sort(Comparator.comparing(e -> RankKey.of(e.window()).toString()));
    return out;
  }

  /** Every live communicator, in key order. */
  public synchronized List<CommunicatorEntry> communicators() {
    expire();
    List<CommunicatorEntry> out = new ArrayList<>(communicators.size());
    for (Map.Entry<CommunicatorKey, Communicator> e : communicators.entrySet()) {
      Communicator c = e.getValue();
      List<Alert> alerts = new ArrayList<>(c.alerts.size());
      for (AlertEntry a : c.alerts.values()) alerts.add(a.alert());
      out.add(
          new CommunicatorEntry(e.getKey(), c.attribution, c.latestWindowEnd, alerts, c.updated));
    }
    out.sort(Comparator.comparing(e -> e.key().toString()));
    return out;
  }

  /** Dead letters read since start, by reason (every reason, 0 when none came). */
  public synchronized Map<DeadLetterReason, Long> deadLetters() {
    return new EnumMap<>(deadLetters);
  }

  /** The reader's counts, by topic. */
  public synchronized List<TopicStats> topics() {
    List<TopicStats> out = new ArrayList<>();
    topics.forEach((k, t) -> out.add(new TopicStats(k, t.records, t.undecodable, t.consumerLag)));
    return out;
  }

  public synchronized Expired expired() {
    // As every read: the TTL first. A scrape reads the collectors in no fixed order, and without
    // this the count could be read before the series it counts were dropped in the same scrape.
    expire();
    return new Expired(expiredRanks, expiredCommunicators);
  }
}
