package io.collscope.dist;

import static io.collscope.dist.UnpackedDistribution.env;
import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Alert;
import io.collscope.avro.AlertState;
import io.collscope.avro.Attribution;
import io.collscope.avro.CounterSnapshot;
import io.collscope.avro.RankWindow;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.broker.TopicDrainer;
import io.collscope.cluster.FlinkRest;
import io.collscope.dist.UnpackedDistribution.Result;
import io.collscope.schema.AvroCodec;
import io.collscope.schema.DeliveryCount;
import io.collscope.schema.WindowCount;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * JobManager failures on a cluster started from the unpacked archive with {@code collscope cluster
 * start --ha --brokers 3} (ZooKeeper, two JobManagers, a TaskManager, three KRaft nodes), the job
 * submitted with {@code job submit} and fed by the real {@code collscope emit} (4 CPU ranks, a slow
 * rank, a spool):
 *
 * <ol>
 *   <li>the leading JobManager is SIGKILLed: the standby takes the job over from its latest
 *       checkpoint, and the test types no command;
 *   <li>the JobManager left is SIGKILLed too, the cluster is stopped and started again without high
 *       availability, and {@code collscope job recover} (one command) resubmits the job from the
 *       newest retained checkpoint; a second emitter run (a new boot) follows.
 * </ol>
 *
 * <p>Counted per fault: snapshots produced (the emitter's own "published N"), consumed (each {@code
 * (cluster, job, communicator, rank, boot, seq)} read back read_committed), lost, duplicated before
 * and after the job's dedupe (rank windows against the calls of the snapshots read back), alert
 * transitions, recovery time. Rows go to {@code target/reliability/}.
 */
class ClusterHaITCase {

  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(300);
  private static final long WINDOW_MS = 2000;
  private static final String COMMUNICATOR = "ha-kill";

  private record Phase(
      String fault, String how, long injectedAt, long recoveredAt, String boot, long produced) {}

