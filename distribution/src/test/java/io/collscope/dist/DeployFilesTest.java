package io.collscope.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.collscope.cli.Collscope;
import io.collscope.config.AttributionConfig;
import io.collscope.config.Config;
import io.collscope.config.ConfigDefaultProvider;
import io.collscope.config.ConfigFile;
import io.collscope.flink.JobOptions;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * docker/compose.yaml and deploy/k8s/ checked offline (no container engine or cluster here):
 * against their JSON schemas (the Compose specification's; the Flink Kubernetes Operator's
 * FlinkDeployment, whose pod template is Kubernetes' Pod), and against the project: every path they
 * name exists (or is what {@code mvn package} builds), every port and COLLSCOPE_* variable is the
 * project's, and the collscope commands they run parse with the real command line and are the ones
 * ClusterITCase runs.
 */
class DeployFilesTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Path DOCKER = ROOT.resolve("docker");
  private static final Path K8S = ROOT.resolve("deploy/k8s");
  private static final YAMLMapper YAML = new YAMLMapper();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final SchemaRegistry SCHEMAS =
      SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_7);

  private static final String SCHEMA_BASE = "https://schemas.collscope.invalid/";

  /** What `mvn package` builds that the Dockerfiles copy, with ${VERSION} as in their ARG. */
  private static final Set<String> BUILD_OUTPUTS =
      Set.of(
          "distribution/target/collscope-${VERSION}-bin.tar.gz",
          "distribution/target/collscope-gpu-node-${VERSION}-linux-x86_64.tar.gz",
          "flink-jobs/target/collscope-flink-jobs-${VERSION}-job.jar");

  @TempDir Path tmp;

  // ---- compose ----

  @Test
  void theComposeFileIsValidAgainstTheComposeSpecification() throws Exception {
    Schema compose = schema("compose-spec.json");
    JsonNode file = YAML.readTree(DOCKER.resolve("compose.yaml").toFile());
    assertThat(compose.validate(file)).as("compose.yaml against compose-spec.json").isEmpty();
    // The validator catches what Compose would reject: a misspelled service key.
    ObjectNode broken = file.deepCopy();
    ((ObjectNode) broken.path("services").path("exporter")).put("comand", "exporter");
    assertThat(compose.validate(broken)).isNotEmpty();
  }

  @Test
  void everyPathTheComposeFileAndTheDockerfilesNameExists() throws Exception {
    JsonNode services = compose().path("services");
    Set<Path> dockerfiles = new TreeSet<>();
    for (var e : services.properties()) {
      JsonNode build = e.getValue().path("build");
      if (!build.isMissingNode()) {
        Path context = DOCKER.resolve(build.path("context").asText()).normalize();
        assertThat(context).as("%s build context", e.getKey()).isEqualTo(ROOT);
        Path dockerfile = context.resolve(build.path("dockerfile").asText());
        assertThat(dockerfile).as("%s dockerfile", e.getKey()).isRegularFile();
        dockerfiles.add(dockerfile);
      }
      for (JsonNode v : e.getValue().path("volumes")) {
        String spec = v.asText();
        if (spec.startsWith("./")) {
          Path host = DOCKER.resolve(spec.substring(0, spec.indexOf(':'))).normalize();
          assertThat(host).as("%s volume %s", e.getKey(), spec).exists();
        }
      }
    }
    assertThat(dockerfiles)
        .extracting(p -> p.getFileName().toString())
        .containsExactlyInAnyOrder("cli.Dockerfile", "job.Dockerfile");
    dockerfiles.add(DOCKER.resolve("gpu-node.Dockerfile"));
    Pattern copy = Pattern.compile("(?m)^(?:COPY|ADD) (\\S+) ");
    for (Path d : dockerfiles) {
      Matcher m = copy.matcher(Files.readString(d));
      while (m.find()) {
        String src = m.group(1);
        if (src.contains("/target/")) {
          assertThat(BUILD_OUTPUTS).as("%s copies %s", d.getFileName(), src).contains(src);
        } else {
          assertThat(ROOT.resolve(src)).as("%s copies %s", d.getFileName(), src).exists();
        }
      }
      assertThat(Files.readString(d)).contains("ARG VERSION=" + UnpackedDistribution.VERSION);
    }
    assertThat(Files.readString(DOCKER.resolve("job.Dockerfile")))
        .contains("FROM flink:2.2-java17");
    assertThat(Files.readString(DOCKER.resolve("gpu-node.Dockerfile")))
        .contains("FROM nvidia/cuda:");
  }

  @Test
  void portsAndVariablesAreTheProjects() throws Exception {
    JsonNode services = compose().path("services");
    CommandLine cli = Collscope.commandLine();
    assertThat(containerPorts(services.path("exporter")))
        .containsExactly(Integer.parseInt(optionDefault(cli, "exporter", "--port")));
    assertThat(containerPorts(services.path("jobmanager")))
        .containsExactly(Integer.parseInt(optionDefault(cli, "cluster start", "--rest-port")));
    assertThat(optionDefault(cli, "emit", "--bootstrap")).endsWith(":9092");
    // Three KRaft nodes, each a voter; every topic 3 replicas with 2 in sync required, and every
    // client given all three addresses (one node down must not cut a client off).
    for (int node = 1; node <= 3; node++) {
      JsonNode env = services.path("kafka-" + node).path("environment");
      assertThat(env.path("KAFKA_LISTENERS").asText()).contains("PLAINTEXT://:9092");
      assertThat(env.path("KAFKA_NODE_ID").asInt()).isEqualTo(node);
      assertThat(env.path("KAFKA_CONTROLLER_QUORUM_VOTERS").asText())
          .isEqualTo("1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093");
      assertThat(env.path("KAFKA_DEFAULT_REPLICATION_FACTOR").asInt()).isEqualTo(3);
      assertThat(env.path("KAFKA_MIN_INSYNC_REPLICAS").asInt()).isEqualTo(2);
      assertThat(env.path("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR").asInt()).isEqualTo(3);
      assertThat(env.path("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR").asInt()).isEqualTo(2);
      assertThat(env.path("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR").asInt()).isEqualTo(3);
    }
    for (var e : services.properties()) {
      JsonNode b = e.getValue().path("environment").path("COLLSCOPE_BOOTSTRAP");
      if (!b.isMissingNode()) {
        assertThat(b.asText()).as(e.getKey()).isEqualTo("kafka-1:9092,kafka-2:9092,kafka-3:9092");
      }
    }
    assertThat(Files.readString(DOCKER.resolve("prometheus/prometheus-compose.yml")))
        .contains("'exporter:" + optionDefault(cli, "exporter", "--port") + "'");
    assertThat(
            Files.readString(
                DOCKER.resolve("grafana/provisioning-compose/datasources/collscope.yml")))
        .contains("http://prometheus:" + containerPorts(services.path("prometheus")).get(0));

    Set<String> known = knownVariables(cli);
    List<String> named = new ArrayList<>();
    for (var e : services.properties()) {
      e.getValue().path("environment").fieldNames().forEachRemaining(named::add);
    }
    for (Path k : k8sFiles()) {
      Matcher m = Pattern.compile("name: (COLLSCOPE_\\w+)").matcher(Files.readString(k));
      while (m.find()) named.add(m.group(1));
    }
    List<String> ours = named.stream().filter(n -> n.startsWith("COLLSCOPE_")).toList();
    assertThat(ours).isNotEmpty();
    assertThat(known).containsAll(ours);
  }

  @Test
  void closedDoorsTheDeploymentsOpenOnPurpose() throws Exception {
    CommandLine cli = Collscope.commandLine();
    assertThat(optionDefault(cli, "exporter", "--bind"))
        .as("the exporter listens on loopback unless told otherwise")
        .contains("127.0.0.1");
    assertThat(compose().path("services").path("exporter").path("command").toString())
        .as("in its container the exporter must listen where Prometheus reaches it")
        .contains("\"--bind\",\"0.0.0.0\"");
    assertThat(compose().path("services").path("jobmanager").path("ports"))
        .as("Flink's REST API (it runs uploaded jars) on the host's loopback only")
        .allSatisfy(p -> assertThat(p.asText()).startsWith("127.0.0.1:"));
    assertThat(optionDefault(cli, "cluster start", "--rest-bind-address")).isEqualTo("localhost");
    JsonNode exporter = kind(K8S.resolve("exporter.yaml"), "Deployment");
    assertThat(exporter.path("spec").path("template").path("spec").path("containers").toString())
        .contains("\"--bind\",\"0.0.0.0\"");
    assertThat(
            single(K8S.resolve("flink-deployment.yaml"))
                .path("spec")
                .path("flinkConfiguration")
                .path("web.submit.enable")
                .asText())
        .as("application mode: no jar upload through the REST API")
        .isEqualTo("false");
  }

  @Test
  void composeServicesRunTheCommandsTheClusterTestRuns() throws Exception {
    JsonNode services = compose().path("services");
    assertThat(command(services.path("submit")))
        .isEqualTo(DeployCommands.submit("http://jobmanager:8081"));
    assertThat(command(services.path("emitter")))
        .isEqualTo(DeployCommands.cpuEmitters(4, "compose-cpu"));
    List<String> collscopeServices = new ArrayList<>();
    for (var e : services.properties()) {
      if (!e.getValue().path("image").asText().startsWith("collscope:")) continue;
      collscopeServices.add(e.getKey());
      assertThat(e.getValue().path("build").path("dockerfile").asText())
          .isEqualTo("docker/cli.Dockerfile");
      // Every command parses with the real command line (exporter, alerts forward too).
      Collscope.commandLine().parseArgs(command(e.getValue()).toArray(String[]::new));
    }
    assertThat(collscopeServices)
        .containsExactlyInAnyOrder("submit", "emitter", "exporter", "alert-forwarder");
  }

  // ---- Kubernetes ----

  @Test
  void theFlinkDeploymentIsValidAgainstTheOperatorsCrd() throws Exception {
    Schema crd = schema("flinkdeployment_v1beta1.json.gz");
    JsonNode fd = single(K8S.resolve("flink-deployment.yaml"));
    assertThat(crd.validate(fd))
        .as("flink-deployment.yaml against the FlinkDeployment CRD")
        .isEmpty();
    ObjectNode broken = fd.deepCopy();
    ((ObjectNode) broken.path("spec").path("job")).put("upgradeMode", "sometimes");
    assertThat(crd.validate(broken)).isNotEmpty();
    ObjectNode misspelled = fd.deepCopy();
    ((ObjectNode) misspelled.path("spec").path("job")).put("entryClas", "x");
    assertThat(crd.validate(misspelled)).isNotEmpty();

    JsonNode job = fd.path("spec").path("job");
    assertThat(job.path("upgradeMode").asText()).isEqualTo("savepoint");
    assertThat(job.path("entryClass").asText()).isEqualTo("io.collscope.flink.AttributionJob");
    assertThat(job.path("jarURI").asText())
        .isEqualTo("local:///opt/flink/usrlib/collscope-job.jar");
    assertThat(Files.readString(DOCKER.resolve("job.Dockerfile")))
        .contains("/opt/flink/usrlib/collscope-job.jar");
    JsonNode conf = fd.path("spec").path("flinkConfiguration");
    assertThat(conf.path("high-availability.type").asText()).isEqualTo("kubernetes");
    assertThat(conf.path("execution.checkpointing.dir").asText()).startsWith("file:///flink-data/");
    assertThat(conf.path("execution.checkpointing.savepoint-dir").asText())
        .startsWith("file:///flink-data/");

    // The job's arguments read the ConfigMap's file, and the job accepts both.
    Path file = tmp.resolve("collscope.properties");
    Files.writeString(file, configMapFile());
    List<String> args = new ArrayList<>();
    job.path("args").forEach(a -> args.add(a.asText()));
    assertThat(args).containsExactly("--config", "/opt/collscope/conf/collscope.properties");
    JobOptions o = JobOptions.parse("--config", file.toString());
    assertThat(o.get(JobOptions.BOOTSTRAP)).isEqualTo("kafka.kafka.svc:9092");
    assertThat(o.get(JobOptions.HISTORY_PATH)).isEqualTo("file:///flink-data/history");
  }

  @Test
  void theWorkloadsPodTemplatesAreValidPodsAndRunValidCommands() throws Exception {
    Schema pod = podSchema();
    JsonNode exporter = kind(K8S.resolve("exporter.yaml"), "Deployment");
    JsonNode emitter = kind(K8S.resolve("gpu-node-emitter.yaml"), "DaemonSet");
    for (JsonNode w : List.of(exporter, emitter)) {
      assertThat(w.path("apiVersion").asText()).isEqualTo("apps/v1");
      JsonNode template = w.path("spec").path("template");
      ObjectNode asPod = JSON.createObjectNode();
      asPod.put("apiVersion", "v1");
      asPod.put("kind", "Pod");
      asPod.set("metadata", template.path("metadata"));
      asPod.set("spec", template.path("spec"));
      assertThat(pod.validate(asPod))
          .as("%s's pod template", w.path("metadata").path("name"))
          .isEmpty();
      // The selector selects the template's pods.
      assertThat(labels(template.path("metadata").path("labels")))
          .containsAllEntriesOf(labels(w.path("spec").path("selector").path("matchLabels")));
      JsonNode container = template.path("spec").path("containers").get(0);
      List<String> args = new ArrayList<>();
      container.path("args").forEach(a -> args.add(a.asText()));
      Collscope.commandLine().parseArgs(args.toArray(String[]::new));
      // Every mount has its volume; the config volume is the ConfigMap at the images' conf/.
      Set<String> volumes = new HashSet<>();
      template.path("spec").path("volumes").forEach(v -> volumes.add(v.path("name").asText()));
      container
          .path("volumeMounts")
          .forEach(m -> assertThat(volumes).contains(m.path("name").asText()));
      template
          .path("spec")
          .path("volumes")
          .forEach(
              v -> {
                if (v.has("configMap"))
                  assertThat(v.path("configMap").path("name").asText())
                      .isEqualTo("collscope-config");
              });
    }
    // A misspelled container field is an error.
    ObjectNode broken = JSON.createObjectNode();
    broken.set("spec", exporter.path("spec").path("template").path("spec").deepCopy());
    ((ObjectNode) broken.path("spec").path("containers").get(0)).put("imagePullPolicyy", "x");
    assertThat(pod.validate(broken)).isNotEmpty();

    assertThat(
            exporter
                .path("spec")
                .path("template")
                .path("spec")
                .path("containers")
                .get(0)
                .path("image")
                .asText())
        .isEqualTo(compose().path("services").path("exporter").path("image").asText());
    assertThat(emitter.toString()).contains("nvidia.com/gpu");

    JsonNode service = kind(K8S.resolve("exporter.yaml"), "Service");
    assertThat(labels(exporter.path("spec").path("template").path("metadata").path("labels")))
        .containsAllEntriesOf(labels(service.path("spec").path("selector")));
    Set<String> portNames = new HashSet<>();
    exporter
        .path("spec")
        .path("template")
        .path("spec")
        .path("containers")
        .get(0)
        .path("ports")
        .forEach(p -> portNames.add(p.path("name").asText()));
    service
        .path("spec")
        .path("ports")
        .forEach(p -> assertThat(portNames).contains(p.path("targetPort").asText()));

    JsonNode pvc = kind(K8S.resolve("flink-data-pvc.yaml"), "PersistentVolumeClaim");
    assertThat(single(K8S.resolve("flink-deployment.yaml")).toString())
        .contains("\"claimName\":\"" + pvc.path("metadata").path("name").asText() + "\"");
  }

  @Test
  void theConfigMapsFileIsAValidConfiguration() throws Exception {
    Path file = tmp.resolve("collscope.properties");
    Files.writeString(file, configMapFile());
    assertThat(Collscope.configProblems(ConfigFile.load(file))).isEmpty();
    Files.writeString(file, configMapFile() + "bootstrapp = x\n");
    assertThat(Collscope.configProblems(ConfigFile.load(file))).hasSize(1);
  }

  // ---- helpers ----

  private static JsonNode compose() throws IOException {
    return YAML.readTree(DOCKER.resolve("compose.yaml").toFile());
  }

  private static String configMapFile() throws IOException {
    return kind(K8S.resolve("collscope-config.yaml"), "ConfigMap")
        .path("data")
        .path("collscope.properties")
        .asText();
  }

  private static Schema schema(String resource) throws IOException {
    try (InputStream raw = DeployFilesTest.class.getResourceAsStream("/schemas/" + resource)) {
      assertThat(raw).as(resource).isNotNull();
      InputStream in = resource.endsWith(".gz") ? new GZIPInputStream(raw) : raw;
      ObjectNode node = (ObjectNode) JSON.readTree(in);
      // Its meta-schema is draft 7, the registry's dialect; named by URL, it would be fetched.
      node.remove("$schema");
      // A base for the schema's relative $id (compose's is "compose_spec.json").
      return SCHEMAS.getSchema(SchemaLocation.of(SCHEMA_BASE + resource), node);
    }
  }

  /** The Kubernetes Pod schema, as the FlinkDeployment CRD has it for spec.podTemplate. */
  private static Schema podSchema() throws IOException {
    try (InputStream in =
        new GZIPInputStream(
            DeployFilesTest.class.getResourceAsStream(
                "/schemas/flinkdeployment_v1beta1.json.gz"))) {
      JsonNode crd = JSON.readTree(in);
      return SCHEMAS.getSchema(
          SchemaLocation.of(SCHEMA_BASE + "pod.json"),
          (crd.path("properties").path("spec").path("properties").path("podTemplate")));
    }
  }

  private static List<JsonNode> documents(Path file) throws IOException {
    List<JsonNode> docs = new ArrayList<>();
    try (var parser = new YAMLFactory().createParser(file.toFile())) {
      var it = YAML.readValues(parser, JsonNode.class);
      while (it.hasNext()) {
        JsonNode n = it.next();
        if (n != null && !n.isNull() && !n.isMissingNode()) docs.add(n);
      }
    }
    return docs;
  }

  private static JsonNode single(Path file) throws IOException {
    List<JsonNode> docs = documents(file);
    assertThat(docs).hasSize(1);
    return docs.get(0);
  }

  private static JsonNode kind(Path file, String kind) throws IOException {
    return documents(file).stream()
        .filter(d -> d.path("kind").asText().equals(kind))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind + " in " + file));
  }

  private static List<Path> k8sFiles() throws IOException {
    try (var s = Files.list(K8S)) {
      return s.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
    }
  }

  private static Map<String, String> labels(JsonNode n) {
    Map<String, String> m = new java.util.TreeMap<>();
    n.properties().forEach(e -> m.put(e.getKey(), e.getValue().asText()));
    return m;
  }

  private static List<Integer> containerPorts(JsonNode service) {
    List<Integer> ports = new ArrayList<>();
    for (JsonNode p : service.path("ports")) {
      String s = p.asText();
      ports.add(Integer.parseInt(s.substring(s.lastIndexOf(':') + 1)));
    }
    return ports;
  }

  private static List<String> command(JsonNode service) {
    List<String> c = new ArrayList<>();
    service.path("command").forEach(a -> c.add(a.asText()));
    return c;
  }

  /** The default of a command's option, as the command line resolves it without a file. */
  private static String optionDefault(CommandLine cli, String command, String option) {
    CommandLine c = cli;
    for (String name : command.split(" ")) c = c.getSubcommands().get(name);
    OptionSpec o = c.getCommandSpec().findOption(option);
    return new ConfigDefaultProvider(ConfigFile.none(), Map.of(), null).resolve(o).value();
  }

  /** Every environment variable collscope reads. */
  private static Set<String> knownVariables(CommandLine cli) {
    Set<String> vars = new TreeSet<>(List.of(ConfigFile.ENV_CONFIG, ConfigFile.ENV_HOME));
    for (var c : Config.commands(cli)) {
      for (OptionSpec o : c.options())
        ConfigDefaultProvider.environmentVariable(o).ifPresent(vars::add);
    }
    for (String n : JobOptions.DEFAULTS.keySet())
      vars.addAll(AttributionConfig.environmentVariables(n));
    return vars;
  }
}
