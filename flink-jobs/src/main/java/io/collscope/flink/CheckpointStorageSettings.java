package io.collscope.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.fs.Path;

/**
 * Where the job's checkpoints go, decided before it starts: always to files, never to the
 * JobManager's memory.
 *
 * <p>Why: without {@code execution.checkpointing.dir} Flink keeps checkpoints in the JobManager's
 * memory, which refuses any operator's state over 5 MB and loses every checkpoint with the
 * JobManager. The job's state grows with the ranks (a baseline snapshot per rank, the open windows
 * of each rank, the alert state of each communicator): at 4,000 ranks one subtask's state already
 * exceeds it, and a 10,000-rank replay through the demo failed 7 checkpoints and lost windows
 * (issue 47).
 *
 * <ul>
 *   <li>On a cluster (any execution target but this JVM's MiniCluster) the directory is the job
 *       option {@code checkpoint-dir}, else the cluster's {@code execution.checkpointing.dir}; with
 *       neither the job refuses to start, one line, instead of failing its first large checkpoint.
 *   <li>In this JVM (the demo, {@code eval --live}, the benchmarks, tests) the caller's directory
 *       ({@code checkpoint-dir}: the demo's run directory; {@code bench pipeline}'s own), else a
 *       temporary one.
 * </ul>
 *
 * <p>Incremental checkpoints: the job runs on the state backend its configuration names, and all of
 * collscope's deployments (the demo, {@code eval --live}, {@code bench pipeline}, {@code collscope
 * cluster}, compose, Kubernetes) name none, so it runs on Flink's default, {@code hashmap}, and its
 * checkpoints are full. Incremental does not apply there: the heap backend has no incremental
 * snapshot (only RocksDB and ForSt have one, or a changelog backend wrapped around it, which needs
 * storage of its own and is not used). The heap backend is kept because every record reads and
 * writes its rank's state on a budget of microseconds (docs/SCALE.md): RocksDB or ForSt would
 * serialize the baseline and the window accumulator on every record, where the heap touches objects
 * (the baseline is kept as bytes so that a checkpoint copies it cheaply, see Baseline). A full
 * checkpoint is about 5.5 KB per rank (22.2 MB at 4,000 ranks in communicators of 8 with 2 s
 * windows, DemoReplayCheckpointsITCase), written asynchronously: about 1.1 MB/s per thousand ranks
 * at the default 5 s interval. A cluster whose state outgrows the heap sets {@code
 * state.backend.type: rocksdb} or {@code forst} (docs/SCALE.md), and then the job turns incremental
 * checkpoints on, unless {@code execution.checkpointing.incremental} says otherwise.
 */
public final class CheckpointStorageSettings {

  /** The state backends that take incremental checkpoints. */
  static final Set<String> INCREMENTAL_BACKENDS = Set.of("rocksdb", "forst");

  /** Execution targets that run the job in the submitting JVM, on a MiniCluster. */
  static final Set<String> IN_THIS_JVM = Set.of("local", "minicluster");

  /**
   * The execution target of a job whose main runs inside the JobManager (a jar run through the REST
   * API, application mode).
   */
  static final String IN_THE_JOBMANAGER = "embedded";

  private CheckpointStorageSettings() {}

  /**
   * The checkpoint storage (and, for RocksDB or ForSt, incremental checkpoints) of a job that
   * {@code flink} (the environment's configuration: the cluster's, and the execution target) would
   * run with options {@code o}.
   *
   * @throws IllegalArgumentException on a cluster without durable checkpoint storage, or for a
   *     directory that is no absolute path or URI
   */
  public static Configuration resolve(ReadableConfig flink, JobOptions o) {
    Configuration c = new Configuration();
    c.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
    c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, directory(flink, o));
    // hashmap (the default) has no incremental snapshot: see the class comment.
    if (INCREMENTAL_BACKENDS.contains(flink.get(StateBackendOptions.STATE_BACKEND).toLowerCase())
        && flink.getOptional(CheckpointingOptions.INCREMENTAL_CHECKPOINTS).isEmpty()) {
      c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
    }
    return c;
  }

  /** Whether {@code flink} runs the job in this JVM (a MiniCluster) rather than on a cluster. */
  public static boolean inThisJvm(ReadableConfig flink) {
    return IN_THIS_JVM.contains(flink.getOptional(DeploymentOptions.TARGET).orElse("local"));
  }

  /** Whether the job's main runs inside the JobManager (System.exit would end the JobManager). */
  public static boolean inTheJobManager(ReadableConfig flink) {
    return IN_THE_JOBMANAGER.equals(flink.getOptional(DeploymentOptions.TARGET).orElse(""));
  }

  private static String directory(ReadableConfig flink, JobOptions o) {
    String option = o.get(JobOptions.CHECKPOINT_DIR).trim();
    if (!option.isEmpty()) return checked("--" + JobOptions.CHECKPOINT_DIR, option);
    Optional<String> configured = flink.getOptional(CheckpointingOptions.CHECKPOINTS_DIRECTORY);
    Optional<String> storage = flink.getOptional(CheckpointingOptions.CHECKPOINT_STORAGE);
    boolean memory = storage.map(s -> s.equalsIgnoreCase("jobmanager")).orElse(false);
    if (configured.isPresent() && !configured.get().isBlank() && !memory) {
      return checked(CheckpointingOptions.CHECKPOINTS_DIRECTORY.key(), configured.get().trim());
    }
    if (!inThisJvm(flink)) {
      throw new IllegalArgumentException(
          "no durable checkpoint storage: "
              + (memory
                  ? "the cluster sets execution.checkpointing.storage: jobmanager"
                  : "the cluster has no execution.checkpointing.dir")
              + "; set execution.checkpointing.dir (with storage filesystem) in its Flink"
              + " configuration, or the job option --"
              + JobOptions.CHECKPOINT_DIR
              + ", to a directory every JobManager and TaskManager reaches (e.g."
              + " s3://bucket/collscope/checkpoints): the JobManager's memory takes no state over"
              + " 5 MB and loses it with the JobManager");
    }
    try {
      return Files.createTempDirectory("collscope-checkpoints-").toUri().toString();
    } catch (IOException e) {
      throw new UncheckedIOException("no temporary directory for the job's checkpoints", e);
    }
  }

  /** {@code dir}, or a one-line error naming {@code what} if it is no absolute path or URI. */
  private static String checked(String what, String dir) {
    Path p;
    try {
      p = new Path(dir);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + " '" + dir + "': " + e.getMessage());
    }
    if (!p.isAbsolute() || p.getParent() == null) {
      throw new IllegalArgumentException(
          what
              + " '"
              + dir
              + "' must be an absolute path or URI below the root (e.g. s3://b/ckpt)");
    }
    return dir;
  }
}
