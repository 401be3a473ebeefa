package io.collscope.alerts;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DecodeException;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers the transitions of {@code collscope.alerts} to Alertmanager the way Prometheus does.
 *
 * <p>It keeps the latest transition per {@code alert_id} (the records' key, so all transitions of
 * one alert are in one partition, in order) and that state is the truth: a FIRING alert is sent at
 * once and then every {@code resend} interval with {@code endsAt} = now + 4 × resend, so that
 * Alertmanager, which forgets alerts that are not re-sent, keeps it, and resolves it by itself if
 * the forwarder dies. A RESOLVED alert is sent with {@code endsAt} = its {@code ends_at}, re-sent
 * every interval until {@code resolvedRetention} (15 min, as Prometheus) after it resolved, then
 * dropped. A transition read after its retention had already passed (while rebuilding the state
 * from the topic's beginning) is dropped unsent: Alertmanager resolved the firing alert by its
 * {@code endsAt} long ago.
 *
 * <p>Every due alert goes in one POST. A failed POST is retried after an exponential, bounded,
 * jittered back-off, and the retry carries every alert of the state, not only the due ones: an
 * Alertmanager that restarted lost them all. Nothing is dropped because a delivery failed.
 *
 * <p>{@link #accept} and {@link #tick} are the whole logic, driven by an injected clock (unit
 * tests); {@link #run} feeds them from a Kafka consumer.
 */
public final class AlertForwarder {

  private static final Logger LOG = LoggerFactory.getLogger(AlertForwarder.class);
  private static final AvroCodec<Alert> CODEC = AvroCodec.of(Alert.class);

  /** How long the start waits to have read the topic up to its end before it sends anyway. */
  static final Duration MAX_CATCH_UP = Duration.ofSeconds(30);

  static final Duration STATS_EVERY = Duration.ofSeconds(60);

  /**
   * @param resend how often every alert is sent again (Prometheus: resend delay)
   * @param resolvedRetention how long a resolved alert keeps being sent (Prometheus: 15 min)
   * @param backoff the wait after a failed delivery
   * @param generatorUrl sent as {@code generatorURL}; null: none
   */
  public record Config(
      Duration resend, Duration resolvedRetention, Backoff backoff, String generatorUrl) {

    public Config {
      if (resend.isNegative() || resend.isZero()) {
        throw new IllegalArgumentException("resend interval must be > 0, got " + resend);
      }
    }

    /**
     * The defaults around a resend interval: 15 min retention, back-off from min(500 ms, resend)
     * doubling up to the resend interval, jitter 0.5.
     */
    public static Config of(Duration resend, String generatorUrl) {
      Duration initial =
          resend.compareTo(Duration.ofMillis(500)) < 0 ? resend : Duration.ofMillis(500);
      return new Config(
          resend, Duration.ofMinutes(15), new Backoff(initial, resend, 0.5), generatorUrl);
    }
  }

  /**
   * Counters since start.
   *
   * @param transitions transitions read (FIRING or RESOLVED)
   * @param undecodable records that did not decode as an Alert
   * @param posts successful POSTs
   * @param alertsSent alerts in successful POSTs
   * @param failedAttempts failed POSTs
   * @param firing alerts firing now
   * @param resolved resolved alerts still being sent
   */
  public record Stats(
      long transitions,
      long undecodable,
      long posts,
      long alertsSent,
      long failedAttempts,
      int firing,
      int resolved) {}

  private static final class Entry {
    final Alert alert;
    final Instant readAt;
    Instant nextSend;
    boolean sent;

    Entry(Alert alert, Instant readAt) {
      this.alert = alert;
      this.readAt = readAt;
      this.nextSend = readAt;
    }

    boolean firing() {
      return alert.getState() == AlertState.FIRING;
    }

    /** When it resolved: ends_at, or when it was read if the producer left it out. */
    Instant resolvedAt() {
      return alert.getEndsAt() != null ? alert.getEndsAt() : readAt;
    }
  }

  private final AlertSink sink;
  private final Config config;
  private final Clock clock;
  private final DoubleSupplier random;
  private final Map<String, Entry> state = new LinkedHashMap<>();
  private Instant retryAt = Instant.MIN;
  private int consecutiveFailures;
  private long transitions;
  private long undecodable;
  private long posts;
  private long alertsSent;
  private long failedAttempts;
  private Instant nextStatsLog;
  private volatile boolean stop;
  private volatile Consumer<?, ?> running;

  public AlertForwarder(AlertSink sink, Config config, Clock clock, DoubleSupplier random) {
    this.sink = sink;
    this.config = config;
    this.clock = clock;
    this.random = random;
    this.nextStatsLog = clock.instant().plus(STATS_EVERY);
  }

  public AlertForwarder(AlertSink sink, Config config) {
    this(sink, config, Clock.systemUTC(), () -> ThreadLocalRandom.current().nextDouble());
  }

  /** Takes a transition in: it replaces the alert's previous one and is due at once. */
  public synchronized void accept(Alert a) {
    if (a.getState() != AlertState.FIRING && a.getState() != AlertState.RESOLVED) {
      LOG.warn(
          "alert {}: state {} is neither FIRING nor RESOLVED, ignored",
          a.getAlertId(),
          a.getState());
      return;
    }
    transitions++;
    state.put(a.getAlertId(), new Entry(a, clock.instant()));
    LOG.info(
        "{} {} {} ({}): {}",
        a.getState(),
        AlertMapping.alertname(a.getKind()),
        a.getLabels(),
        a.getAlertId(),
        a.getMessage());
  }

  /**
   * Drops resolved alerts past their retention, then sends whatever is due unless a back-off is
   * running; returns when something is due next.
   */
  public synchronized Instant tick() {
    Instant now = clock.instant();
    expire(now);
    if (!now.isBefore(nextStatsLog)) {
      nextStatsLog = now.plus(STATS_EVERY);
      LOG.info("alert forwarder: {}", stats());
    }
    if (now.isBefore(retryAt)) return retryAt;
    List<Entry> due = new ArrayList<>();
    for (Entry e : state.values()) if (!now.isBefore(e.nextSend)) due.add(e);
    if (!due.isEmpty()) deliver(due, now);
    return nextDue();
  }

  private void deliver(List<Entry> due, Instant now) {
    List<AlertmanagerAlert> batch = new ArrayList<>(due.size());
    Instant firingEnd = now.plus(config.resend().multipliedBy(4));
    for (Entry e : due) {
      Instant endsAt = e.firing() ? firingEnd : e.resolvedAt();
      batch.add(AlertMapping.toAlertmanager(e.alert, endsAt, config.generatorUrl()));
    }
    try {
      sink.send(batch);
    } catch (IOException | RuntimeException ex) {
      consecutiveFailures++;
      failedAttempts++;
      Duration wait = config.backoff().delay(consecutiveFailures, random.getAsDouble());
      retryAt = now.plus(wait);
      // The retry carries the whole state: an Alertmanager that restarted has none of it.
      for (Entry e : state.values()) if (e.nextSend.isAfter(now)) e.nextSend = now;
      LOG.warn(
          "sending {} alert(s) failed (attempt {}), retry in {} ms: {}",
          batch.size(),
          consecutiveFailures,
          wait.toMillis(),
          ex.toString());
      return;
    }
    if (consecutiveFailures > 0) {
      LOG.info("Alertmanager takes alerts again after {} failed attempt(s)", consecutiveFailures);
    }
    consecutiveFailures = 0;
    retryAt = Instant.MIN;
    posts++;
    alertsSent += batch.size();
    Instant next = now.plus(config.resend());
    for (Entry e : due) {
      e.nextSend = next;
      e.sent = true;
    }
  }

  private void expire(Instant now) {
    for (Iterator<Entry> it = state.values().iterator(); it.hasNext(); ) {
      Entry e = it.next();
      if (e.firing()) continue;
      Instant until = e.resolvedAt().plus(config.resolvedRetention());
      boolean staleWhenRead = !e.readAt.isBefore(until);
      if (!now.isBefore(until) && (e.sent || staleWhenRead)) {
        it.remove();
        LOG.debug("resolved alert {} dropped after its retention", e.alert.getAlertId());
      }
    }
  }

  private Instant nextDue() {
    Instant next = Instant.MAX;
    for (Entry e : state.values()) if (e.nextSend.isBefore(next)) next = e.nextSend;
    return retryAt.isAfter(next) ? retryAt : next;
  }

  public synchronized Stats stats() {
    int firing = 0;
    for (Entry e : state.values()) if (e.firing()) firing++;
    return new Stats(
        transitions, undecodable, posts, alertsSent, failedAttempts, firing, state.size() - firing);
  }

  /** Takes in one record of the alerts topic; an undecodable one is counted and logged. */
  public void accept(ConsumerRecord<byte[], byte[]> r) {
    try {
      accept(CODEC.decode(r.value()));
    } catch (DecodeException e) {
      synchronized (this) {
        undecodable++;
      }
      LOG.warn(
          "{}/{}@{}: not an Alert record, skipped: {}",
          r.topic(),
          r.partition(),
          r.offset(),
          e.getMessage());
    }
  }

  /**
   * Reads {@code topic} with {@code consumer} (read_committed, positioned at the beginning to
   * rebuild the state) and delivers, until {@link #stop()}. Nothing is sent before the topic was
   * read up to the end it had at start (or {@link #MAX_CATCH_UP} passed), so that an alert that
   * fired and resolved long ago is not sent as firing first.
   */
  public void run(Consumer<byte[], byte[]> consumer, String topic) {
    running = consumer;
    consumer.subscribe(List.of(topic));
    Instant catchUpUntil = clock.instant().plus(MAX_CATCH_UP);
    Map<TopicPartition, Long> ends = null;
    boolean caughtUp = false;
    Instant next = Instant.MIN;
    try {
      while (!stop) {
        long waitMs = 200;
        if (caughtUp) {
          long untilDue = Duration.between(clock.instant(), next).toMillis();
          waitMs = Math.max(10, Math.min(200, untilDue));
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(waitMs))) {
          accept(r);
        }
        if (!caughtUp) {
          Set<TopicPartition> assigned = consumer.assignment();
          if (!assigned.isEmpty() && ends == null) ends = consumer.endOffsets(assigned);
          caughtUp =
              (ends != null && reached(consumer, ends)) || !clock.instant().isBefore(catchUpUntil);
          if (caughtUp) LOG.info("alert state rebuilt from {}: {}", topic, stats());
          else continue;
        }
        next = tick();
      }
    } catch (WakeupException e) {
      if (!stop) throw e;
    } finally {
      running = null;
    }
  }

  private static boolean reached(Consumer<?, ?> c, Map<TopicPartition, Long> ends) {
    for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
      if (c.position(e.getKey()) < e.getValue()) return false;
    }
    return true;
  }

  /** Makes {@link #run} return soon (from any thread). */
  public void stop() {
    stop = true;
    Consumer<?, ?> c = running;
    if (c != null) c.wakeup();
  }
}
