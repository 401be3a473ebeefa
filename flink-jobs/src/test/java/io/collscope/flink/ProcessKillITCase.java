package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.DeadLetter;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.flink.history.HistoryLayout;
import io.collscope.flink.testing.CanaryFeed;
import io.collscope.flink.testing.EmitterProcess;
import io.collscope.flink.testing.SessionCluster;
import io.collscope.schema.DeliveryCount;
import io.collscope.schema.WindowCount;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.flink.api.common.JobID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * Processes of the pipeline SIGKILLed while it runs, on a real session cluster (JobManager and
 * TaskManager JVMs) and the real broker, with a {@link CanaryFeed} whose every snapshot is known:
 *
 * <ol>
 *   <li>the TaskManager is killed and a new one started: the job restarts from its last checkpoint;
 *   <li>the JobManager (and its TaskManager) are killed, a new cluster is started and the job is
 *       submitted again from the latest retained checkpoint ({@code flink run -s});
 *   <li>an emitter process is killed and started again on the same spool: its next boot.
 * </ol>
 *
 * <p>Then every (rank, window) and (communicator, window) of the feed is in the output topics, read
 * read_committed, and in the Parquet history exactly once: nothing lost, nothing twice. The
 * restarted emitter's new boot is taken as a new baseline: no dead letter, no negative window. Each
 * phase's counts and recovery time are written to {@code target/reliability/} for
 * docs/RELIABILITY.md's table.
 */
class ProcessKillITCase {

  private static final Path dir = Path.of("target/process-kill").toAbsolutePath();
  private static final Duration WINDOW = Duration.ofSeconds(1);
  private static final Duration FEED_INTERVAL = Duration.ofMillis(100);

  /** A fault, when it was injected, and when the job's committed output showed it recovered. */
  private record Phase(String fault, String injectedHow, long injectedAt, long recoveredAt) {}

