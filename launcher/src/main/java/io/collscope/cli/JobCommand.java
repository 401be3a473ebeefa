package io.collscope.cli;

import io.collscope.cluster.FlinkRest;
import io.collscope.cluster.LocalCluster;
import io.collscope.config.AttributionConfig;
import io.collscope.config.ConfigDefaultProvider.Resolved;
import io.collscope.config.ConfigDefaultProvider.Source;
import io.collscope.emitter.KafkaSnapshotSink;
import io.collscope.flink.AttributionJob;
import io.collscope.flink.CheckpointStorageSettings;
import io.collscope.flink.JobOptions;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code collscope job submit|list|savepoint|cancel|upgrade|recover}: the attribution job on a
 * Flink session cluster, through the JobManager's REST API (FlinkRest). Its options come from the
 * configuration (AttributionConfig): {@code --set NAME=VALUE} &gt; environment &gt; file &gt;
 * default.
 */
@Command(
    name = "job",
    mixinStandardHelpOptions = true,
    description =
        "The attribution job on a Flink cluster: submit, list, savepoint, cancel, upgrade,"
            + " recover.",
    subcommands = {
      JobCommand.Submit.class,
      JobCommand.ListJobs.class,
      JobCommand.Savepoint.class,
      JobCommand.Cancel.class,
      JobCommand.Upgrade.class,
      JobCommand.Recover.class
    })
final class JobCommand implements Runnable {

  private static final Duration SAVEPOINT_TIMEOUT = Duration.ofMinutes(5);
  private static final Duration RUNNING_TIMEOUT = Duration.ofMinutes(3);
  private static final Duration TOPIC_TIMEOUT = Duration.ofSeconds(30);

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  /** Which JobManager: --rest, else the local cluster's (--dir), else localhost:8081. */
  static final class Target {
    @Option(
        names = "--rest",
        defaultValue = Defaults.FLINK_REST,
        description =
            "The JobManager's REST URL. Default: the cluster of --dir, else http://localhost:8081")
    String rest;

    @Option(
        names = "--dir",
        defaultValue = Defaults.CLUSTER_DIR,
        description = "A cluster started by `collscope cluster start`. Default: ${DEFAULT-VALUE}")
    Path dir;

    FlinkRest flink() throws IOException {
      if (rest != null && !rest.isBlank()) return new FlinkRest(URI.create(rest));
      return new FlinkRest(
          new LocalCluster(dir).restUrl().orElse(URI.create("http://localhost:8081/")));
    }

    /** The Kafka of the local cluster, if --dir is one. */
    String clusterBootstrap() throws IOException {
      return new LocalCluster(dir).state().getProperty("bootstrap");
    }
  }

  /** The job jar and its options. */
  static final class Submission {
    @Option(
        names = "--jar",
        description =
            "The shaded job jar. Default: job/collscope-flink-jobs-*-job.jar of the installation"
                + " (flink-jobs/target/ in a checkout)")
    Path jar;

    @Option(
        names = "--set",
        paramLabel = "NAME=VALUE",
        description =
            "A job option (JobOptions: window, abs-floor-us, history-path, ...), over the"
                + " environment and the file's attribution.NAME; repeatable")
    Map<String, String> set = new LinkedHashMap<>();

    @Option(
        names = "--partitions",
        defaultValue = Defaults.PARTITIONS,
        description =
            "Partitions of the snapshot topic, created before the job starts if it is missing"
                + " (the job's source needs it). Default: ${DEFAULT-VALUE}")
    int partitions;

    @Option(
        names = "--parallelism",
        defaultValue = "0",
        description =
            "Subtasks of each of the job's operators. Default (0): every slot of the cluster when"
                + " the job is submitted, so that a cluster started with more TaskManagers runs the"
                + " job on all of them")
    int parallelism;

    Path jar() throws IOException {
      if (jar != null) return jar;
      String home = System.getenv("COLLSCOPE_HOME");
      Path root = Path.of(home == null || home.isBlank() ? "." : home);
      for (Path d : List.of(root.resolve("job"), root.resolve("flink-jobs/target"))) {
        if (!Files.isDirectory(d)) continue;
        try (Stream<Path> s = Files.list(d)) {
          var found =
              s.filter(p -> p.getFileName().toString().matches("collscope-flink-jobs-.*-job\\.jar"))
                  .findFirst();
          if (found.isPresent()) return found.get();
        }
      }
      throw new IllegalArgumentException(
          "no job jar in " + root.resolve("job") + " or flink-jobs/target: give --jar");
    }

