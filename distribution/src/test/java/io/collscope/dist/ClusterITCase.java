package io.collscope.dist;

import static io.collscope.dist.UnpackedDistribution.env;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.collscope.broker.EmbeddedKafka;
import io.collscope.cluster.FlinkRest;
import io.collscope.dist.UnpackedDistribution.Result;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A real cluster without Docker, from the unpacked archive: {@code collscope cluster start} (a
 * JobManager, a TaskManager and a broker as processes), {@code job submit}, emitters with a slow
 * rank, the verdict, {@code job upgrade} (stop-with-savepoint, submit from it: the new job restores
 * the old one's state), verdicts again, {@code cluster stop}, and then no process is left.
 */
class ClusterITCase {

  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(300);
  private static final ObjectMapper JSON = new ObjectMapper();

  private static UnpackedDistribution dist;
  private static Path clusterDir;
  private static Map<String, String> env;
  private static String rest;
  private static String bootstrap;

  @BeforeAll
  static void startCluster() throws Exception {
    dist = UnpackedDistribution.get();
    clusterDir = dist.root.resolve("cluster");
    int restPort = EmbeddedKafka.freePort();
    int kafkaPort = EmbeddedKafka.freePort();
    env = env("COLLSCOPE_CLUSTER_DIR", clusterDir.toString());
    Result start =
        dist.collscope(
            env,
            COMMAND_TIMEOUT,
            List.of(
                "cluster",
                "start",
                "--taskmanagers",
                "1",
                "--slots",
                "2",
                "--taskmanager-heap",
                "512m",
                "--rest-port",
                Integer.toString(restPort),
                "--rpc-port",
                Integer.toString(EmbeddedKafka.freePort()),
                "--kafka-port",
                Integer.toString(kafkaPort)));
    System.out.println("$ collscope cluster start\n" + start.out());
    assertThat(start.exitCode()).as(start.toString()).isZero();
    rest = "http://localhost:" + restPort + "/";
    bootstrap = "localhost:" + kafkaPort;
    assertThat(start.out()).contains("Flink at " + rest).contains("Kafka at " + bootstrap);
  }

  @AfterAll
  static void stopCluster() {
    if (dist != null) dist.collscope(env, COMMAND_TIMEOUT, List.of("cluster", "stop"));
  }

  @Test
  void submitEmitVerdictUpgradeFromASavepointVerdictsContinueStopLeavesNothing() throws Exception {
    FlinkRest flink = new FlinkRest(URI.create(rest));
    String communicator = "cluster-upgrade";
    // 2 s windows and 1 s checkpoints, so that verdicts come soon; everything else is the default.
    String[] fastWindows = {"--set", "window=2s", "--set", "checkpoint-interval=1s"};

    Result submit = cli(DeployCommands.plus(DeployCommands.submit(rest), fastWindows));
    assertThat(submit.exitCode()).as(submit.toString()).isZero();
    String first = jobId(submit.out(), "job ([0-9a-f]{32}) RUNNING");
    // Submitted without --parallelism: every slot of the cluster (Flink's parallelism.default is
    // 1).
    assertThat(flink.parallelism(first)).as("the job's parallelism").isEqualTo(2);

    Instant beforeFirst = Instant.now();
    emitWithSlowRank(communicator);
    assertThat(slowRankWindowsSince(communicator, beforeFirst))
        .as("verdicts of the first job")
        .isNotEmpty();

    Result upgrade = cli(DeployCommands.plus(DeployCommands.upgrade(rest), fastWindows));
    System.out.println("$ collscope job upgrade\n" + upgrade.out());
    assertThat(upgrade.exitCode()).as(upgrade.toString()).isZero();
    String second = jobId(upgrade.out(), "job ([0-9a-f]{32}) RUNNING from savepoint");
    Matcher sp = Pattern.compile("RUNNING from savepoint (\\S+)").matcher(upgrade.out());
    assertThat(sp.find()).isTrue();
    assertThat(second).isNotEqualTo(first);
    assertThat(flink.state(first)).isEqualTo("FINISHED");
    // The new job restored the old one's state from the savepoint.
    assertThat(flink.restoredFrom(second)).contains(sp.group(1));

    Instant beforeSecond = Instant.now();
    emitWithSlowRank(communicator);
    assertThat(slowRankWindowsSince(communicator, beforeSecond))
        .as("verdicts of the upgraded job")
        .isNotEmpty();

    Result status = cli(List.of("cluster", "status"));
    System.out.println("$ collscope cluster status\n" + status.out());
    assertThat(status.exitCode()).isZero();
    assertThat(status.out()).contains("job " + second + " collscope-attribution RUNNING");
    List<Long> pids = new ArrayList<>();
    Matcher m = Pattern.compile("pid (\\d+)").matcher(status.out());
    while (m.find()) pids.add(Long.parseLong(m.group(1)));
    assertThat(pids).hasSize(3); // jobmanager, taskmanager-1, kafka
    List<Long> descendants = new ArrayList<>();
    for (long pid : pids) {
      ProcessHandle.of(pid).ifPresent(p -> p.descendants().forEach(d -> descendants.add(d.pid())));
    }

    Result stop = cli(List.of("cluster", "stop"));
    System.out.println("$ collscope cluster stop\n" + stop.out());
    assertThat(stop.exitCode()).isZero();
    for (long pid : pids) assertThat(ProcessHandle.of(pid)).as("pid %d", pid).isEmpty();
    for (long pid : descendants) assertThat(ProcessHandle.of(pid)).as("child %d", pid).isEmpty();
    assertThat(
            ProcessHandle.allProcesses()
                .filter(
                    p ->
                        p.info()
                            .commandLine()
                            .map(c -> c.contains(clusterDir.toString()))
                            .orElse(false))
                .toList())
        .as("processes naming the cluster's folder")
        .isEmpty();
    assertThat(cli(List.of("cluster", "status")).exitCode()).isEqualTo(1);
  }

  private static Result cli(List<String> args) {
    return dist.collscope(env, COMMAND_TIMEOUT, args);
  }

  private static void emitWithSlowRank(String communicator) {
    Result emit =
        dist.collscope(
            env("COLLSCOPE_BOOTSTRAP", bootstrap),
            COMMAND_TIMEOUT,
            DeployCommands.plus(
                DeployCommands.cpuEmitters(4, communicator),
                "--interval",
                "250ms",
                "--seconds",
                "6",
                "--inject",
                "slow-rank=2:10ms",
                "--no-spool"));
    assertThat(emit.exitCode()).as(emit.toString()).isZero();
  }

  /** Attribution windows of the communicator that began after {@code since} and name rank 2. */
  private static List<JsonNode> slowRankWindowsSince(String communicator, Instant since)
      throws Exception {
    Instant deadline = Instant.now().plusSeconds(60);
    List<JsonNode> named = new ArrayList<>();
    while (named.isEmpty() && Instant.now().isBefore(deadline)) {
      Result tail =
          dist.collscope(
              env("COLLSCOPE_BOOTSTRAP", bootstrap),
              COMMAND_TIMEOUT,
              List.of("tail", "collscope.attribution", "--json", "--timeout", "10s"));
      for (String line : tail.out().lines().toList()) {
        JsonNode v = JSON.readTree(line).path("value");
        if (!v.path("communicator").asText().equals(communicator)) continue;
        if (v.path("window_start").asLong() < since.toEpochMilli()) continue;
        for (JsonNode f : v.path("findings")) {
          if (f.path("kind").asText().equals("SLOW_RANK") && f.path("rank").asInt() == 2) {
            named.add(v);
            break;
          }
        }
      }
    }
    return named;
  }

  private static String jobId(String out, String regex) {
    Matcher m = Pattern.compile(regex).matcher(out);
    assertThat(m.find()).as(out).isTrue();
    return m.group(1);
  }
}