  @Test
  void leaderJobManagerSigkilledStandbyResumesWithoutACommandAndRecoverResubmits()
      throws Exception {
    UnpackedDistribution dist = UnpackedDistribution.get();
    Path dir = dist.root.resolve("ha-cluster");
    Map<String, String> env = env("COLLSCOPE_CLUSTER_DIR", dir.toString());
    int restPort = freePorts(2);
    int kafkaPort = freePorts(3);
    List<String> ports =
        List.of(
            "--rest-port",
            Integer.toString(restPort),
            "--rpc-port",
            Integer.toString(EmbeddedKafka.freePort()),
            "--kafka-port",
            Integer.toString(kafkaPort),
            "--brokers",
            "3",
            "--taskmanagers",
            "1");
    String rest = "http://localhost:" + restPort + "/";
    String standbyRest = "http://localhost:" + (restPort + 1) + "/";
    List<Phase> phases = new ArrayList<>();
    try {
      List<String> start = new ArrayList<>(List.of("cluster", "start", "--ha"));
      start.addAll(ports);
      start.addAll(List.of("--zookeeper-port", Integer.toString(EmbeddedKafka.freePort())));
      Result started = dist.collscope(env, COMMAND_TIMEOUT, start);
      System.out.println("$ collscope " + String.join(" ", start) + "\n" + started.out());
      assertThat(started.exitCode()).as(started.toString()).isZero();
      Matcher kafkaAt = Pattern.compile("Kafka at (\\S+)").matcher(started.out());
      assertThat(kafkaAt.find()).isTrue();
      String bootstrap = kafkaAt.group(1);
      assertThat(bootstrap.split(",")).hasSize(3);
      assertThat(started.out()).contains("standby JobManager at " + standbyRest);

      String[] fast = {"--set", "window=2s", "--set", "checkpoint-interval=1s"};
      Result submit =
          dist.collscope(
              env, COMMAND_TIMEOUT, DeployCommands.plus(DeployCommands.submit(rest), fast));
      assertThat(submit.exitCode()).as(submit.toString()).isZero();
      String job = group(submit.out(), "job ([0-9a-f]{32}) RUNNING");

      // 1. The leader SIGKILLed under a running emitter; nobody types anything.
      Path spool = dir.resolve("spool");
      Path log1 = dir.resolve("emit-1.log");
      Process emit1 = emitter(dist, bootstrap, spool, log1, 40);
      awaitWindowAfter(bootstrap, System.currentTimeMillis());
      Path jmLog = dir.resolve("log").resolve("jobmanager.log");
      assertThat(Files.readString(jmLog))
          .as("the first JobManager leads")
          .contains("was granted leadership");
      long leader = Long.parseLong(Files.readString(dir.resolve("pids/jobmanager")).trim());
      long t = System.currentTimeMillis();
      ProcessHandle.of(leader).orElseThrow().destroyForcibly();
      FlinkRest standby = new FlinkRest(URI.create(standbyRest));
      // Until its ZooKeeper session ends the dead leader still holds the leadership: the standby's
      // REST API answers 500 (the leader's RPC is unreachable) until it takes over.
      String state = "";
      long deadline = System.currentTimeMillis() + 180_000;
      while (!state.equals("RUNNING") && System.currentTimeMillis() < deadline) {
        try {
          state = standby.state(job);
        } catch (java.io.IOException e) {
          state = e.getMessage().lines().findFirst().orElse("");
        }
        Thread.sleep(500);
      }
      assertThat(state).as("the job on the standby").isEqualTo("RUNNING");
      long recovered = awaitWindowAfter(bootstrap, t);
      assertThat(Files.readString(dir.resolve("log").resolve("jobmanager-standby.log")))
          .contains("was granted leadership")
          .containsPattern("Restoring job " + job + " from Checkpoint \\d+");
      assertThat(emit1.waitFor()).as("emit 1; see %s", log1).isZero();
      phases.add(
          new Phase(
              "JobManager (the leader) SIGKILLed; the standby takes the job over (ZooKeeper HA),"
                  + " no command typed",
              "`ClusterHaITCase` (`cluster start --ha --brokers 3`, `collscope emit` 4 CPU ranks,"
                  + " 2 s windows)",
              t,
              recovered,
              group(Files.readString(log1), "boot ([0-9a-f-]{36})"),
              Long.parseLong(group(Files.readString(log1), "published (\\d+) snapshots"))));

      // 2. Without HA: the JobManager SIGKILLed, the cluster started again, one command.
      long standbyPid =
          Long.parseLong(Files.readString(dir.resolve("pids/jobmanager-standby")).trim());
      t = System.currentTimeMillis();
      ProcessHandle.of(standbyPid).orElseThrow().destroyForcibly();
      assertThat(dist.collscope(env, COMMAND_TIMEOUT, List.of("cluster", "stop")).exitCode())
          .isZero();
      List<String> restart = new ArrayList<>(List.of("cluster", "start"));
      restart.addAll(ports);
      Result again = dist.collscope(env, COMMAND_TIMEOUT, restart);
      assertThat(again.exitCode()).as(again.toString()).isZero();
      Path log2 = dir.resolve("emit-2.log");
      Process emit2 = emitter(dist, bootstrap, spool, log2, 25);
      Result recover =
          dist.collscope(
              env,
              COMMAND_TIMEOUT,
              DeployCommands.plus(List.of("job", "recover", "--rest", rest), fast));
      System.out.println("$ collscope job recover\n" + recover.out() + recover.err());
      assertThat(recover.exitCode()).as(recover.toString()).isZero();
      assertThat(recover.out())
          .containsPattern("RUNNING from checkpoint \\S+/" + job + "/chk-\\d+");
      long recovered2 = awaitWindowAfter(bootstrap, t);
      assertThat(emit2.waitFor()).as("emit 2; see %s", log2).isZero();
      phases.add(
          new Phase(
              "JobManager SIGKILLed without HA; cluster started again, `collscope job recover`"
                  + " resubmits from the newest retained checkpoint",
              "`ClusterHaITCase` (the same run, then `cluster start` without `--ha`)",
              t,
              recovered2,
              group(Files.readString(log2), "boot ([0-9a-f-]{36})"),
              Long.parseLong(group(Files.readString(log2), "published (\\d+) snapshots"))));
      // Windows of the second run's last seconds close once the watermark passes them.
      writeRows(bootstrap, phases);
    } finally {
      dist.collscope(env, COMMAND_TIMEOUT, List.of("cluster", "stop"));
    }
  }

  private static Process emitter(
      UnpackedDistribution dist, String bootstrap, Path spool, Path log, int seconds)
      throws Exception {
    return dist.start(
        env("COLLSCOPE_BOOTSTRAP", bootstrap),
        log,
        DeployCommands.plus(
            DeployCommands.cpuEmitters(4, COMMUNICATOR),
            "--interval",
            "250ms",
            "--seconds",
            Integer.toString(seconds),
            "--inject",
            "slow-rank=2:10ms",
            "--spool",
            spool.toString()));
  }