    List<String> arguments(CommandLine.Model.CommandSpec spec, Target target, PrintWriter out)
        throws Exception {
      // before anything is started or created: a bad flag is the user's error
      if (parallelism < 0) {
        throw new IllegalArgumentException("--parallelism must be 0 (every slot) or more");
      }
      Map<String, Resolved> values =
          AttributionConfig.resolve(
              ConfigCommand.provider(spec).file(),
              ConfigCommand.provider(spec).env(),
              new LinkedHashMap<>(set));
      Resolved bootstrap = values.get("bootstrap");
      String local = target.clusterBootstrap();
      if (bootstrap.source() == Source.DEFAULT && local != null) {
        values.put("bootstrap", new Resolved(local, Source.DEFAULT, "the local cluster"));
      }
      out.println("job options: " + describe(values));
      List<String> args = AttributionConfig.arguments(values);
      requireDurableCheckpoints(target.flink(), args);
      // The job's Kafka source fails over and over while its topic does not exist.
      KafkaSnapshotSink.connect(
              values.get(JobOptions.BOOTSTRAP).value(),
              io.collscope.kafka.KafkaClientConfig.loadOrNone(
                  values.get(JobOptions.KAFKA_CONFIG).value()),
              values.get(JobOptions.SNAPSHOT_TOPIC).value(),
              partitions,
              TOPIC_TIMEOUT)
          .close();
      return args;
    }

    private static String describe(Map<String, Resolved> values) {
      List<String> parts = new ArrayList<>();
      values.forEach(
          (k, r) -> {
            if (r.source() != Source.DEFAULT || !r.detail().isEmpty()) {
              parts.add(k + "=" + r.value() + " (" + r.source().name().toLowerCase() + ")");
            }
          });
      return parts.isEmpty() ? "defaults" : String.join(", ", parts);
    }
  }

  /**
   * Refuses (one line, exit 2) a cluster on which the job would keep its checkpoints in the
   * JobManager's memory. The job refuses it too (CheckpointStorageSettings), but inside the
   * JobManager, as a failed REST call — and upgrade would by then have stopped the running job.
   */
  static void requireDurableCheckpoints(FlinkRest flink, List<String> args) throws IOException {
    Configuration cluster = Configuration.fromMap(flink.configuration());
    // The job runs there, whatever execution target the JobManager's own configuration names.
    cluster.set(DeploymentOptions.TARGET, "remote");
    CheckpointStorageSettings.resolve(cluster, JobOptions.parse(args.toArray(String[]::new)));
  }

  /**
   * Uploads and runs the job jar. {@code parallelism} 0: every slot the cluster has then (Flink's
   * own default, {@code parallelism.default}, is 1 in a cluster {@code collscope cluster start}
   * writes, and would leave every TaskManager but one idle). A job restored from a savepoint may
   * change its parallelism: its state is split by key group, not by subtask.
   */
  static String submit(
      FlinkRest flink,
      Path jar,
      List<String> args,
      String savepoint,
      boolean allowNonRestored,
      int parallelism)
      throws IOException {
    // A cluster that is starting (compose, Kubernetes) answers once it has a TaskManager.
    flink.awaitTaskManagers(1, RUNNING_TIMEOUT);
    int p = parallelism > 0 ? parallelism : Math.max(1, flink.slotsTotal());
    String jarId = flink.uploadJar(jar);
    String id = flink.runJar(jarId, args, savepoint, allowNonRestored, p);
    flink.awaitRunning(id, RUNNING_TIMEOUT);
    return id;
  }

  /** The job to act on: the one given, else the one running attribution job. */
  static String runningJob(FlinkRest flink, String given) throws IOException {
    return job(flink, given, List.of("RUNNING"));
  }

  /** The job given, else the one attribution job in one of these states. */
  static String job(FlinkRest flink, String given, List<String> states) throws IOException {
    if (given != null) return given;
    List<FlinkRest.Job> running =
        flink.jobs().stream()
            .filter(j -> states.contains(j.state()) && j.name().equals(AttributionJob.JOB_NAME))
            .toList();
    if (running.size() != 1) {
      throw new IllegalArgumentException(
          running.size()
              + " running "
              + AttributionJob.JOB_NAME
              + " jobs at "
              + flink.base()
              + ": name one by its id");
    }
    return running.get(0).id();
  }

  @Command(
      name = "submit",
      mixinStandardHelpOptions = true,
      description = "Upload the job jar and run the attribution job; print its id once it runs.")
  static final class Submit implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;
    @Mixin Submission submission;

    @Option(names = "--from-savepoint", description = "Start from this savepoint.")
    String savepoint;