  @Test
  void killedTaskManagerJobManagerAndEmitterLoseNothingAndDuplicateNothing() throws Exception {
    Path checkpoints = dir.resolve("checkpoints");
    Path history = dir.resolve("history");
    Map<String, String> conf = new TreeMap<>();
    conf.put("execution.checkpointing.dir", checkpoints.toUri().toString());
    // What lets an operator resume after the JobManager is gone: checkpoints outlive the job.
    conf.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
    conf.put("restart-strategy.type", "fixed-delay");
    conf.put("restart-strategy.fixed-delay.attempts", "1000");
    conf.put("restart-strategy.fixed-delay.delay", "1 s");
    // A dead TaskManager is noticed by failed heartbeat RPCs within a few seconds.
    conf.put("heartbeat.interval", "1000");
    conf.put("heartbeat.timeout", "10000");
    List<Phase> phases = new ArrayList<>();
    try (SessionCluster cluster = SessionCluster.start(dir, conf);
        EmbeddedKafka kafka = EmbeddedKafka.startTemporary()) {
      String run = EmbeddedKafka.freshTopic("kill");
      JobOptions options =
          AttributionScenarios.testOptions(kafka.bootstrapServers(), run, WINDOW)
              .with(JobOptions.HISTORY_PATH, history.toUri().toString());
      String snapshots = options.get(JobOptions.SNAPSHOT_TOPIC);
      // One partition: the feed, the emitter and the job's watermark share one ordered log.
      kafka.createTopics(1, snapshots);
      List<String> args = jobArgs(options);

      Path spool = dir.resolve("spool");
      Path emitterLog = dir.resolve("emitter.log");
      try (CanaryFeed feed =
          new CanaryFeed(kafka.bootstrapServers(), snapshots, "feed", FEED_INTERVAL)) {
        // The emitter runs while the job is submitted: it is killed mid-run and started again on
        // its spool; the job reads the topic from the beginning, both boots included.
        Process first = startEmitter(kafka, snapshots, spool, 0, emitterLog);
        JobID job = cluster.submit(args, null);
        awaitSnapshots(kafka, snapshots, "emitter", 0, 6);
        long t = System.currentTimeMillis();
        first.destroyForcibly();
        assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
        Process second = startEmitter(kafka, snapshots, spool, 4, emitterLog);
        awaitSnapshotsAfter(kafka, snapshots, "emitter", t);
        phases.add(
            new Phase(
                "emitter SIGKILLed, started again on its spool",
                "`ProcessKillITCase` (`EmitterProcess`: 2 CPU ranks, spool, 200 ms)",
                t,
                System.currentTimeMillis()));

        cluster.awaitRunning(job);
        // A standby TaskManager, as a cluster keeps one: the restart needs not wait for a JVM.
        cluster.startTaskManager();
        cluster.awaitTaskManagers(2);
        awaitWindowAfter(kafka, options, feed.communicator(), System.currentTimeMillis());

        t = System.currentTimeMillis();
        cluster.killOldestTaskManager();
        phases.add(
            new Phase(
                "TaskManager SIGKILLed (a standby one registered)",
                "`ProcessKillITCase` (session cluster, 1 s windows, 1 s checkpoints)",
                t,
                awaitWindowAfter(kafka, options, feed.communicator(), t)));
        cluster.startTaskManager(); // the next standby, for the resumed job after the JobManager

        t = System.currentTimeMillis();
        cluster.killJobManager();
        Path latest = SessionCluster.latestCheckpoint(checkpoints, job);
        cluster.startJobManager();
        JobID resumed = cluster.submit(args, latest);
        cluster.awaitRunning(resumed);
        phases.add(
            new Phase(
                "JobManager SIGKILLed, started again, job resubmitted from the latest retained"
                    + " checkpoint",
                "`ProcessKillITCase` (`flink run -s chk-N`)",
                t,
                awaitWindowAfter(kafka, options, feed.communicator(), t)));

        assertThat(second.waitFor(60, TimeUnit.SECONDS)).as("see %s", emitterLog).isTrue();
        assertThat(second.exitValue())
            .as("the restarted emitter delivered everything; see %s", emitterLog)
            .isZero();
        feed.stop();

        List<Long> fed = feed.eventTimes();
        long lastFed = fed.get(fed.size() - 1);
        // Windows the watermark (last record minus the out-of-orderness) has certainly closed.
        long cutoff = lastFed - 1000;
        Map<String, Long> expected = new TreeMap<>(); // key -> window end
        for (long e : fed) {
          long end = (e / WINDOW.toMillis() + 1) * WINDOW.toMillis();
          if (end > cutoff) continue;
          for (int r = 0; r < CanaryFeed.RANKS; r++) expected.put("feed/" + r + "@" + end, end);
        }
        assertThat(expected).hasSizeGreaterThan(40);

        Map<String, Integer> inTopic = rankWindowsInTopic(kafka, options, expected.keySet());
        Map<String, Integer> attributions = attributionsInTopic(kafka, options, expected);
        Map<String, Integer> inHistory = rankWindowsInHistory(history, expected.keySet());
        Map<String, Integer> attributionsInHistory = attributionsInHistory(history, expected);

        assertExactlyOnce("rank windows in the topic", expected.keySet(), inTopic);
        assertExactlyOnce(
            "attributions in the topic", communicatorWindows(expected.keySet()), attributions);
        assertExactlyOnce("rank windows in the history", expected.keySet(), inHistory);
        assertExactlyOnce(
            "attributions in the history",
            communicatorWindows(expected.keySet()),
            attributionsInHistory);

        String emitterCounts =
            assertEmitterRebootTakenAsNewBaseline(kafka, options, snapshots, emitterLog);
        writeRows(phases, expected, inTopic, inHistory, cutoff, emitterCounts);
      }
    }
  }

  /** The job's arguments: every option spelled out, as a user would pass them. */
  static List<String> jobArgs(JobOptions options) {
    List<String> args = new ArrayList<>();
    for (String name : JobOptions.DEFAULTS.keySet()) {
      args.add("--" + name);
      args.add(options.get(name));
    }
    return args;
  }

