package io.collscope.nccl;

import io.collscope.counters.CounterBlock;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One counter block file the NCCL profiler plugin writes ({@code
 * gpu-emitter/src/main/c/nccl-profiler/collscope_block.h}): a counter block of layout 3, read with
 * {@link io.collscope.counters.SnapshotReader} like the kernels' blocks, then the plugin's
 * extension region (identity of the communicator instance, statistics the counter model has no
 * field for) and the rank's arrival ring, which only the node's other ranks read; from extension
 * version 2 on, the rank's network waits per peer ({@link Extension#net()}). Blocks of version 1
 * (plugins from before it) are read too, without network waits.
 *
 * <p>Mapped read-only: the sidecar never writes into a training process's memory.
 */
public final class NcclBlockFile {

  public static final int HIST_BUCKETS = 40;
  public static final int EXT_MAGIC = 0x584e5343; // "CSNX"
  public static final int EXT_VERSION = 2;

  /** The oldest extension version read: 1, before the network region. */
  public static final int MIN_EXT_VERSION = 1;

  static final int X_MAGIC = 0;
  static final int X_VERSION = 4;
  static final int X_RANK = 8;
  static final int X_NRANKS = 12;
  static final int X_COMM_ID = 16;
  static final int X_INSTANCE = 24;
  static final int X_PID = 32;
  static final int X_NNODES = 40;
  static final int X_FINALIZED = 44;
  static final int X_HEARTBEAT_NS = 48;
  static final int X_COMM_NAME = 56;
  static final int X_FLAGS = 120;

  /**
   * {@link Header#flags()}: the writer holds a write lock on the whole file while it lives (an
   * open-file-description lock the kernel releases however the process ends), so a free lock means
   * the writer is gone, whatever PID namespace it ran in.
   */
  public static final int FLAG_WRITER_LOCK = 1;

  static final int X_STATS = 128;
  static final int N_FUNCS = 8;
  static final int FUNC_STRIDE = 24;
  static final int X_FUNCS = X_STATS + 8 * 16;
  static final int RING_PER_FUNC = 2048;
  static final int RING_ENTRY = 32;
  static final int X_HWM = X_FUNCS + N_FUNCS * FUNC_STRIDE;
  static final int X_RING = X_HWM + 8 * N_FUNCS;
  static final int EXT_SIZE = X_RING + N_FUNCS * RING_PER_FUNC * RING_ENTRY;

  /** Version 2: the network region, {@link #NET_ARRAYS} arrays of nranks longs, at EXT_SIZE. */
  static final int X_NET = EXT_SIZE;

  static final int NET_ARRAYS = 4;

  /** The plugin's statistics, in their order in the extension region. */
  public enum Stat {
    LAUNCH_NS,
    LAUNCH_N,
    KERNEL_NS,
    GRAPH_REFUSED,
    DROPPED,
    UNMATCHED,
    STALE,
    PEERS_SEEN,
    CLOCK_LAG_MIN,
    /** Collectives timed by their kernel-channel events (1 in {@link #SAMPLING}). */
    TIMED,
    /**
     * The sampling period: the timed collectives' kernel time, wait, lateness and histograms are
     * weighted by it; calls and bytes count every collective.
     */
    SAMPLING,
    /**
     * 1 while timing is stopped on this communicator: collectives of it, or of another live
     * communicator of the process, were graph-captured without kernel-channel events while sampling
     * (NCCL 2.28's profiler counters would disagree; the mask is one per process).
     */
    KERNEL_OFF,
    /** Captured collectives whose kernel-channel events differed from their capture's first. */
    GRAPH_MIXED,
    /**
     * Network proxy operations not followed: every record of the plugin's pool was in use (their
     * steps are missing from the network waits). 0 in version 1 blocks.
     */
    NET_DROPPED;

    public static final int COUNT = values().length;
  }

  /** Collective types the plugin counts apart, in its order. */
  public static final String[] FUNCS = {
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "Broadcast",
    "Reduce",
    "AllToAll",
    "GatherScatter",
    "other"
  };

