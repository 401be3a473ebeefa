package io.collscope.cuda;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every rank of one communicator as this process sees it, by rank number: the ranks it runs ({@link
 * RankBuffers}) and the peers it maps ({@link IpcPeer}), with the GPUs it holds for them. {@link
 * #close()} releases the ranks' memory first, then the GPUs.
 */
final class RankSet implements AutoCloseable {

  private final Map<Integer, GpuDevice> devices = new LinkedHashMap<>();
  private final RankMemory[] ranks;

  RankSet(int worldSize) {
    ranks = new RankMemory[worldSize];
  }

  /** GPU {@code ordinal}, opened on first use and held until {@link #close()}. */
  GpuDevice device(int ordinal) {
    GpuDevice d = devices.get(ordinal);
    if (d == null) {
      d = GpuDevice.open(ordinal);
      devices.put(ordinal, d);
    }
    return d;
  }

  /** The GPUs held, in the order they were opened. */
  Collection<GpuDevice> devices() {
    return devices.values();
  }

  /** Takes {@code memory} as its rank's, to release with the rest. */
  <T extends RankMemory> T add(T memory) {
    ranks[memory.rank()] = memory;
    return memory;
  }

  RankMemory get(int rank) {
    return ranks[rank];
  }

  /** Rank {@code rank}, which must run in this process. */
  RankBuffers local(int rank) {
    if (ranks[rank] instanceof RankBuffers r) return r;
    throw new IllegalArgumentException("rank " + rank + " runs in another process");
  }

  /** The ranks that run in this process. */
  List<RankBuffers> local() {
    List<RankBuffers> out = new ArrayList<>();
    for (RankMemory m : ranks) {
      if (m instanceof RankBuffers r) out.add(r);
    }
    return out;
  }

  /** The ranks of other processes. */
  List<IpcPeer> peers() {
    List<IpcPeer> out = new ArrayList<>();
    for (RankMemory m : ranks) {
      if (m instanceof IpcPeer p) out.add(p);
    }
    return out;
  }

  @Override
  public void close() {
    for (RankMemory m : ranks) {
      if (m != null) m.close();
    }
    for (GpuDevice d : devices.values()) d.close();
    devices.clear();
  }
}
