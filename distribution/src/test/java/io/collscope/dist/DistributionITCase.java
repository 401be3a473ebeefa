package io.collscope.dist;

import static io.collscope.dist.UnpackedDistribution.env;
import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.broker.EmbeddedKafka;
import io.collscope.dist.UnpackedDistribution.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Both archives unpacked outside the checkout and run from there: the GPU-node runtime emits (on
 * its own Java), the CLI tails and runs the demo, and both read conf/collscope.properties (or
 * $COLLSCOPE_CONFIG), checked at start.
 */
class DistributionITCase {

  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(120);

  private static UnpackedDistribution dist;
  private static EmbeddedKafka kafka;

  @BeforeAll
  static void unpackAndStartBroker() throws Exception {
    dist = UnpackedDistribution.get();
    kafka = EmbeddedKafka.startTemporary();
  }

  @AfterAll
  static void stopBroker() {
    if (kafka != null) kafka.close();
  }

  @Test
  void theArchivesHoldARunnableInstallationAndNoBuild() throws Exception {
    Path home = dist.home;
    System.out.println("collscope-" + UnpackedDistribution.VERSION + "-bin.tar.gz:");
    System.out.println(listing(home));
    System.out.println(
        "collscope-gpu-node-" + UnpackedDistribution.VERSION + "-linux-x86_64.tar.gz:");
    System.out.println(listing(dist.nodeHome));
    assertThat(home.resolve("bin/collscope")).isExecutable();
    assertThat(home.resolve("conf/collscope.properties")).isRegularFile();
    assertThat(
            home.resolve("job/collscope-flink-jobs-" + UnpackedDistribution.VERSION + "-job.jar"))
        .isRegularFile();
    assertThat(home.resolve("lib/collscope-launcher-" + UnpackedDistribution.VERSION + ".jar"))
        .isRegularFile();
    // Nothing to build from: bin/collscope runs lib/ as it is.
    assertThat(home.resolve("pom.xml")).doesNotExist();
    assertThat(home.resolve("launcher")).doesNotExist();

    Path node = dist.nodeHome;
    assertThat(node.resolve("bin/collscope")).isExecutable();
    assertThat(node.resolve("jre/bin/java")).isExecutable();
    assertThat(node.resolve("conf/collscope.properties")).isRegularFile();
    try (Stream<Path> jars = Files.list(node.resolve("lib"))) {
      List<String> names = jars.map(p -> p.getFileName().toString()).toList();
      assertThat(names).anyMatch(n -> n.startsWith("kafka-clients-"));
      assertThat(names).anyMatch(n -> n.startsWith("avro-"));
      assertThat(names).noneMatch(n -> n.startsWith("flink-") || n.startsWith("duckdb"));
    }
  }

  @Test
  void theNodeRuntimeEmitsAndTheCliTailsWithTheConfigFile() throws Exception {
    String topic = EmbeddedKafka.freshTopic("dist");
    Path conf = dist.root.resolve("node-test.properties");
    // The file sets what the flags do not: the world size and the communicator.
    Files.writeString(conf, "emit.ranks = 2\ncommunicator = dist-node\ntopic = " + topic + "\n");
    var withConf =
        env("COLLSCOPE_CONFIG", conf.toString(), "COLLSCOPE_BOOTSTRAP", kafka.bootstrapServers());
    Result emit =
        dist.node(
            withConf,
            COMMAND_TIMEOUT,
            List.of(
                "emit", "--backend", "cpu", "--interval", "250ms", "--seconds", "3", "--no-spool"));
    assertThat(emit.exitCode()).as(emit.toString()).isZero();

    Result tail =
        dist.collscope(
            withConf,
            COMMAND_TIMEOUT,
            List.of("tail", topic, "--json", "--max", "2", "--timeout", "30s"));
    assertThat(tail.exitCode()).as(tail.toString()).isZero();
    List<String> lines = tail.out().lines().toList();
    assertThat(lines).hasSize(2);
    assertThat(lines)
        .allSatisfy(
            l ->
                assertThat(l)
                    .contains("\"communicator\":\"dist-node\"")
                    .contains("\"world_size\":2"));
  }

  @Test
  void configShowPrintsTheSourcesAndABadFileStopsBothCommandLines() throws Exception {
    Path conf = dist.root.resolve("show-test.properties");
    Files.writeString(conf, "ranks = 6\nattribution.window = 3s\n");
    Result show =
        dist.collscope(
            env("COLLSCOPE_CONFIG", conf.toString(), "COLLSCOPE_BOOTSTRAP", "kafka-1:9092"),
            COMMAND_TIMEOUT,
            List.of("config", "show", "emit", "--interval", "2s"));
    System.out.println(
        "$ COLLSCOPE_BOOTSTRAP=kafka-1:9092 collscope config show emit --interval 2s");
    System.out.println(show.out());
    assertThat(show.exitCode()).as(show.toString()).isZero();
    assertThat(show.out())
        .contains("# configuration file: " + conf)
        .containsPattern("emit\\.ranks +6 +file ranks")
        .containsPattern("emit\\.bootstrap +kafka-1:9092 +environment COLLSCOPE_BOOTSTRAP")
        .containsPattern("emit\\.interval +2s +flag --interval")
        .containsPattern("emit\\.backend +auto +default")
        .doesNotContain("__no_default_value__");
    // Without COLLSCOPE_CONFIG: the installation's own conf/collscope.properties (all defaults).
    Result installed =
        dist.collscope(env(), COMMAND_TIMEOUT, List.of("config", "show", "attribution"));
    assertThat(installed.out())
        .contains("# configuration file: " + dist.home.resolve("conf/collscope.properties"))
        .containsPattern("attribution\\.window +10s +default");

    Files.writeString(conf, "rnaks = 4\n");
    Result unknown =
        dist.collscope(env("COLLSCOPE_CONFIG", conf.toString()), COMMAND_TIMEOUT, List.of("emit"));
    assertThat(unknown.exitCode()).isEqualTo(2);
    assertThat(unknown.err().strip()).doesNotContain("\n").contains("unknown key 'rnaks'");

    Files.writeString(conf, "emit.ranks = many\n");
    Result bad =
        dist.node(env("COLLSCOPE_CONFIG", conf.toString()), COMMAND_TIMEOUT, List.of("emit"));
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.err().strip()).doesNotContain("\n").contains("key 'emit.ranks'");
  }

  @Test
  void theDemoRunsFromTheArchive() {
    Result demo =
        dist.collscope(
            env(),
            COMMAND_TIMEOUT,
            List.of(
                "demo",
                "--ranks",
                "4",
                "--seconds",
                "14",
                "--window",
                "3s",
                "--interval",
                "500ms",
                "--backend",
                "cpu",
                "--inject",
                "slow-rank=2:10ms",
                "--no-history",
                "--ui-port",
                "18181"));
    assertThat(demo.exitCode()).as(demo.toString()).isZero();
    assertThat(demo.out()).contains("SLOW_RANK(2");
  }

  private static String listing(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      StringBuilder sb = new StringBuilder();
      for (Path p : s.sorted().toList()) {
        sb.append("  ").append(dir.relativize(p));
        if (Files.isDirectory(p)) {
          try (Stream<Path> inner = Files.list(p)) {
            List<String> names = inner.map(x -> x.getFileName().toString()).sorted().toList();
            sb.append("/ (")
                .append(names.size())
                .append(" entries: ")
                .append(String.join(", ", names.subList(0, Math.min(4, names.size()))))
                .append(names.size() > 4 ? ", ..." : "")
                .append(")");
          }
        }
        sb.append('\n');
      }
      return sb.toString();
    }
  }
}
