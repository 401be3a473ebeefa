package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.collective.Sampling;
import io.collscope.counters.CounterBlock;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * Everything one rank of this process allocates on its GPU: its stream, ring slots, sync words,
 * input, output, kernel state, kernel parameters, and its counter block in mapped host memory.
 * {@link #close()} frees all of it.
 */
final class RankBuffers implements RankMemory {

  private final int rank;
  private final GpuDevice device;
  private final int blocks;
  private final CollectiveConfig cfg;
  private final DType dtype;
  private final int sampleEvery;
  private final Sampling sampling; // the kernel's choice at sampleEvery, for host launches
  private final AllReduceAlgorithm algorithm;
  private final CUstream stream = new CUstream();
  private final CUdeviceptr slots = new CUdeviceptr();
  private final CUdeviceptr sync = new CUdeviceptr();
  private final CUdeviceptr input = new CUdeviceptr();
  private final CUdeviceptr output = new CUdeviceptr();
  private final CUdeviceptr state = new CUdeviceptr();
  private final CUdeviceptr params = new CUdeviceptr();
  private final Pointer counterHost = new Pointer();
  private final CUdeviceptr counterDev = new CUdeviceptr();
  // In allocation order; close() frees them in this order.
  private final List<Object> owned = new ArrayList<>();
  private final CounterBlock block;
  private long[] faultTable = new long[0]; // as last written to the parameters
  // The collectives enqueued on the stream so far, graph replays included: the next one's
  // sequence is this plus one, as the kernel reads it from S_NEXT_SEQ when it starts (while none
  // aborted: after an abort every launch returns at entry, whichever kernel it is).
  private long enqueued;

  /**
   * Allocates rank {@code rank}'s memory in {@code device}'s context, which it makes current, and
   * uploads its input and initial state; frees what it allocated if that fails. Its kernel
   * parameters follow with {@link #writeParams} once every peer's memory is known.
   */
  RankBuffers(
      int rank, GpuDevice device, int blocks, CollectiveConfig cfg, CudaCollective.Options opt) {
    this.rank = rank;
    this.device = device;
    this.blocks = blocks;
    this.cfg = cfg;
    this.dtype = opt.dtype();
    this.sampleEvery = opt.sampleEveryFor(elementBytes());
    this.sampling = CudaCollective.Options.samplingFor(sampleEvery);
    this.algorithm = opt.algorithmFor(elementBytes(), cfg.worldSize());
    try {
      device.makeCurrent();
      cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
      owned.add(stream);
      // push and two-shot: a slot holds one segment per rank, written by that rank (its own stays
      // unused), and the piece flags (two-shot: the gather flags) follow the ring, so a peer (or a
      // process, over CUDA IPC) that maps the slots maps them too
      alloc(
          slots,
          algorithm.pushSlots
              ? elementBytes() * cfg.ringSlots() * cfg.worldSize()
                  + OsarLayout.pieceFlagBytes(cfg.worldSize(), elementBytes())
              : elementBytes() * cfg.ringSlots());
      alloc(sync, OsarLayout.SYNC_BYTES);
      alloc(input, elementBytes());
      alloc(output, elementBytes());
      alloc(state, 8L * OsarLayout.stateWords(blocks));
      alloc(params, 8L * OsarLayout.P_WORDS);
      long[] st = new long[OsarLayout.stateWords(blocks)];
      st[OsarLayout.S_NEXT_SEQ] = 1;
      st[OsarLayout.S_CPS] = device.cyclesPerSecond;
      cuMemcpyHtoD(state, Pointer.to(st), 8L * st.length);
      uploadInput();
      int n = cfg.worldSize();
      int cbBytes = CounterBlock.sizeOf(n, cfg.histogramBuckets());
      cuMemHostAlloc(counterHost, cbBytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
      owned.add(counterHost);
      cuMemHostGetDevicePointer(counterDev, counterHost, 0);
      ByteBuffer cb = counterHost.getByteBuffer(0, cbBytes).order(ByteOrder.LITTLE_ENDIAN);
      block = CounterBlock.initialize(cb, n, cfg.histogramBuckets());
      block.setCyclesPerSecond(device.cyclesPerSecond);
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  private void alloc(CUdeviceptr p, long bytes) {
    cuMemAlloc(p, bytes);
    owned.add(p);
    cuMemsetD8(p, (byte) 0, bytes);
  }

  private long elementBytes() {
    return (long) cfg.elements() * dtype.bytes;
  }

  /**
   * Uploads the pattern of sequence 0, whose sequence term is 0: the kernel adds collective seq's
   * term ({@link CollectiveConfig#sequenceTerm}) as it copies the input into the ring slot.
   */
  private void uploadInput() {
    int e = cfg.elements();
    if (dtype == DType.F32) {
      float[] in = new float[e];
      for (int i = 0; i < e; i++) in[i] = CollectiveConfig.inputValue(rank, 0, i);
      cuMemcpyHtoD(input, Pointer.to(in), elementBytes());
    } else {
      short[] in = new short[e];
      for (int i = 0; i < e; i++) in[i] = DType.toBf16(CollectiveConfig.inputValue(rank, 0, i));
      cuMemcpyHtoD(input, Pointer.to(in), elementBytes());
    }
  }

  /** Uploads the kernel's parameters: the shape, the injected faults, and every rank's memory. */
  void writeParams(FaultPlan faults, RankSet all) {
    int n = cfg.worldSize();
    long[] p = new long[OsarLayout.P_WORDS];
    p[OsarLayout.P_RANK] = rank;
    p[OsarLayout.P_WORLD] = n;
    p[OsarLayout.P_SLOTS] = cfg.ringSlots();
    p[OsarLayout.P_ELEMS] = cfg.elements();
    p[OsarLayout.P_BYTES] = elementBytes();
    p[OsarLayout.P_BUDGET_NS] = cfg.waitBudgetNanos();
    p[OsarLayout.P_SAMPLE_MASK] = sampleEvery - 1;
    p[OsarLayout.P_PUSH_WARPS] = CudaCollective.Options.PUSH_WARPS;
    p[OsarLayout.P_PIECE_UNITS] = CudaCollective.Options.PIECE_UNITS;
    p[OsarLayout.P_HIST_BUCKETS] = cfg.histogramBuckets();
    p[OsarLayout.P_WORK_BLOCKS] = blocks;
    p[OsarLayout.P_SEQ_PERIOD] = CollectiveConfig.SEQUENCE_PERIOD;
    // the faults active at the start of the run; the dispatcher updates them (updateFaults)
    faultTable = FaultTable.of(faults, rank, 0);
    p[OsarLayout.P_N_FAULTS] = faultTable.length / OsarLayout.F_WORDS;
    System.arraycopy(faultTable, 0, p, OsarLayout.P_FAULTS, faultTable.length);
    device.makeCurrent();
    cuMemcpyHtoD(params, Pointer.to(p), 8L * p.length);
    putPointer(OsarLayout.P_INPUT, input);
    putPointer(OsarLayout.P_OUTPUT, output);
    putPointer(OsarLayout.P_STATE, state);
    putPointer(OsarLayout.P_COUNTER_BLOCK, counterDev);
    for (int q = 0; q < n; q++) {
      RankMemory peer = all.get(q);
      putPointer(OsarLayout.P_SLOT_PTR + q, peer.slots());
      putPointer(OsarLayout.P_FLAG_PTR + q, peer.sync().withByteOffset(OsarLayout.SYNC_FLAG));
      putPointer(OsarLayout.P_ACK_PTR + q, peer.sync().withByteOffset(OsarLayout.SYNC_ACK));
      putPointer(OsarLayout.P_PUBTIME_PTR + q, peer.sync().withByteOffset(OsarLayout.SYNC_PUBTIME));
      putPointer(OsarLayout.P_ACKTIME_PTR + q, peer.sync().withByteOffset(OsarLayout.SYNC_ACKTIME));
      putPointer(OsarLayout.P_ABORT_PTR + q, peer.sync().withByteOffset(OsarLayout.SYNC_ABORT));
    }
  }

  /**
   * Rewrites the fault table for run time {@code elapsedNanos} when a fault's active interval
   * started or ended since the last write: enqueued on the rank's stream, so it takes effect at the
   * next launch (a graph replay reads the same parameters). The device's context is current.
   */
  void updateFaults(FaultPlan faults, long elapsedNanos) {
    if (faultTable.length == 0) return;
    long[] t = FaultTable.of(faults, rank, elapsedNanos);
    if (java.util.Arrays.equals(t, faultTable)) return;
    faultTable = t;
    cuMemcpyHtoDAsync(
        params.withByteOffset(8L * OsarLayout.P_FAULTS), Pointer.to(t), 8L * t.length, stream);
  }

  /** Writes a device address into word {@code index} of the kernel's parameter array. */
  private void putPointer(int index, CUdeviceptr value) {
    cuMemcpyHtoD(params.withByteOffset(8L * index), Pointer.to(value), 8);
  }

  /** Word {@code index} of the kernel's state; the device's context is current. */
  long stateWord(int index) {
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), state.withByteOffset(8L * index), 8);
    return v[0];
  }

  /**
   * Counts one collective launched on the stream outside a graph; whether it is {@code
   * instrumented} and the kernel's sample accounts it in full (the kernel's own hash of its
   * sequence: {@link CudaCollective.Options#sampled}).
   */
  boolean enqueueOne(boolean instrumented) {
    long seq = ++enqueued;
    return instrumented && sampling.accounts(seq);
  }

  /** Counts {@code n} collectives a graph replay enqueued. */
  void enqueuedByGraph(long n) {
    enqueued += n;
  }

  /**
   * The collective whose result the output holds: the last one that completed (0: none yet); the
   * device's context is current and the stream idle.
   */
  long lastCompleted() {
    return stateWord(OsarLayout.S_NEXT_SEQ) - 1;
  }

  /** The last all-reduce's result as floats; the device's context is current. */
  float[] readOutput() {
    int e = cfg.elements();
    float[] got = new float[e];
    if (dtype == DType.F32) {
      cuMemcpyDtoH(Pointer.to(got), output, elementBytes());
    } else {
      short[] raw = new short[e];
      cuMemcpyDtoH(Pointer.to(raw), output, elementBytes());
      for (int i = 0; i < e; i++) got[i] = DType.fromBf16(raw[i]);
    }
    return got;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public GpuDevice device() {
    return device;
  }

  @Override
  public CUdeviceptr slots() {
    return slots;
  }

  @Override
  public CUdeviceptr sync() {
    return sync;
  }

  /** How this rank's collectives move their data ({@link CudaCollective.Options#algorithmFor}). */
  AllReduceAlgorithm algorithm() {
    return algorithm;
  }

  /** Thread blocks of each of this rank's collectives. */
  int blocks() {
    return blocks;
  }

  CUstream stream() {
    return stream;
  }

  /** The device address of the kernel's parameter array: every kernel's one argument. */
  CUdeviceptr params() {
    return params;
  }

  CounterBlock block() {
    return block;
  }

  /** Waits for the rank's stream, then frees everything it allocated. */
  @Override
  public void close() {
    try {
      device.makeCurrent();
      cuStreamSynchronize(stream);
    } catch (RuntimeException ignored) {
      // best effort: free what we can
    }
    for (Object o : owned) {
      try {
        if (o instanceof CUstream s) cuStreamDestroy(s);
        else if (o instanceof CUdeviceptr p) cuMemFree(p);
        else if (o instanceof Pointer p) cuMemFreeHost(p);
      } catch (RuntimeException ignored) {
        // keep freeing the rest
      }
    }
    owned.clear();
  }
}