  private static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /**
   * The constants {@code collscope_block.h} must define, name by name (NcclBlockLayoutTest): the C
   * header is written by hand.
   */
  public static Map<String, Long> headerConstants() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("CSN_HIST_BUCKETS", (long) HIST_BUCKETS);
    m.put("CSN_EXT_MAGIC", (long) EXT_MAGIC);
    m.put("CSN_EXT_VERSION", (long) EXT_VERSION);
    m.put("CSN_X_MAGIC", (long) X_MAGIC);
    m.put("CSN_X_VERSION", (long) X_VERSION);
    m.put("CSN_X_RANK", (long) X_RANK);
    m.put("CSN_X_NRANKS", (long) X_NRANKS);
    m.put("CSN_X_COMM_ID", (long) X_COMM_ID);
    m.put("CSN_X_INSTANCE", (long) X_INSTANCE);
    m.put("CSN_X_PID", (long) X_PID);
    m.put("CSN_X_NNODES", (long) X_NNODES);
    m.put("CSN_X_FINALIZED", (long) X_FINALIZED);
    m.put("CSN_X_HEARTBEAT_NS", (long) X_HEARTBEAT_NS);
    m.put("CSN_X_COMM_NAME", (long) X_COMM_NAME);
    m.put("CSN_X_FLAGS", (long) X_FLAGS);
    m.put("CSN_FLAG_WRITER_LOCK", (long) FLAG_WRITER_LOCK);
    m.put("CSN_X_STATS", (long) X_STATS);
    for (Stat s : Stat.values()) m.put("CSN_S_" + s.name(), (long) s.ordinal());
    m.put("CSN_S_N", (long) Stat.COUNT);
    m.put("CSN_N_FUNCS", (long) N_FUNCS);
    m.put("CSN_FUNC_STRIDE", (long) FUNC_STRIDE);
    m.put("CSN_RING_PER_FUNC", (long) RING_PER_FUNC);
    m.put("CSN_RING_ENTRY", (long) RING_ENTRY);
    m.put("CSN_NET_ARRAYS", (long) NET_ARRAYS);
    return m;
  }

  /**
   * What a block says about its writer: fixed when the communicator instance was created. {@code
   * flags}: {@code FLAG_*}, 0 in blocks of plugins from before them.
   */
  public record Header(
      long commId,
      long instance,
      int rank,
      int nranks,
      int nNodes,
      long pid,
      String commName,
      int flags) {
    /** Whether a free lock on the file proves its writer gone ({@link #FLAG_WRITER_LOCK}). */
    public boolean writerLocks() {
      return (flags & FLAG_WRITER_LOCK) != 0;
    }

    public String commHex() {
      return String.format("%016x", commId);
    }

    public String instanceHex() {
      return String.format("%016x", instance);
    }
  }

  /**
   * The extension's cumulative statistics, read in one publication with the block. {@code net}: per
   * peer rank, the network waits of this rank's proxy steps (cumulative) — send wait ns, send
   * steps, receive wait ns, receive steps, each indexed by peer; {@code null} in a version 1 block.
   */
  public record Extension(
      boolean finalized,
      long heartbeatNs,
      long[] stats,
      long[][] funcs /* [func][calls,bytes,ns] */,
      long[][] net /* [sendNs,sendSteps,recvNs,recvSteps][peer], null: version 1 */) {
    public long stat(Stat s) {
      return stats[s.ordinal()];
    }
  }

  private final Path path;
  private final MappedByteBuffer map;
  private final CounterBlock block;
  private final int extOffset;
  private final Header header;
  private final int version;

  private NcclBlockFile(Path path, MappedByteBuffer map) {
    this.path = path;
    this.map = map;
    map.order(ByteOrder.LITTLE_ENDIAN);
    this.block = CounterBlock.attach(map);
    this.extOffset = CounterBlock.sizeOf(block.worldSize(), block.buckets());
    this.version = map.capacity() < extOffset + EXT_SIZE ? -1 : map.getInt(extOffset + X_VERSION);
    if (version < MIN_EXT_VERSION
        || version > EXT_VERSION
        || map.getInt(extOffset + X_MAGIC) != EXT_MAGIC
        || version >= 2
            && map.capacity() < extOffset + EXT_SIZE + (long) NET_ARRAYS * 8 * block.worldSize()) {
      throw new IllegalArgumentException(
          path
              + ": not a collscope NCCL block of extension version "
              + MIN_EXT_VERSION
              + " to "
              + EXT_VERSION);
    }
    byte[] name = new byte[64];
    map.get(extOffset + X_COMM_NAME, name);
    int len = 0;
    while (len < name.length && name[len] != 0) len++;
    this.header =
        new Header(
            map.getLong(extOffset + X_COMM_ID),
            map.getLong(extOffset + X_INSTANCE),
            map.getInt(extOffset + X_RANK),
            map.getInt(extOffset + X_NRANKS),
            map.getInt(extOffset + X_NNODES),
            map.getLong(extOffset + X_PID),
            new String(name, 0, len, StandardCharsets.UTF_8),
            map.getInt(extOffset + X_FLAGS));
  }

  /**
   * Maps a block file. The plugin renames a block into place only after writing its header, so a
   * file found under its name is complete.
   *
   * @throws IllegalArgumentException if the file is not such a block
   */
  public static NcclBlockFile open(Path path) throws IOException {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
      if (m.capacity() < CounterBlock.sizeOf(1, 1)) {
        throw new IllegalArgumentException(path + ": too short for a counter block");
      }
      return new NcclBlockFile(path, m);
    }
  }

  public Path path() {
    return path;
  }

  public CounterBlock block() {
    return block;
  }

  public Header header() {
    return header;
  }

  /** The block's extension version ({@link #MIN_EXT_VERSION} to {@link #EXT_VERSION}). */
  public int version() {
    return version;
  }

  /** Collective types whose ranks end together (AllReduce, AllGather, ReduceScatter, AlltoAll). */
  static final int[] END_TOGETHER = {0, 1, 2, 5};

  /** Timed collectives read off the arrival ring: keys ascending, kernel lengths in ns. */
  public record Timed(long[] keys, long[] kernelNs) {}

  /**
   * This rank's timed collectives of the types that end together, written into its arrival ring
   * after {@code seen[type]} (the highest key of the type taken by the previous call; updated):
   * what the job joins across nodes (CounterSnapshot.timed_keys). An entry is taken only when its
   * key reads the same before and after its values (the plugin writes the key last, with release),
   * and only up to the type's high-water mark read first, so an entry being rewritten is left for
   * the next call. A ring holds 2,048 collectives per type: a rank that timed more between two
   * calls loses the oldest (the sample gets smaller, the join stays right).
   */
  public Timed readTimed(long[] seen) {
    int ext = extOffset;
    long[] keys = new long[END_TOGETHER.length * RING_PER_FUNC];
    long[] ns = new long[keys.length];
    int n = 0;
    for (int f : END_TOGETHER) {
      long hwm = (long) LONGS.getAcquire(map, ext + X_HWM + 8 * f);
      if (hwm <= seen[f]) continue;
      int base = ext + X_RING + RING_ENTRY * RING_PER_FUNC * f;
      for (int i = 0; i < RING_PER_FUNC; i++) {
        int at = base + RING_ENTRY * i;
        long k1 = (long) LONGS.getAcquire(map, at);
        if (k1 <= seen[f] || k1 > hwm) continue;
        long kernel = map.getLong(at + 16);
        VarHandle.acquireFence();
        long k2 = (long) LONGS.getOpaque(map, at);
        if (k1 != k2) continue;
        keys[n] = k1;
        ns[n++] = kernel;
      }
      seen[f] = hwm;
    }
    // Ascending by key: sort the pairs by key.
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) order[i] = i;
    long[] k = keys;
    java.util.Arrays.sort(order, (a, b) -> Long.compare(k[a], k[b]));
    long[] sortedKeys = new long[n];
    long[] sortedNs = new long[n];
    for (int i = 0; i < n; i++) {
      sortedKeys[i] = keys[order[i]];
      sortedNs[i] = ns[order[i]];
    }
    return new Timed(sortedKeys, sortedNs);
  }

  /**
   * The extension statistics of one publication, under the block's sequence lock (the plugin writes
   * them in the same publication as the counters); {@code null} when the writer never let go of the
   * lock in {@code maxRetries} tries.
   */
  public Extension readExtension(int maxRetries) {
    for (int i = 0; i <= maxRetries; i++) {
      long s1 = (long) LONGS.getAcquire(map, CounterBlock.SEQLOCK_OFFSET);
      if ((s1 & 1) != 0) {
        Thread.onSpinWait();
        continue;
      }
      long[] stats = new long[Stat.COUNT];
      for (int k = 0; k < Stat.COUNT; k++) stats[k] = map.getLong(extOffset + X_STATS + 8 * k);
      long[][] funcs = new long[N_FUNCS][3];
      for (int f = 0; f < N_FUNCS; f++) {
        for (int k = 0; k < 3; k++) {
          funcs[f][k] = map.getLong(extOffset + X_FUNCS + FUNC_STRIDE * f + 8 * k);
        }
      }
      long[][] net = null;
      if (version >= 2) {
        int w = block.worldSize();
        net = new long[NET_ARRAYS][w];
        for (int a = 0; a < NET_ARRAYS; a++) {
          for (int p = 0; p < w; p++) net[a][p] = map.getLong(extOffset + X_NET + 8 * (a * w + p));
        }
      }
      boolean finalized = map.getInt(extOffset + X_FINALIZED) != 0;
      long heartbeat = map.getLong(extOffset + X_HEARTBEAT_NS);
      VarHandle.acquireFence();
      long s2 = (long) LONGS.getOpaque(map, CounterBlock.SEQLOCK_OFFSET);
      if (s1 == s2) return new Extension(finalized, heartbeat, stats, funcs, net);
    }
    return null;
  }
}
