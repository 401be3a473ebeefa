package io.collscope.sim;

import java.util.Arrays;

/**
 * Node topology for {@link OneShotSimulator}, as faults over another {@link FaultModel}: ranks are
 * grouped into nodes of {@link OneShotSimulator#RANKS_PER_NODE} (the hosts the records carry), a
 * flag crossing nodes takes {@code interNodeNanos} longer than one within a node (the network
 * against NVLink), and per node a slow NIC (every flag into or out of the node, to or from another
 * node, takes longer; both NICs of a link add up) or a slow node (every rank of it arrives late).
 *
 * <p>Why faults and not the simulator's latency model: the simulator keeps one link latency so that
 * a 1,024-rank world costs one maximum per collective; a link that differs is asked per collective
 * ({@link FaultModel#mayDelayLink}), which is what a topology is. It costs the links that cross
 * nodes, so it is for the worlds of tests (tens of ranks), not the 1,024-rank runs.
 */
public final class NodeFaults implements FaultModel {

  private final FaultModel base;
  private final long interNodeNanos;
  private final long[] nicNanos;
  private final long[] nodeNanos;

  private NodeFaults(FaultModel base, long interNodeNanos, long[] nicNanos, long[] nodeNanos) {
    this.base = base;
    this.interNodeNanos = interNodeNanos;
    this.nicNanos = nicNanos;
    this.nodeNanos = nodeNanos;
  }

  /** {@code base} on nodes of {@code worldSize} ranks whose flags cross nodes later by this. */
  public static NodeFaults of(FaultModel base, int worldSize, long interNodeNanos) {
    if (interNodeNanos < 0) throw new IllegalArgumentException("inter-node latency < 0");
    int nodes = (worldSize + OneShotSimulator.RANKS_PER_NODE - 1) / OneShotSimulator.RANKS_PER_NODE;
    return new NodeFaults(base, interNodeNanos, new long[nodes], new long[nodes]);
  }

  /** Node {@code node}'s NIC adds {@code nanos} to every flag into or out of it across nodes. */
  public NodeFaults slowNic(int node, long nanos) {
    long[] nic = Arrays.copyOf(nicNanos, nicNanos.length);
    nic[check(node, nanos)] += nanos;
    return new NodeFaults(base, interNodeNanos, nic, nodeNanos);
  }

  /** Every rank of node {@code node} arrives {@code nanos} late at every collective. */
  public NodeFaults slowNode(int node, long nanos) {
    long[] slow = Arrays.copyOf(nodeNanos, nodeNanos.length);
    slow[check(node, nanos)] += nanos;
    return new NodeFaults(base, interNodeNanos, nicNanos, slow);
  }

  private int check(int node, long nanos) {
    if (node < 0 || node >= nicNanos.length || nanos < 0) {
      throw new IllegalArgumentException(
          "node " + node + " not in 0.." + (nicNanos.length - 1) + " or delay < 0");
    }
    return node;
  }

  private static int node(int rank) {
    return rank / OneShotSimulator.RANKS_PER_NODE;
  }

  @Override
  public long arrivalDelayNanos(int r, long seq, long tNanos) {
    return base.arrivalDelayNanos(r, seq, tNanos) + nodeNanos[node(r)];
  }

  @Override
  public long copyDelayNanos(int r, long seq, long tNanos) {
    return base.copyDelayNanos(r, seq, tNanos);
  }

  @Override
  public long publishDelayNanos(int r, long seq, long tNanos) {
    return base.publishDelayNanos(r, seq, tNanos);
  }

  @Override
  public long ackDelayNanos(int r, long seq, long tNanos) {
    return base.ackDelayNanos(r, seq, tNanos);
  }

  @Override
  public long linkDelayNanos(int from, int to, long seq, long tNanos) {
    long d = base.linkDelayNanos(from, to, seq, tNanos);
    if (node(from) == node(to)) return d;
    return d + interNodeNanos + nicNanos[node(from)] + nicNanos[node(to)];
  }

  @Override
  public boolean mayDelayLink(int from, int to) {
    if (base.mayDelayLink(from, to)) return true;
    return node(from) != node(to) && interNodeNanos + nicNanos[node(from)] + nicNanos[node(to)] > 0;
  }

  @Override
  public boolean isDead(int r, long tNanos) {
    return base.isDead(r, tNanos);
  }

  @Override
  public String toString() {
    return base
        + " on nodes of "
        + OneShotSimulator.RANKS_PER_NODE
        + " (inter-node +"
        + interNodeNanos
        + " ns, slow NICs "
        + Arrays.toString(nicNanos)
        + " ns, slow nodes "
        + Arrays.toString(nodeNanos)
        + " ns)";
  }
}
