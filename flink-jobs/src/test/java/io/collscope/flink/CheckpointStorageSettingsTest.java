package io.collscope.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.junit.jupiter.api.Test;

class CheckpointStorageSettingsTest {

  private static Configuration cluster(String target) {
    Configuration c = new Configuration();
    c.set(DeploymentOptions.TARGET, target);
    return c;
  }

  @Test
  void aClusterWithoutACheckpointDirectoryIsRefusedInOneLine() {
    for (String target : new String[] {"remote", "embedded", "kubernetes-application"}) {
      assertThatThrownBy(
              () -> CheckpointStorageSettings.resolve(cluster(target), JobOptions.defaults()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("no durable checkpoint storage: the cluster has no")
          .hasMessageContaining("--checkpoint-dir")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }
  }

  @Test
  void aClusterThatKeepsCheckpointsInTheJobManagersMemoryIsRefused() {
    Configuration c = cluster("remote");
    c.set(CheckpointingOptions.CHECKPOINT_STORAGE, "jobmanager");
    c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, "file:///data/checkpoints");
    assertThatThrownBy(() -> CheckpointStorageSettings.resolve(c, JobOptions.defaults()))
        .hasMessageContaining("execution.checkpointing.storage: jobmanager");
  }

  @Test
  void aClusterCheckpointsToItsConfiguredDirectoryOrTheJobsOption() {
    Configuration c = cluster("remote");
    c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, "s3://bucket/collscope/checkpoints");
    Configuration r = CheckpointStorageSettings.resolve(c, JobOptions.defaults());
    assertThat(r.get(CheckpointingOptions.CHECKPOINT_STORAGE)).isEqualTo("filesystem");
    assertThat(r.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY))
        .isEqualTo("s3://bucket/collscope/checkpoints");
    // hashmap, the default: no incremental checkpoints to turn on
    assertThat(r.getOptional(CheckpointingOptions.INCREMENTAL_CHECKPOINTS)).isEmpty();

    Configuration o =
        CheckpointStorageSettings.resolve(
            cluster("remote"),
            JobOptions.defaults().with(JobOptions.CHECKPOINT_DIR, "hdfs://nn/ckpt"));
    assertThat(o.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY)).isEqualTo("hdfs://nn/ckpt");
  }

  @Test
  void rocksDbAndForStCheckpointIncrementallyUnlessConfiguredOtherwise() {
    for (String backend : new String[] {"rocksdb", "forst"}) {
      Configuration c = cluster("remote");
      c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, "file:///shared/checkpoints");
      c.set(StateBackendOptions.STATE_BACKEND, backend);
      assertThat(
              CheckpointStorageSettings.resolve(c, JobOptions.defaults())
                  .get(CheckpointingOptions.INCREMENTAL_CHECKPOINTS))
          .isTrue();
      c.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, false);
      assertThat(
              CheckpointStorageSettings.resolve(c, JobOptions.defaults())
                  .getOptional(CheckpointingOptions.INCREMENTAL_CHECKPOINTS))
          .isEmpty();
    }
  }

  @Test
  void aRelativeDirectoryIsRefused() {
    assertThatThrownBy(
            () ->
                CheckpointStorageSettings.resolve(
                    cluster("remote"),
                    JobOptions.defaults().with(JobOptions.CHECKPOINT_DIR, "checkpoints")))
        .hasMessageStartingWith("--checkpoint-dir 'checkpoints' must be an absolute path or URI");
  }

  @Test
  void inThisJvmWithoutADirectoryTheCheckpointsGoToATemporaryOne() {
    Configuration r = CheckpointStorageSettings.resolve(cluster("local"), JobOptions.defaults());
    assertThat(r.get(CheckpointingOptions.CHECKPOINT_STORAGE)).isEqualTo("filesystem");
    assertThat(
            Files.isDirectory(
                Path.of(java.net.URI.create(r.get(CheckpointingOptions.CHECKPOINTS_DIRECTORY)))))
        .isTrue();
    assertThat(CheckpointStorageSettings.inThisJvm(cluster("minicluster"))).isTrue();
    assertThat(CheckpointStorageSettings.inTheJobManager(cluster("embedded"))).isTrue();
  }
}
