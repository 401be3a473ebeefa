package io.collscope.flink.testing;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/** The Flink MiniCluster the job-level tests run on: one TaskManager with two slots. */
public final class MiniClusters {

  private MiniClusters() {}

  public static MiniClusterExtension oneTaskManagerTwoSlots() {
    return new MiniClusterExtension(
        new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1)
            .setNumberSlotsPerTaskManager(2)
            .build());
  }
}