  /**
   * Waits until a committed attribution of {@code communicator} covers a window that started after
   * {@code t}; returns when it was seen (the job is producing again).
   */
  private static long awaitWindowAfter(
      EmbeddedKafka kafka, JobOptions options, String communicator, long t) {
    List<ConsumerRecord<byte[], byte[]>> recs =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.ATTRIBUTION_TOPIC),
            Duration.ofSeconds(120),
            l ->
                l.stream()
                    .map(r -> AttributionScenarios.decode(Attribution.class, r.value()))
                    .anyMatch(
                        a ->
                            a.getCommunicator().equals(communicator)
                                && a.getWindowStart().toEpochMilli() >= t));
    long seen = System.currentTimeMillis();
    assertThat(recs)
        .as("a window of %s after %d; see %s", communicator, t, dir)
        .anyMatch(
            r -> {
              Attribution a = AttributionScenarios.decode(Attribution.class, r.value());
              return a.getCommunicator().equals(communicator)
                  && a.getWindowStart().toEpochMilli() >= t;
            });
    return seen;
  }

  private static Process startEmitter(
      EmbeddedKafka kafka, String topic, Path spool, int seconds, Path log) throws Exception {
    return EmitterProcess.start(
        kafka.bootstrapServers(), topic, spool, "emitter", 2, Duration.ofMillis(200), seconds, log);
  }

  /** Waits until a snapshot of {@code communicator} taken after {@code t} is in the topic. */
  private static void awaitSnapshotsAfter(
      EmbeddedKafka kafka, String topic, String communicator, long t) {
    assertThat(
            TopicDrainer.drain(
                kafka.bootstrapServers(),
                topic,
                Duration.ofSeconds(60),
                l ->
                    l.stream()
                        .map(r -> AttributionScenarios.decode(CounterSnapshot.class, r.value()))
                        .anyMatch(
                            s ->
                                s.getCommunicator().equals(communicator)
                                    && s.getEventTime().toEpochMilli() > t)))
        .as("a snapshot of %s after %d", communicator, t)
        .isNotEmpty();
  }

  private static void awaitSnapshots(
      EmbeddedKafka kafka, String topic, String communicator, int rank, long seq) {
    TopicDrainer.drain(
        kafka.bootstrapServers(),
        topic,
        Duration.ofSeconds(60),
        l ->
            l.stream()
                .map(r -> AttributionScenarios.decode(CounterSnapshot.class, r.value()))
                .anyMatch(
                    s ->
                        s.getCommunicator().equals(communicator)
                            && s.getRank() == rank
                            && s.getSeq() >= seq));
  }

  /** "feed/0@END" and "feed/1@END" → "feed@END". */
  private static Set<String> communicatorWindows(Set<String> rankKeys) {
    Set<String> out = new TreeSet<>();
    for (String k : rankKeys) out.add(k.replaceFirst("/\\d+@", "@"));
    return out;
  }

  private static Map<String, Integer> rankWindowsInTopic(
      EmbeddedKafka kafka, JobOptions options, Set<String> expected) {
    return countTopic(
        kafka,
        options.get(JobOptions.RANK_WINDOW_TOPIC),
        expected,
        b -> {
          RankWindow w = AttributionScenarios.decode(RankWindow.class, b);
          return w.getCommunicator() + "/" + w.getRank() + "@" + w.getWindowEnd().toEpochMilli();
        });
  }

  private static Map<String, Integer> attributionsInTopic(
      EmbeddedKafka kafka, JobOptions options, Map<String, Long> expected) {
    return countTopic(
        kafka,
        options.get(JobOptions.ATTRIBUTION_TOPIC),
        communicatorWindows(expected.keySet()),
        b -> {
          Attribution a = AttributionScenarios.decode(Attribution.class, b);
          return a.getCommunicator() + "@" + a.getWindowEnd().toEpochMilli();
        });
  }

  /**
   * How often each key of the feed is in the topic (read_committed), once every expected key is
   * there or a minute passed.
   */
  private static Map<String, Integer> countTopic(
      EmbeddedKafka kafka, String topic, Set<String> expected, Function<byte[], String> key) {
    Map<String, Integer> counts = new HashMap<>();
    TopicDrainer.drain(
        kafka.bootstrapServers(),
        topic,
        Duration.ofSeconds(60),
        l -> {
          counts.clear();
          for (ConsumerRecord<byte[], byte[]> r : l) {
            String k = key.apply(r.value());
            if (k.startsWith("feed")) counts.merge(k, 1, Integer::sum);
          }
          return counts.keySet().containsAll(expected);
        });
    return counts;
  }

  private static Map<String, Integer> rankWindowsInHistory(Path history, Set<String> expected)
      throws Exception {
    return countHistory(
        history,
        HistoryLayout.RANK_WINDOWS,
        "communicator || '/' || rank || '@' || epoch_ms(window_end)",
        expected);
  }

  private static Map<String, Integer> attributionsInHistory(
      Path history, Map<String, Long> expected) throws Exception {
    return countHistory(
        history,
        HistoryLayout.ATTRIBUTIONS,
        "communicator || '@' || epoch_ms(window_end)",
        communicatorWindows(expected.keySet()));
  }

  /**
   * How often each key of the feed is in the history's committed files (DuckDB over the layout's
   * glob), once every expected key is there or a minute passed: files are committed by the
   * checkpoint after their windows.
   */
  private static Map<String, Integer> countHistory(
      Path history, String table, String keyExpr, Set<String> expected) throws Exception {
    String glob = history.resolve(HistoryLayout.glob(table)).toString();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Map<String, Integer> counts = new HashMap<>();
    while (true) {
      counts.clear();
      try (Connection c = DriverManager.getConnection("jdbc:duckdb:");
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT "
                      + keyExpr
                      + " AS k, count(*) FROM read_parquet('"
                      + glob
                      + "', union_by_name = true) WHERE communicator = 'feed' GROUP BY ALL")) {
        while (rs.next()) counts.put(rs.getString(1), rs.getInt(2));
      }
      if (counts.keySet().containsAll(expected) || System.nanoTime() > deadline) return counts;
      Thread.sleep(500);
    }
  }

  private static void assertExactlyOnce(
      String what, Set<String> expected, Map<String, Integer> counts) {
    List<String> missing = new ArrayList<>();
    for (String k : expected) if (!counts.containsKey(k)) missing.add(k);
    Map<String, Integer> twice = new TreeMap<>();
    counts.forEach(
        (k, n) -> {
          if (n > 1) twice.put(k, n);
        });
    assertThat(missing).as("%s: lost (of %d); see %s", what, expected.size(), dir).isEmpty();
    assertThat(twice).as("%s: more than once; see %s", what, dir).isEmpty();
  }

  /**
   * The emitter's two boots: both in the topic, the second taken as a new baseline (a missed boot
   * change would make its counters, restarted from zero, go backwards: dead letters), no window
   * with a negative count or time, and windows of the second boot.
   */
  private static String assertEmitterRebootTakenAsNewBaseline(
      EmbeddedKafka kafka, JobOptions options, String snapshots, Path emitterLog)
      throws java.io.IOException {
    // Produced: the emitter's own count, one line per snapshot in its spool (EmitterProcess), so
    // what a kill left unsent, a tail after a boot's highest sequence in the topic included, shows.
    Set<String> produced = new TreeSet<>();
    for (String line : Files.readAllLines(emitterLog)) {
      String[] f = line.split(" ");
      if (f.length == 4 && f[0].equals("appended")) {
        produced.add(
            DeliveryCount.key(
                "it", "it", "emitter", Integer.parseInt(f[2]), f[1], Long.parseLong(f[3])));
      }
    }
    List<CounterSnapshot> readBack = new ArrayList<>();
    Map<Integer, Set<String>> boots = new TreeMap<>();
    Map<String, Long> bootStart = new HashMap<>();
    // Per (rank, boot): the sequences in the topic; a gap below the highest is a lost snapshot.
    Map<String, Set<Long>> seqs = new TreeMap<>();
    long records = 0;
    // The emitter's windows a snapshot reached after the watermark could have passed them: the
    // restarted emitter resends what its spool holds unacknowledged, behind the feed's newer
    // records in the one partition. Such a window fired at the watermark without that snapshot
    // (a window fires once: LateRankTrigger), so its calls are not compared; every other is.
    long outOfOrderness = options.duration(JobOptions.OUT_OF_ORDERNESS).toMillis();
    long newest = Long.MIN_VALUE;
    Set<String> firstSeen = new HashSet<>();
    Set<String> lateWindows = new TreeSet<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            kafka.bootstrapServers(), snapshots, Duration.ofSeconds(5), l -> false)) {
      CounterSnapshot s = AttributionScenarios.decode(CounterSnapshot.class, r.value());
      long t = s.getEventTime().toEpochMilli();
      long watermarkCouldBe = newest == Long.MIN_VALUE ? Long.MIN_VALUE : newest - outOfOrderness;
      newest = Math.max(newest, t);
      if (!s.getCommunicator().equals("emitter")) continue;
      long end = (Math.floorDiv(t, WINDOW.toMillis()) + 1) * WINDOW.toMillis();
      if (firstSeen.add(DeliveryCount.key(s)) && watermarkCouldBe >= end) {
        lateWindows.add("emitter/" + s.getRank() + "@" + end);
      }
      readBack.add(s);
      records++;
      boots.computeIfAbsent(s.getRank(), k -> new TreeSet<>()).add(s.getBootId());
      bootStart.merge(s.getBootId(), s.getEventTime().toEpochMilli(), Math::min);
      seqs.computeIfAbsent(s.getRank() + "/" + s.getBootId(), k -> new TreeSet<>()).add(s.getSeq());
    }
    long distinct = 0;
    long gaps = 0;
    for (Set<Long> q : seqs.values()) {
      distinct += q.size();
      gaps += ((TreeSet<Long>) q).last() - q.size();
    }
    assertThat(boots).as("boots per rank").hasSize(2);
    boots.values().forEach(b -> assertThat(b).as("boots of a rank").hasSize(2));
    long secondBoot = bootStart.values().stream().mapToLong(Long::longValue).max().orElseThrow();

    List<ConsumerRecord<byte[], byte[]>> dead =
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.DEADLETTER_TOPIC),
            Duration.ofSeconds(5),
            l -> false);
    assertThat(dead)
        .as("dead letters")
        .extracting(r -> AttributionScenarios.decode(DeadLetter.class, r.value()).toString())
        .isEmpty();

    List<RankWindow> windows = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            kafka.bootstrapServers(),
            options.get(JobOptions.RANK_WINDOW_TOPIC),
            Duration.ofSeconds(5),
            l -> false)) {
      RankWindow w = AttributionScenarios.decode(RankWindow.class, r.value());
      if (w.getCommunicator().equals("emitter")) windows.add(w);
    }
    assertThat(windows)
        .as("the emitter's rank windows")
        .isNotEmpty()
        .allSatisfy(
            w -> {
              assertThat(w.getCalls()).isNotNegative();
              assertThat(w.getBytes()).isNotNegative();
              assertThat(w.getWaitMeanUs()).isNotNegative();
              assertThat(w.getCopyMeanUs()).isNotNegative();
              assertThat(w.getReduceMeanUs()).isNotNegative();
            });
    for (int rank = 0; rank < 2; rank++) {
      int r = rank;
      assertThat(windows)
          .as("rank %d's windows of the second boot", rank)
          .anyMatch(w -> w.getRank() == r && w.getWindowStart().toEpochMilli() >= secondBoot);
    }
    assertThat(gaps).as("snapshots missing from a boot's sequence 1..n: %s", seqs).isZero();
    DeliveryCount d = DeliveryCount.of(produced, readBack);
    assertThat(d.lost()).as("snapshots the emitter spooled but the topic never got").isEmpty();
    // After the job's dedupe: the emitter's rank windows against the calls of its snapshots, up
    // to the windows the watermark has certainly closed (the feed runs on after the emitter).
    long lastSnapshot =
        readBack.stream().mapToLong(s -> s.getEventTime().toEpochMilli()).max().orElseThrow();
    WindowCount w =
        WindowCount.of(readBack, WINDOW.toMillis(), 0, lastSnapshot - WINDOW.toMillis(), windows);
    assertThat(w.mismatches())
        .as("the emitter's rank windows against its snapshots (late ones: %s)", lateWindows)
        .allSatisfy(m -> assertThat(lateWindows).contains(m.substring(0, m.indexOf(':'))));
    // Only the restart makes a snapshot late: at most the last window or two of a rank's first
    // boot.
    assertThat(lateWindows).as("windows reached late").hasSizeLessThanOrEqualTo(4);
    System.out.println(
        "emitter windows reached by a snapshot after the watermark could have passed them (not"
            + " compared): "
            + lateWindows);
    return d.produced()
        + " snapshots (the emitter's own count, 2 ranks, 2 boots)\t"
        + d.consumed()
        + " in the topic ("
        + d.records()
        + " records), "
        + dead.size()
        + " dead letters, "
        + w.describe()
        + ", none negative\t"
        + d.lost().size()
        + "\t"
        + d.duplicated()
        + " in the topic (spool resend); after the job's dedupe "
        + w.describeDuplicates();
  }

  /**
   * One line per fault for docs/RELIABILITY.md: the feed's rank windows whose end falls in the
   * phase (from the fault to the next one), how many reached the topic and the history, how many
   * were lost or came twice, and the time from the fault until a window after it was committed.
   */
  private static void writeRows(
      List<Phase> phases,
      Map<String, Long> expected,
      Map<String, Integer> inTopic,
      Map<String, Integer> inHistory,
      long cutoff,
      String emitterCounts)
      throws Exception {
    List<String> rows = new ArrayList<>();
    for (int i = 0; i < phases.size(); i++) {
      Phase p = phases.get(i);
      long from = p.injectedAt();
      long to = cutoff;
      for (Phase q : phases) {
        if (q.injectedAt() > from && q.injectedAt() < to && !q.fault().startsWith("emitter")) {
          to = q.injectedAt();
        }
      }
      long produced = 0;
      long topic = 0;
      long hist = 0;
      long lost = 0;
      long twice = 0;
      for (Map.Entry<String, Long> e : expected.entrySet()) {
        if (e.getValue() <= from || e.getValue() > to) continue;
        produced++;
        int nt = inTopic.getOrDefault(e.getKey(), 0);
        int nh = inHistory.getOrDefault(e.getKey(), 0);
        topic += Math.min(nt, 1);
        hist += Math.min(nh, 1);
        lost += (nt == 0 ? 1 : 0) + (nh == 0 ? 1 : 0);
        twice += Math.max(nt - 1, 0) + Math.max(nh - 1, 0);
      }
      String recovery =
          String.format(
              java.util.Locale.ROOT, "%.1f s", (p.recoveredAt() - p.injectedAt()) / 1000.0);
      if (p.fault().startsWith("emitter")) {
        rows.add(String.join("\t", p.fault(), p.injectedHow(), emitterCounts, recovery));
        continue;
      }
      rows.add(
          String.join(
              "\t",
              p.fault(),
              p.injectedHow(),
              produced + " rank windows of the feed",
              topic + " in the topic (read_committed), " + hist + " in the history",
              Long.toString(lost),
              Long.toString(twice),
              recovery));
    }
    Path out = Path.of("target", "reliability", "ProcessKillITCase.tsv");
    Files.createDirectories(out.getParent());
    Files.write(out, rows);
    rows.forEach(System.out::println);
  }
}
