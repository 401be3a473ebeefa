package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.EmbeddedKafkaCluster;
import io.collscope.broker.TopicDrainer;
import io.collscope.flink.fuzz.FuzzedRecords;
import io.collscope.flink.testing.CanaryFeed;
import io.collscope.schema.DeliveryCount;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The job on a replicated Kafka cluster (three KRaft nodes, each its own JVM; every topic three
 * replicas, {@code min.insync.replicas=2}) while, mid-run, (1) the leader of the snapshot partition
 * and (2) the transaction coordinator of the job's exactly-once sinks are SIGKILLed, each started
 * again and caught up before the next. A {@link CanaryFeed} (idempotent, acks=all) feeds it.
 *
 * <p>Counted, per fault: snapshots produced (the feed's own acknowledged count), consumed (every
 * {@code (cluster, job, communicator, rank, boot, seq)} read back read_committed), lost, duplicated
 * in the topic (before the job's dedupe) and after it (a rank window committed twice, or a window
 * whose calls count a snapshot twice: each canary snapshot adds exactly {@link
 * FuzzedRecords#CANARY_CALLS}); rank windows expected against those committed; alert transitions
 * (the canary has no culprit: none is expected, each one seen is counted); the time from the kill
 * to the first committed window that started after it. Rows go to {@code target/reliability/}.
 */
class ReplicatedKafkaITCase {

  private static final Path dir = Path.of("target/replicated-kafka").toAbsolutePath();
  private static final Duration WINDOW = Duration.ofSeconds(1);
  private static final Duration FEED_INTERVAL = Duration.ofMillis(100);

  @RegisterExtension
  static final MiniClusterExtension FLINK =
      new MiniClusterExtension(
          new org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration.Builder()
              .setNumberTaskManagers(1)
              .setNumberSlotsPerTaskManager(2)
              .build());

  /** A fault, when it was injected, when a window after it was committed, and to which node. */
  private record Phase(String fault, String injectedHow, long injectedAt, long recoveredAt) {}

  @Test
  void leaderAndTransactionCoordinatorSigkilledLoseNothingAndDuplicateNothing() throws Exception {
    Files.createDirectories(dir);
    List<Phase> phases = new ArrayList<>();
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.startTemporary(3)) {
      String run = EmbeddedKafka.freshTopic("replicated");
      JobOptions options =
          AttributionScenarios.testOptions(kafka.bootstrapServers(), run, WINDOW)
              .with(JobOptions.CHECKPOINT_DIR, dir.resolve("checkpoints").toUri().toString());
      String snapshots = options.get(JobOptions.SNAPSHOT_TOPIC);
      List<String> outputs =
          List.of(
              options.get(JobOptions.RANK_WINDOW_TOPIC),
              options.get(JobOptions.ATTRIBUTION_TOPIC),
              options.get(JobOptions.DEADLETTER_TOPIC),
              options.get(JobOptions.ALERT_TOPIC));
      // One snapshot partition: one leader to kill, and the feed and the watermark share one log.
      kafka.createTopics(1, snapshots);
      kafka.createTopics(4, outputs.toArray(String[]::new));
      for (List<TopicPartitionInfo> ps : kafka.describe(outputs).values()) {
        assertThat(ps).allSatisfy(p -> assertThat(p.replicas()).hasSize(3));
      }

      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      Configuration restart = new Configuration();
      restart.setString("restart-strategy.type", "fixed-delay");
      restart.setString("restart-strategy.fixed-delay.attempts", "1000");
      restart.setString("restart-strategy.fixed-delay.delay", "1 s");
      env.configure(restart);
      env.setParallelism(2);
      AttributionJob.configure(env, options);
      AttributionJob.topology(
          env, AttributionJob.kafkaSource(options), AttributionJob.kafkaSinks(options), options);
      JobClient job = env.executeAsync(AttributionJob.JOB_NAME);
      try (CanaryFeed feed =
          new CanaryFeed(kafka.bootstrapServers(), snapshots, "feed", FEED_INTERVAL)) {
        awaitWindowAfter(kafka, options, feed.communicator(), System.currentTimeMillis());

        int leader = kafka.leaderOf(snapshots, 0);
        long t = System.currentTimeMillis();
        kafka.kill(leader);
        phases.add(
            new Phase(
                "Kafka partition leader SIGKILLed (node " + leader + " of 3, RF 3, min ISR 2)",
                "`ReplicatedKafkaITCase` (3 KRaft nodes, canary feed 2 ranks × 10/s, 1 s windows)",
                t,
                awaitWindowAfter(kafka, options, feed.communicator(), t)));
        kafka.restart(leader);
        Duration caughtUp = kafka.awaitFullyReplicated(Duration.ofSeconds(120));
        System.out.println("node " + leader + " back in every ISR after " + caughtUp);
        awaitWindowAfter(kafka, options, feed.communicator(), System.currentTimeMillis());

        Map<Integer, Integer> coordinators = kafka.transactionCoordinators(run);
        assertThat(coordinators).as("coordinators of the job's transactions").isNotEmpty();
        int coordinator =
            coordinators.entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .orElseThrow()
                .getKey();
        t = System.currentTimeMillis();
        kafka.kill(coordinator);
        phases.add(
            new Phase(
                "Kafka transaction coordinator of the job's sinks SIGKILLed (node "
                    + coordinator
                    + ", "
                    + coordinators.get(coordinator)
                    + " of the job's transactional ids)",
                "`ReplicatedKafkaITCase` (the same run)",
                t,
                awaitWindowAfter(kafka, options, feed.communicator(), t)));
        kafka.restart(coordinator);
        kafka.awaitFullyReplicated(Duration.ofSeconds(120));
        awaitWindowAfter(kafka, options, feed.communicator(), System.currentTimeMillis());
        // A few windows more, so the last fault's phase has windows the watermark has closed.
        Thread.sleep(4000);
        feed.stop();
        assertThat(feed.acknowledged())
            .as("the feed's sends all acknowledged")
            .isEqualTo(feed.sent());
        writeRows(kafka, options, feed, phases);
      } finally {
        job.cancel().get();
      }
    }
  }

  /**
   * Counts everything the run left and writes one row per fault; asserts 0 lost and 0 duplicated
   * after the job, every expected window, no alert.
   */
  private static void writeRows(
      EmbeddedKafkaCluster kafka, JobOptions options, CanaryFeed feed, List<Phase> phases)
      throws Exception {
    List<Long> fed = feed.eventTimes(); // seq i + 1 at fed.get(i), both ranks
    long w = WINDOW.toMillis();
    long cutoff = fed.get(fed.size() - 1) - 1000; // windows the watermark has certainly closed
    // Expected per (rank, window end): the calls of its snapshots.
    Map<String, Long> expectedCalls = new TreeMap<>();
    Map<String, Long> windowEnd = new HashMap<>();
    for (int i = 0; i < fed.size(); i++) {
      long end = (fed.get(i) / w + 1) * w;
      if (end > cutoff) continue;
      for (int r = 0; r < CanaryFeed.RANKS; r++) {
        String k = "feed/" + r + "@" + end;
        // Every snapshot adds CANARY_CALLS, the first one too (seq 1: a delta from zero).
        expectedCalls.merge(k, FuzzedRecords.CANARY_CALLS, Long::sum);
        windowEnd.put(k, end);
      }
    }

    List<CounterSnapshot> readBack = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.SNAPSHOT_TOPIC),
            Duration.ofSeconds(60),
            l -> l.size() >= feed.acknowledged())) {
      CounterSnapshot s = AttributionScenarios.decode(CounterSnapshot.class, r.value());
      if (s.getCommunicator().equals(feed.communicator())) readBack.add(s);
    }
    Map<String, List<RankWindow>> windows = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            Duration.ofSeconds(60),
            l -> l.size() >= expectedCalls.size())) {
      RankWindow rw = AttributionScenarios.decode(RankWindow.class, r.value());
      if (!rw.getCommunicator().equals(feed.communicator())) continue;
      String k = "feed/" + rw.getRank() + "@" + rw.getWindowEnd().toEpochMilli();
      windows.computeIfAbsent(k, x -> new ArrayList<>()).add(rw);
    }
    List<Alert> alerts = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.ALERT_TOPIC),
            Duration.ofSeconds(5),
            l -> false)) {
      alerts.add(AttributionScenarios.decode(Alert.class, r.value()));
    }

    List<String> rows = new ArrayList<>();
    long lostTotal = 0;
    long dupAfterTotal = 0;
    long missingWindows = 0;
    for (int i = 0; i < phases.size(); i++) {
      Phase p = phases.get(i);
      long from = p.injectedAt();
      long to = i + 1 < phases.size() ? phases.get(i + 1).injectedAt() : Long.MAX_VALUE;
      Set<String> produced = new HashSet<>();
      for (int s = 0; s < fed.size(); s++) {
        if (fed.get(s) < from || fed.get(s) >= to) continue;
        for (int r = 0; r < CanaryFeed.RANKS; r++) {
          produced.add(DeliveryCount.key("it", "it", "feed", r, feed.bootId(), s + 1));
        }
      }
      List<CounterSnapshot> phaseReadBack = new ArrayList<>();
      for (CounterSnapshot s : readBack) {
        long e = s.getEventTime().toEpochMilli();
        if (e >= from && e < to) phaseReadBack.add(s);
      }
      DeliveryCount d = DeliveryCount.of(produced, phaseReadBack);
      long expectedWindows = 0;
      long seenWindows = 0;
      long dupAfter = 0;
      long lostAfter = 0;
      for (Map.Entry<String, Long> e : expectedCalls.entrySet()) {
        long end = windowEnd.get(e.getKey());
        if (end <= from || end > Math.min(to, cutoff)) continue;
        expectedWindows++;
        List<RankWindow> got = windows.getOrDefault(e.getKey(), List.of());
        if (got.isEmpty()) {
          lostAfter += e.getValue() / FuzzedRecords.CANARY_CALLS;
          continue;
        }
        seenWindows++;
        long calls = 0;
        for (RankWindow rw : got) calls += rw.getCalls();
        // A window committed twice counts its snapshots twice; so does a snapshot the dedupe let
        // through: either way, the calls beyond the expected are snapshots counted twice.
        long excess = calls - e.getValue();
        if (excess > 0) dupAfter += excess / FuzzedRecords.CANARY_CALLS;
        else lostAfter += -excess / FuzzedRecords.CANARY_CALLS;
      }
      missingWindows += expectedWindows - seenWindows;
      long phaseAlerts =
          alerts.stream()
              .filter(
                  a ->
                      a.getWindowEnd().toEpochMilli() > from
                          && a.getWindowEnd().toEpochMilli() <= to)
              .count();
      lostTotal += d.lost().size() + lostAfter;
      dupAfterTotal += dupAfter;
      String recovery =
          String.format(Locale.ROOT, "%.1f s", (p.recoveredAt() - p.injectedAt()) / 1000.0);
      rows.add(
          String.join(
              "\t",
              p.fault(),
              p.injectedHow(),
              d.produced() + " snapshots (the feed's acknowledged count)",
              d.consumed() + " read back (read_committed, " + d.records() + " records)",
              d.lost().size() + " in the topic, " + lostAfter + " in the job's windows",
              d.duplicated() + " in the topic, " + dupAfter + " after the job's dedupe",
              seenWindows + " of " + expectedWindows + " rank windows",
              phaseAlerts + " of 0 alert transitions (no culprit in the feed)",
              recovery));
      System.out.println(rows.get(rows.size() - 1));
      assertThat(d.lost()).as("%s: acknowledged snapshots not read back", p.fault()).isEmpty();
    }
    Path out = Path.of("target", "reliability", "ReplicatedKafkaITCase.tsv");
    Files.createDirectories(out.getParent());
    Files.write(out, rows);
    assertThat(missingWindows).as("rank windows never committed").isZero();
    assertThat(lostTotal).as("snapshots lost").isZero();
    assertThat(dupAfterTotal).as("snapshots counted twice after the job's dedupe").isZero();
    assertThat(alerts).as("alerts of a feed without a culprit").isEmpty();
  }

  /**
   * Waits until a committed attribution of {@code communicator} covers a window that started after
   * {@code t}; returns when it was seen (the job is producing again).
   */
  private static long awaitWindowAfter(
      EmbeddedKafkaCluster kafka, JobOptions options, String communicator, long t) {
    List<ConsumerRecord<byte[], byte[]>> recs =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.ATTRIBUTION_TOPIC),
            Duration.ofSeconds(180),
            l -> l.stream().anyMatch(r -> startsAfter(r, communicator, t)));
    long seen = System.currentTimeMillis();
    assertThat(recs)
        .as("a window of %s after %d; see %s", communicator, t, dir)
        .anyMatch(r -> startsAfter(r, communicator, t));
    return seen;
  }

  private static boolean startsAfter(
      ConsumerRecord<byte[], byte[]> r, String communicator, long t) {
    Attribution a = AttributionScenarios.decode(Attribution.class, r.value());
    return a.getCommunicator().equals(communicator) && a.getWindowStart().toEpochMilli() >= t;
  }
}