    @Option(
        names = "--allow-non-restored-state",
        description = "Start even when the savepoint has state no operator takes.")
    boolean allowNonRestored;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      List<String> args = submission.arguments(spec, target, out);
      FlinkRest flink = target.flink();
      String id =
          submit(
              flink, submission.jar(), args, savepoint, allowNonRestored, submission.parallelism);
      out.println("job " + id + " RUNNING at " + flink.base());
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "The cluster's jobs.")
  static final class ListJobs implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      for (FlinkRest.Job j : target.flink().jobs()) {
        out.println(j.id() + " " + j.name() + " " + j.state());
      }
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "savepoint",
      mixinStandardHelpOptions = true,
      description = "Take a savepoint of a running job (it keeps running); print its path.")
  static final class Savepoint implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;

    @Parameters(arity = "0..1", paramLabel = "JOB_ID", description = "Default: the running one.")
    String jobId;

    @Option(
        names = "--target-directory",
        description = "Where. Default: the cluster's execution.checkpointing.savepoint-dir")
    String targetDirectory;

    @Option(
        names = "--stop",
        description = "Stop the job once the savepoint is taken (stop-with-savepoint).")
    boolean stop;

    @Override
    public Integer call() throws Exception {
      FlinkRest flink = target.flink();
      String id = runningJob(flink, jobId);
      String path = flink.savepoint(id, targetDirectory, stop, SAVEPOINT_TIMEOUT);
      PrintWriter out = spec.commandLine().getOut();
      out.println("savepoint " + path + (stop ? " (job " + id + " stopped)" : ""));
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Cancel a job.")
  static final class Cancel implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;

    @Parameters(arity = "0..1", paramLabel = "JOB_ID", description = "Default: the running one.")
    String jobId;

    @Override
    public Integer call() throws Exception {
      FlinkRest flink = target.flink();
      String id = job(flink, jobId, List.of("RUNNING", "RESTARTING", "CREATED", "INITIALIZING"));
      flink.cancel(id);
      spec.commandLine().getOut().println("cancelled " + id);
      spec.commandLine().getOut().flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "upgrade",
      mixinStandardHelpOptions = true,
      description = {
        "Stop the running job with a savepoint, then submit the (new) job jar with the (new)"
            + " options from that savepoint: its state (each rank's counter baseline, each"
            + " communicator's alert state, open windows) carries over.",
      })
  static final class Upgrade implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;
    @Mixin Submission submission;

    @Parameters(arity = "0..1", paramLabel = "JOB_ID", description = "Default: the running one.")
    String jobId;

    @Option(
        names = "--allow-non-restored-state",
        description = "Start even when the savepoint has state no operator takes.")
    boolean allowNonRestored;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      List<String> args = submission.arguments(spec, target, out);
      Path jar = submission.jar();
      FlinkRest flink = target.flink();
      String old = runningJob(flink, jobId);
      String savepoint = flink.savepoint(old, null, true, SAVEPOINT_TIMEOUT);
      out.println("job " + old + " stopped with savepoint " + savepoint);
      out.flush();
      String id = submit(flink, jar, args, savepoint, allowNonRestored, submission.parallelism);
      out.println("job " + id + " RUNNING from savepoint " + savepoint);
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "recover",
      mixinStandardHelpOptions = true,
      description = {
        "After a JobManager died without high availability: submit the job (jar and options as"
            + " for submit) from the newest complete checkpoint Flink retained in the cluster's"
            + " execution.checkpointing.dir (or the job option checkpoint-dir), so it goes on"
            + " where its last checkpoint left it: nothing lost, nothing twice.",
      })
  static final class Recover implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin Target target;
    @Mixin Submission submission;

    @Parameters(
        arity = "0..1",
        paramLabel = "JOB_ID",
        description = "The dead job whose checkpoints to take. Default: the newest checkpoint.")
    String jobId;

    @Option(
        names = "--from-checkpoint",
        paramLabel = "DIR",
        description = "This checkpoint (.../chk-N) instead of the newest one found.")
    String checkpoint;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      FlinkRest flink = target.flink();
      flink.awaitTaskManagers(1, RUNNING_TIMEOUT);
      for (FlinkRest.Job j : flink.jobs()) {
        if (j.name().equals(AttributionJob.JOB_NAME)
            && List.of("RUNNING", "CREATED", "RESTARTING", "INITIALIZING").contains(j.state())) {
          throw new IllegalArgumentException(
              "job "
                  + j.id()
                  + " is "
                  + j.state()
                  + " at "
                  + flink.base()
                  + ": nothing to recover");
        }
      }
      List<String> args = submission.arguments(spec, target, out);
      String from = checkpoint;
      if (from == null) {
        Configuration cluster = Configuration.fromMap(flink.configuration());
        cluster.set(DeploymentOptions.TARGET, "remote");
        String dir =
            CheckpointStorageSettings.resolve(
                    cluster, JobOptions.parse(args.toArray(String[]::new)))
                .get(org.apache.flink.configuration.CheckpointingOptions.CHECKPOINTS_DIRECTORY);
        var latest = io.collscope.cluster.RetainedCheckpoints.latest(dir, jobId);
        if (latest.isEmpty()) {
          throw new IllegalArgumentException(
              "no complete checkpoint"
                  + (jobId == null ? "" : " of job " + jobId)
                  + " in "
                  + dir
                  + ": submit the job instead");
        }
        from = latest.get().path().toUri().toString();
        out.println(
            "newest checkpoint: "
                + from
                + " (job "
                + latest.get().jobId()
                + ", completed "
                + latest.get().completed()
                + ")");
        out.flush();
      }
      String id = submit(flink, submission.jar(), args, from, false, submission.parallelism);
      out.println("job " + id + " RUNNING from checkpoint " + from);
      out.flush();
      return Defaults.EXIT_OK;
    }
  }
}
