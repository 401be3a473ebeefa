package io.collscope.cli;

import io.collscope.cluster.FlinkRest;
import io.collscope.cluster.LocalCluster;
import io.collscope.config.ConfigDefaultProvider;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code collscope cluster start|stop|status}: a Flink session cluster (a JobManager and N
 * TaskManagers) and, when no Kafka is configured, a broker, as processes on this machine from the
 * installation's lib/ (LocalCluster).
 */
@Command(
    name = "cluster",
    mixinStandardHelpOptions = true,
    description = "A Flink session cluster (and a Kafka broker) as processes on this machine.",
    subcommands = {
      ClusterCommand.Start.class,
      ClusterCommand.Stop.class,
      ClusterCommand.Status.class
    })
final class ClusterCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw Collscope.commandRequired(spec);
  }

  /** The folder every cluster command works in. */
  static final class DirOption {
    @Option(
        names = "--dir",
        defaultValue = Defaults.CLUSTER_DIR,
        description =
            "The cluster's folder: Flink configuration, logs, pids, checkpoints, savepoints,"
                + " the broker's data. Default: ${DEFAULT-VALUE}")
    Path dir;

    LocalCluster cluster() {
      return new LocalCluster(dir);
    }
  }

  @Command(
      name = "start",
      mixinStandardHelpOptions = true,
      description =
          "Start a JobManager, N TaskManagers and (unless --bootstrap, COLLSCOPE_BOOTSTRAP or the"
              + " file's bootstrap names a Kafka) a broker; wait until the TaskManagers registered.")
  static final class Start implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin DirOption dir;

    @Option(
        names = "--taskmanagers",
        defaultValue = "1",
        description = "TaskManager processes. Default: ${DEFAULT-VALUE}")
    int taskManagers;

    @Option(
        names = "--slots",
        defaultValue = "2",
        description = "Task slots per TaskManager. Default: ${DEFAULT-VALUE}")
    int slots;

    @Option(
        names = "--rest-port",
        defaultValue = Defaults.FLINK_REST_PORT,
        description = "The JobManager's REST port (web UI). Default: ${DEFAULT-VALUE}")
    int restPort;

    @Option(
        names = "--rest-bind-address",
        defaultValue = "localhost",
        description =
            "Where the REST API and web UI listen. Whoever reaches them can upload and run a jar"
                + " (collscope job submit does), so loopback unless you say otherwise, e.g."
                + " 0.0.0.0 behind a firewall. Default: ${DEFAULT-VALUE}")
    String restBindAddress;

    @Option(
        names = "--rpc-port",
        defaultValue = "6123",
        description = "The JobManager's RPC port. Default: ${DEFAULT-VALUE}")
    int rpcPort;

    @Option(
        names = "--bootstrap",
        defaultValue = Defaults.BOOTSTRAP,
        description =
            "A Kafka the cluster uses; when it is only the default, a broker is started on"
                + " --kafka-port. Default: ${DEFAULT-VALUE}")
    String bootstrap;

    @Option(
        names = "--kafka-port",
        defaultValue = Defaults.KAFKA_PORT,
        description = "The started broker's port. Default: ${DEFAULT-VALUE}")
    int kafkaPort;

    @Option(
        names = "--brokers",
        defaultValue = "1",
        description =
            "Kafka KRaft nodes to start (each its own JVM, on --kafka-port and the ports after"
                + " it); 3 makes every topic 3 replicas with min.insync.replicas 2, so one broker"
                + " may die without a lost or refused write. Default: ${DEFAULT-VALUE}")
    int brokers;

    @Option(
        names = "--ha",
        description =
            "Two JobManagers with ZooKeeper high availability (a ZooKeeper server is started on"
                + " --zookeeper-port; the standby's REST port is --rest-port + 1): when the leader"
                + " dies, the standby takes its jobs over from their latest checkpoint, no command"
                + " typed.")
    boolean ha;

    @Option(
        names = "--zookeeper-port",
        defaultValue = "2181",
        description = "The ZooKeeper server's port (with --ha). Default: ${DEFAULT-VALUE}")
    int zookeeperPort;

    @Option(
        names = "--taskmanager-heap",
        defaultValue = LocalCluster.Settings.DEFAULT_TASK_HEAP,
        description =
            "Task heap of each TaskManager (e.g. 640m, 4g; its JVM gets 128m more for Flink):"
                + " the job's state lives there and grows with the ranks it watches"
                + " (docs/SCALE.md). Default: ${DEFAULT-VALUE}")
    String taskHeap;

    @Option(
        names = "--timeout",
        defaultValue = "120s",
        converter = DurationConverter.class,
        description = "How long to wait for the TaskManagers. Default: ${DEFAULT-VALUE}")
    Duration timeout;

    @Override
    public Integer call() throws Exception {
      CommandLine.ParseResult pr = spec.commandLine().getParseResult();
      CommandLine.Model.OptionSpec b = spec.findOption("--bootstrap");
      boolean configured =
          pr.hasMatchedOption(b)
              || ConfigCommand.provider(spec).resolve(b).source()
                  != ConfigDefaultProvider.Source.DEFAULT;
      if (configured && brokers != 1) {
        throw new IllegalArgumentException(
            "--brokers starts brokers, but --bootstrap names an existing Kafka ("
                + bootstrap
                + "): not both");
      }
      LocalCluster cluster = dir.cluster();
      URI rest;
      try {
        rest =
            cluster.start(
                new LocalCluster.Settings(
                    taskManagers,
                    slots,
                    restPort,
                    rpcPort,
                    configured ? bootstrap : null,
                    kafkaPort,
                    restBindAddress,
                    brokers,
                    ha,
                    zookeeperPort,
                    taskHeap),
                timeout);
      } catch (java.io.IOException e) {
        cluster.stop();
        throw e;
      }
      var out = spec.commandLine().getOut();
      out.println("Flink at " + rest + " (" + taskManagers + " TaskManagers)");
      if (ha) {
        out.println(
            "standby JobManager at "
                + cluster.state().getProperty("rest.standby")
                + " (ZooKeeper at "
                + cluster.state().getProperty("zookeeper")
                + ")");
      }
      out.println("Kafka at " + cluster.state().getProperty("bootstrap"));
      out.println("folder " + cluster.dir() + " (logs in " + cluster.logDir() + ")");
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "stop",
      mixinStandardHelpOptions = true,
      description = "Stop every process of the cluster (TaskManagers, JobManager, broker).")
  static final class Stop implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin DirOption dir;

    @Override
    public Integer call() throws Exception {
      List<String> stopped = dir.cluster().stop();
      var out = spec.commandLine().getOut();
      out.println(stopped.isEmpty() ? "nothing running" : "stopped " + String.join(", ", stopped));
      out.flush();
      return Defaults.EXIT_OK;
    }
  }

  @Command(
      name = "status",
      mixinStandardHelpOptions = true,
      description =
          "The cluster's processes, its TaskManagers, slots and jobs; exit 0 when it runs, 1 when"
              + " not.")
  static final class Status implements Callable<Integer> {
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin DirOption dir;

    @Override
    public Integer call() throws Exception {
      LocalCluster cluster = dir.cluster();
      Map<String, Long> running = cluster.running();
      var out = spec.commandLine().getOut();
      if (running.isEmpty()) {
        out.println("not running (" + cluster.dir() + ")");
        out.flush();
        return Defaults.EXIT_FAILURE;
      }
      running.forEach((name, pid) -> out.println(name + " pid " + pid));
      var rest = cluster.restUrl();
      if (rest.isPresent()) {
        FlinkRest flink = new FlinkRest(rest.get());
        var overview = flink.overview();
        out.println(
            "Flink at "
                + rest.get()
                + overview
                    .map(
                        o ->
                            ": "
                                + o.path("taskmanagers").asInt()
                                + " TaskManagers, "
                                + o.path("slots-available").asInt()
                                + "/"
                                + o.path("slots-total").asInt()
                                + " slots free")
                    .orElse(": not answering"));
        if (overview.isPresent()) {
          for (FlinkRest.Job j : flink.jobs()) {
            out.println("job " + j.id() + " " + j.name() + " " + j.state());
          }
        }
      }
      out.println("Kafka at " + cluster.state().getProperty("bootstrap"));
      out.flush();
      return Defaults.EXIT_OK;
    }
  }
}
