package io.collscope.counters;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One (communicator, rank) counter block: the binary layout shared by the CUDA kernel ({@code
 * counter_block.h}) and the CPU backend. See README.md in this package for the byte offsets.
 *
 * <p>All counters are cumulative since the block was created and never reset. A single writer (one
 * GPU thread, or one rank thread) publishes under a sequence lock; any number of readers take
 * consistent snapshots with {@link SnapshotReader}.
 */
public final class CounterBlock {

  public static final int MAGIC = 0x42435343; // "CSCB" little-endian
  public static final int LAYOUT_VERSION = 1;
  public static final int DEFAULT_HISTOGRAM_BUCKETS = 40;

  // Header: immutable after creation.
  static final int OFF_MAGIC = 0;
  static final int OFF_VERSION = 4;
  static final int OFF_WORLD_SIZE = 8;
  static final int OFF_BUCKETS = 12;
  // Sequence lock: even = stable, odd = a write is in progress.
  static final int OFF_SEQLOCK = 16;
  // Counters, each a little-endian u64.
  static final int OFF_CYCLES_PER_SECOND = 24;
  static final int OFF_CALLS = 32;
  static final int OFF_BYTES = 40;
  static final int OFF_GUARD = 48;
  static final int OFF_COPY = 56;
  static final int OFF_PUBLISH = 64;
  static final int OFF_WAIT = 72;
  static final int OFF_REDUCE = 80;
  static final int OFF_TIMEOUTS = 88;
  static final int OFF_PEER_WAIT = 96;

  static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private final ByteBuffer buf;
  private final int worldSize;
  private final int buckets;

  private CounterBlock(ByteBuffer buf, int worldSize, int buckets) {
    this.buf = buf.order(ByteOrder.LITTLE_ENDIAN);
    this.worldSize = worldSize;
    this.buckets = buckets;
  }

  /** Bytes needed for a block of this shape, rounded up to 128 (one block per cache line pair). */
  public static int sizeOf(int worldSize, int buckets) {
    int raw = OFF_PEER_WAIT + 8 * (2 * worldSize + buckets);
    return (raw + 127) & ~127;
  }

  /** A zeroed block in fresh direct memory (CPU backend). */
  public static CounterBlock allocate(int worldSize, int buckets) {
    ByteBuffer b = ByteBuffer.allocateDirect(sizeOf(worldSize, buckets));
    return initialize(b, worldSize, buckets);
  }

  /** Writes the header of a new block into memory the caller owns (e.g. mapped GPU memory). */
  public static CounterBlock initialize(ByteBuffer memory, int worldSize, int buckets) {
    if (worldSize < 1 || buckets < 1) {
      throw new IllegalArgumentException("worldSize and buckets must be >= 1");
    }
    if (memory.capacity() < sizeOf(worldSize, buckets)) {
      throw new IllegalArgumentException(
          "block needs " + sizeOf(worldSize, buckets) + " bytes, got " + memory.capacity());
    }
    ByteBuffer b = memory.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < sizeOf(worldSize, buckets); i += 8) {
      b.putLong(i, 0L);
    }
    b.putInt(OFF_MAGIC, MAGIC);
    b.putInt(OFF_VERSION, LAYOUT_VERSION);
    b.putInt(OFF_WORLD_SIZE, worldSize);
    b.putInt(OFF_BUCKETS, buckets);
    VarHandle.releaseFence();
    return new CounterBlock(b, worldSize, buckets);
  }

  /** Attaches to an initialized block, validating its header. */
  public static CounterBlock attach(ByteBuffer memory) {
    ByteBuffer b = memory.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt(OFF_MAGIC) != MAGIC || b.getInt(OFF_VERSION) != LAYOUT_VERSION) {
      throw new IllegalArgumentException(
          String.format(
              "not a counter block (magic %08x version %d)",
              b.getInt(OFF_MAGIC), b.getInt(OFF_VERSION)));
    }
    return new CounterBlock(b, b.getInt(OFF_WORLD_SIZE), b.getInt(OFF_BUCKETS));
  }

  public int worldSize() {
    return worldSize;
  }

  public int buckets() {
    return buckets;
  }

  ByteBuffer buffer() {
    return buf;
  }

  int offPeerWait(int p) {
    return OFF_PEER_WAIT + 8 * p;
  }

  int offPeerLast(int p) {
    return OFF_PEER_WAIT + 8 * (worldSize + p);
  }

  int offHistogram(int i) {
    return OFF_PEER_WAIT + 8 * (2 * worldSize + i);
  }

  /**
   * Publishes the accumulator's totals under the sequence lock. Single writer only: the CPU rank
   * that owns the block calls this once per collective.
   */
  public void publish(RankAccumulator a) {
    long s = (long) LONGS.getOpaque(buf, OFF_SEQLOCK);
    LONGS.setOpaque(buf, OFF_SEQLOCK, s + 1);
    // Readers that see the odd value must not see any of the stores below before it.
    VarHandle.storeStoreFence();
    buf.putLong(OFF_CYCLES_PER_SECOND, a.cyclesPerSecond);
    buf.putLong(OFF_CALLS, a.calls);
    buf.putLong(OFF_BYTES, a.bytes);
    buf.putLong(OFF_GUARD, a.guardCycles);
    buf.putLong(OFF_COPY, a.copyCycles);
    buf.putLong(OFF_PUBLISH, a.publishCycles);
    buf.putLong(OFF_WAIT, a.waitCycles);
    buf.putLong(OFF_REDUCE, a.reduceCycles);
    buf.putLong(OFF_TIMEOUTS, a.timeouts);
    for (int p = 0; p < worldSize; p++) {
      buf.putLong(offPeerWait(p), a.peerWaitCycles[p]);
      buf.putLong(offPeerLast(p), a.peerArrivedLast[p]);
    }
    for (int i = 0; i < buckets; i++) {
      buf.putLong(offHistogram(i), a.histogram[i]);
    }
    LONGS.setRelease(buf, OFF_SEQLOCK, s + 2);
  }
}