  private static void writeRows(String bootstrap, List<Phase> phases) throws Exception {
    List<CounterSnapshot> snapshots = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(bootstrap, "collscope.snapshots", Duration.ofSeconds(10), l -> false)) {
      CounterSnapshot s = AvroCodec.of(CounterSnapshot.class).decode(r.value());
      if (s.getCommunicator().equals(COMMUNICATOR)) snapshots.add(s);
    }
    List<RankWindow> windows = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(
            bootstrap, "collscope.rank-windows", Duration.ofSeconds(10), l -> false)) {
      RankWindow w = AvroCodec.of(RankWindow.class).decode(r.value());
      if (w.getCommunicator().equals(COMMUNICATOR)) windows.add(w);
    }
    List<Alert> alerts = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r :
        TopicDrainer.drain(bootstrap, "collscope.alerts", Duration.ofSeconds(10), l -> false)) {
      Alert a = AvroCodec.of(Alert.class).decode(r.value());
      if (a.getCommunicator().equals(COMMUNICATOR)) alerts.add(a);
    }
    List<String> rows = new ArrayList<>();
    boolean exact = true;
    for (Phase p : phases) {
      List<CounterSnapshot> boot = new ArrayList<>();
      long last = 0;
      for (CounterSnapshot s : snapshots) {
        if (!s.getBootId().equals(p.boot())) continue;
        boot.add(s);
        last = Math.max(last, s.getEventTime().toEpochMilli());
      }
      DeliveryCount d = DeliveryCount.ofCounter(p.produced(), boot);
      long lost = d.lostCount();
      // Windows the watermark has certainly closed: two windows before the run's last snapshot.
      WindowCount w = WindowCount.of(boot, WINDOW_MS, 0, last - 2 * WINDOW_MS, windows);
      Set<String> transitions = new TreeSet<>();
      long twice = 0;
      long firing = 0;
      for (Alert a : alerts) {
        if (!transitions.add(a.getAlertId() + "/" + a.getState() + "/" + a.getWindowEnd())) twice++;
        if (a.getState() == AlertState.FIRING) firing++;
      }
      exact &= lost == 0 && w.exact();
      rows.add(
          String.join(
              "\t",
              p.fault(),
              p.how(),
              p.produced() + " snapshots (the emitter's own count)",
              d.consumed() + " read back (read_committed, " + d.records() + " records)",
              lost + " in the topic, " + w.missingCalls() + " calls in the job's windows",
              d.duplicated() + " in the topic; after the job's dedupe " + w.describeDuplicates(),
              w.describe(),
              alerts.size()
                  + " alert transitions in the topic ("
                  + firing
                  + " FIRING), "
                  + twice
                  + " twice",
              String.format(Locale.ROOT, "%.1f s", (p.recoveredAt() - p.injectedAt()) / 1000.0)));
      System.out.println(rows.get(rows.size() - 1));
      w.mismatches().forEach(m -> System.out.println("  window differs: " + m));
    }
    Path out = Path.of("target", "reliability", "ClusterHaITCase.tsv");
    Files.createDirectories(out.getParent());
    Files.write(out, rows);
    assertThat(exact).as("nothing lost, nothing twice: %s", rows).isTrue();
  }

  /** Waits for a committed attribution of the communicator whose window began after {@code t}. */
  private static long awaitWindowAfter(String bootstrap, long t) {
    List<ConsumerRecord<byte[], byte[]>> recs =
        TopicDrainer.drain(
            bootstrap,
            "collscope.attribution",
            Duration.ofSeconds(240),
            l -> l.stream().anyMatch(r -> after(r, t)));
    long seen = System.currentTimeMillis();
    assertThat(recs).as("a window of %s after %d", COMMUNICATOR, t).anyMatch(r -> after(r, t));
    return seen;
  }

  private static boolean after(ConsumerRecord<byte[], byte[]> r, long t) {
    try {
      Attribution a = AvroCodec.of(Attribution.class).decode(r.value());
      return a.getCommunicator().equals(COMMUNICATOR) && a.getWindowStart().toEpochMilli() >= t;
    } catch (Exception e) {
      return false;
    }
  }

  private static String group(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("%s in %s", regex, text).isTrue();
    return m.group(1);
  }

  /** The first of {@code n} consecutive ports free right now. */
  private static int freePorts(int n) throws Exception {
    for (int attempt = 0; attempt < 50; attempt++) {
      int base = EmbeddedKafka.freePort();
      boolean free = true;
      for (int i = 1; i < n && free; i++) {
        try (java.net.ServerSocket s = new java.net.ServerSocket(base + i)) {
          s.setReuseAddress(true);
        } catch (java.io.IOException e) {
          free = false;
        }
      }
      if (free && base + n < 65536) return base;
    }
    throw new IllegalStateException("no " + n + " consecutive free ports");
  }
}
