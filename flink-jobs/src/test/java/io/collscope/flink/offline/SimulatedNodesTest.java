package io.collscope.flink.offline;

import static org.assertj.core.api.Assertions.assertThat;

import io.collscope.avro.Attribution;
import io.collscope.emitter.SnapshotSink;
import io.collscope.flink.attribution.Thresholds;
import io.collscope.schema.Findings;
import io.collscope.sim.FaultModel;
import io.collscope.sim.NodeFaults;
import io.collscope.sim.OneShotSimulator;
import io.collscope.sim.SimIdentity;
import io.collscope.sim.SimSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The protocol simulator with node topology (nodes of 8 ranks, flags that cross nodes 20 µs later
 * than within one) through the job's per-record functions: the topology alone names nothing, a slow
 * node is named as the node, a node whose NIC is slow is named as the node too. 32 ranks on 4
 * nodes, 2 s windows, 8 s of simulated time: the first window (ranks joining) is not judged.
 */
class SimulatedNodesTest {

  static final int WORLD = 32;
  static final long WINDOW_MS = 2_000;
  static final long INTER_NODE_NANOS = 20_000;

  private static List<String> verdicts(NodeFaults faults) {
    OfflineAttribution job = new OfflineAttribution(WINDOW_MS, Thresholds.DEFAULT);
    OneShotSimulator.run(
        SimSpec.of(WORLD).withDurationNanos(8_000_000_000L),
        faults,
        SimIdentity.of("cl", "job", "dp0", Instant.parse("2026-01-01T00:00:00Z")),
        SnapshotSink.to(job::add));
    List<String> out = new ArrayList<>();
    List<Attribution> windows = job.attributions();
    // the first window holds the ranks' start, the last one the end of the run: neither is full
    for (Attribution a : windows.subList(1, windows.size() - 1)) {
      StringBuilder v = new StringBuilder(a.getVerdict().name());
      if (!a.getFindings().isEmpty()) {
        v.setLength(0);
        a.getFindings()
            .forEach(f -> v.append(v.length() == 0 ? "" : " ").append(Findings.token(f)));
      }
      out.add(v.toString());
    }
    System.out.println(faults + ": " + out);
    return out;
  }

  private static NodeFaults topology() {
    return NodeFaults.of(FaultModel.NONE, WORLD, INTER_NODE_NANOS);
  }

  @Test
  void nodesAloneNameNothing() {
    assertThat(verdicts(topology())).isNotEmpty().allMatch(v -> v.equals("NONE"), "NONE");
  }

  @Test
  void aSlowNodeIsNamedAsTheNode() {
    assertThat(verdicts(topology().slowNode(1, 1_000_000)))
        .isNotEmpty()
        .allMatch(v -> v.equals("SLOW_NODE(sim-node-1,ARRIVED_LATE)"), "slow node 1");
  }

  @Test
  void aSlowNicIsNamedAsItsNode() {
    assertThat(verdicts(topology().slowNic(2, 300_000)))
        .isNotEmpty()
        .allMatch(v -> v.equals("SLOW_NODE(sim-node-2,LINK)"), "node 2's network");
  }
}
