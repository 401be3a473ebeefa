package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.collscope.collective.CollectiveBackend;
import io.collscope.collective.CollectiveConfig;
import io.collscope.collective.FaultPlan;
import io.collscope.counters.CounterBlock;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The GPU backend: N ranks of the instrumented one-shot all-reduce ({@code osar.cu}) driven through
 * JCuda's driver API. Ranks are emulated on one GPU (one stream each in one context) when there are
 * fewer GPUs than ranks, placed one per GPU with peer access, or run one per process with CUDA IPC
 * ({@link #openProcessRank}). One dispatcher thread per GPU only launches kernels and checks
 * results. Each rank's counter block lives in mapped host memory, written by {@code osar_publish}
 * after every k-th collective and read by the reporter with the same {@link
 * io.collscope.counters.SnapshotReader} as the CPU backend.
 *
 * <p>Every allocation, stream and context is released by {@link #close()}, on every exit path.
 */
public final class CudaCollective implements CollectiveBackend {

  /** How the ranks are laid out and run. */
  public record Options(
      DType dtype,
      boolean instrumented,
      int blocksPerRank,
      int threadsPerBlock,
      int[] deviceOfRank,
      int checkEveryBatches,
      int publishEvery) {

    /**
     * Collectives between counter-block publications. The totals are exact in device memory either
     * way (and {@link CudaCollective#flush()} publishes them); publishing less often spares kernels
     * the PCIe writes to mapped host memory that each kernel end must drain. At 1 s snapshots,
     * collectives of microseconds are published thousands of times per read.
     */
    public static final int DEFAULT_PUBLISH_EVERY = 16;

    public static Options defaults(int worldSize) {
      int gpus = CudaProbe.gpuCount();
      int[] dev = new int[worldSize];
      for (int r = 0; r < worldSize; r++) {
        dev[r] = gpus >= worldSize ? r : 0; // one rank per GPU when there are enough
      }
      return new Options(DType.F32, true, 0, 512, dev, 64, DEFAULT_PUBLISH_EVERY);
    }

    public Options withDType(DType d) {
      return new Options(
          d,
          instrumented,
          blocksPerRank,
          threadsPerBlock,
          deviceOfRank,
          checkEveryBatches,
          publishEvery);
    }

    public Options withInstrumented(boolean i) {
      return new Options(
          dtype, i, blocksPerRank, threadsPerBlock, deviceOfRank, checkEveryBatches, publishEvery);
    }
  }

  private static final int BATCH = 16;

  private final CollectiveConfig cfg;
  private final FaultPlan faults;
  private final Options opt;
  private final int n;
  private final Map<Integer, Device> devices = new LinkedHashMap<>();
  private final RankRes[] ranks;
  private final List<Thread> threads = new ArrayList<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running;
  private volatile int publishEvery;
  // One process per GPU: this process runs only onlyRank and maps its peers' memory by IPC.
  private int onlyRank = -1;
  private int onlyDevice;
  private java.nio.file.Path rendezvous;
  private java.time.Duration rendezvousTimeout;
  private boolean closed;

  private static final class Device {
    int ordinal;
    CUdevice dev = new CUdevice();
    CUcontext ctx = new CUcontext();
    OsarModule module;
    String name;
    int sms;
    int smemPerBlock;
    long cyclesPerSecond;
  }

  private static final class RankRes {
    int rank;
    boolean local = true; // false: a peer process's rank, known only by its IPC-mapped memory
    Device device;
    int blocks;
    int sincePublish;
    CUstream stream = new CUstream();
    CUdeviceptr slots = new CUdeviceptr();
    CUdeviceptr sync = new CUdeviceptr();
    CUdeviceptr input = new CUdeviceptr();
    CUdeviceptr output = new CUdeviceptr();
    CUdeviceptr state = new CUdeviceptr();
    CUdeviceptr params = new CUdeviceptr();
    Pointer counterHost = new Pointer();
    CUdeviceptr counterDev = new CUdeviceptr();
    CounterBlock block;
    List<Object> owned = new ArrayList<>();
  }

  private CudaCollective(CollectiveConfig cfg, FaultPlan faults, Options opt) {
    this.cfg = cfg;
    this.faults = faults;
    this.opt = opt;
    this.n = cfg.worldSize();
    this.ranks = new RankRes[n];
    this.publishEvery = Math.max(1, opt.publishEvery());
  }

  public static CudaCollective open(CollectiveConfig cfg, FaultPlan faults) {
    return open(cfg, faults, Options.defaults(cfg.worldSize()));
  }

  public static CudaCollective open(CollectiveConfig cfg, FaultPlan faults, Options opt) {
    if (cfg.worldSize() > OsarLayout.MAX_RANKS) {
      throw new IllegalArgumentException(
          "--ranks: the CUDA backend supports up to " + OsarLayout.MAX_RANKS);
    }
    if (cfg.histogramBuckets() > OsarLayout.HIST_MAX) {
      throw new IllegalArgumentException("at most " + OsarLayout.HIST_MAX + " histogram buckets");
    }
    if (CudaProbe.gpuCount() == 0) {
      throw new IllegalStateException("--backend cuda: " + CudaProbe.reason());
    }
    CudaCollective c = new CudaCollective(cfg, faults, opt);
    try {
      c.allocate();
      return c;
    } catch (RuntimeException | Error e) {
      c.free();
      throw e;
    }
  }

  /**
   * One rank of a communicator whose ranks are separate processes, one per GPU (production): this
   * process allocates its own rank on GPU {@code device}, swaps CUDA IPC handles with the other
   * ranks' processes through {@code rendezvous} (see {@link IpcRendezvous}) and maps their ring
   * slots and flags. Only this rank runs and reports here.
   */
  public static CudaCollective openProcessRank(
      CollectiveConfig cfg,
      FaultPlan faults,
      Options opt,
      int rank,
      int device,
      java.nio.file.Path rendezvous,
      java.time.Duration timeout) {
    if (rank < 0 || rank >= cfg.worldSize()) {
      throw new IllegalArgumentException(
          "--rank " + rank + " is outside the world of " + cfg.worldSize());
    }
    if (device < 0 || device >= CudaProbe.gpuCount()) {
      throw new IllegalArgumentException(
          "--device " + device + ": this machine has " + CudaProbe.gpuCount() + " GPU(s)");
    }
    CudaCollective c = new CudaCollective(cfg, faults, opt);
    c.onlyRank = rank;
    c.onlyDevice = device;
    c.rendezvous = rendezvous;
    c.rendezvousTimeout = timeout;
    try {
      c.allocateProcessRank();
      return c;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      c.free();
      throw new IllegalStateException("interrupted during the rendezvous", e);
    } catch (RuntimeException | Error e) {
      c.free();
      throw e;
    }
  }

  private void allocateProcessRank() throws InterruptedException {
    JCudaDriver.setExceptionsEnabled(true);
    cuInit(0);
    Device d = openDevice(onlyDevice);
    RankRes me = new RankRes();
    me.rank = onlyRank;
    me.device = d;
    me.blocks = opt.blocksPerRank() > 0 ? opt.blocksPerRank() : Math.min(16, d.sms);
    ranks[onlyRank] = me;
    cuCtxSetCurrent(d.ctx);
    allocRank(me);
    jcuda.driver.CUipcMemHandle slots = new jcuda.driver.CUipcMemHandle();
    jcuda.driver.CUipcMemHandle sync = new jcuda.driver.CUipcMemHandle();
    cuIpcGetMemHandle(slots, me.slots);
    cuIpcGetMemHandle(sync, me.sync);
    IpcRendezvous rv = new IpcRendezvous(rendezvous, onlyRank, n, rendezvousTimeout);
    rv.publish(
        new IpcRendezvous.Published(
            onlyRank,
            ProcessHandle.current().pid(),
            onlyDevice,
            IpcRendezvous.bytes(slots),
            IpcRendezvous.bytes(sync)));
    IpcRendezvous.Published[] all = rv.awaitAll();
    for (int q = 0; q < n; q++) {
      if (q == onlyRank) continue;
      RankRes peer = new RankRes();
      peer.rank = q;
      peer.device = d; // the mapping lives in this process's context
      peer.local = false;
      ranks[q] = peer;
      cuIpcOpenMemHandle(
          peer.slots,
          IpcRendezvous.handle(all[q].slots()),
          jcuda.driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      peer.owned.add(new IpcMapping(peer.slots));
      cuIpcOpenMemHandle(
          peer.sync,
          IpcRendezvous.handle(all[q].sync()),
          jcuda.driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      peer.owned.add(new IpcMapping(peer.sync));
    }
    writeParams(me);
    rv.ready();
    rv.awaitReady();
  }

  /** Peer memory mapped by {@code cuIpcOpenMemHandle}: closed, not freed. */
  private record IpcMapping(CUdeviceptr pointer) {}

  /** The ranks that run in this process. */
  private List<RankRes> localRanks() {
    List<RankRes> out = new ArrayList<>();
    for (RankRes r : ranks) {
      if (r != null && r.local) out.add(r);
    }
    return out;
  }

  private void allocate() {
    JCudaDriver.setExceptionsEnabled(true);
    cuInit(0);
    int[] perDevice = new int[CudaProbe.gpuCount()];
    for (int r = 0; r < n; r++) perDevice[opt.deviceOfRank()[r]]++;
    for (int r = 0; r < n; r++) {
      int ord = opt.deviceOfRank()[r];
      if (!devices.containsKey(ord)) devices.put(ord, openDevice(ord));
    }
    enablePeerAccess();
    for (int r = 0; r < n; r++) {
      Device d = devices.get(opt.deviceOfRank()[r]);
      RankRes rr = new RankRes();
      rr.rank = r;
      rr.device = d;
      rr.blocks =
          opt.blocksPerRank() > 0
              ? opt.blocksPerRank()
              // every rank's blocks must be resident at once (one block per SM); one SM per rank
              // is left spare for whatever else shares the GPU
              : Math.max(1, Math.min(16, d.sms / perDevice[d.ordinal] - 1));
      if (perDevice[d.ordinal] * rr.blocks > d.sms) {
        throw new IllegalArgumentException(
            perDevice[d.ordinal]
                + " ranks of "
                + rr.blocks
                + " blocks do not fit on the "
                + d.sms
                + " SMs of GPU "
                + d.ordinal
                + ": the collective would wait on blocks never scheduled");
      }
      ranks[r] = rr;
      cuCtxSetCurrent(d.ctx);
      allocRank(rr);
    }
    for (int r = 0; r < n; r++) {
      cuCtxSetCurrent(ranks[r].device.ctx);
      writeParams(ranks[r]);
    }
  }

  private Device openDevice(int ordinal) {
    Device d = new Device();
    d.ordinal = ordinal;
    cuDeviceGet(d.dev, ordinal);
    cuDevicePrimaryCtxRetain(d.ctx, d.dev);
    devices.put(ordinal, d); // registered before anything can fail, so free() releases it
    cuCtxSetCurrent(d.ctx);
    byte[] name = new byte[256];
    cuDeviceGetName(name, name.length, d.dev);
    d.name = new String(name).trim();
    int[] a = new int[1];
    cuDeviceGetAttribute(a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d.dev);
    d.sms = a[0];
    d.module = new OsarModule();
    // Ask for just over half an SM's shared memory: one collective block per SM, so no data
    // block shares an SM with another and bandwidth is even.
    cuDeviceGetAttribute(
        a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d.dev);
    int perSm = a[0];
    cuDeviceGetAttribute(
        a, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d.dev);
    d.smemPerBlock = Math.min(a[0], perSm / 2 + 1024);
    for (jcuda.driver.CUfunction f : d.module.collectives()) {
      cuFuncSetAttribute(
          f,
          jcuda.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          d.smemPerBlock);
    }
    d.cyclesPerSecond = calibrate(d);
    return d;
  }

  /** clock64 cycles per second against %globaltimer, measured on this device. */
  private static long calibrate(Device d) {
    CUdeviceptr out = new CUdeviceptr();
    cuMemAlloc(out, 16);
    try {
      cuLaunchKernel(
          d.module.calibrate, 1, 1, 1, 32, 1, 1, 0, null, Pointer.to(Pointer.to(out)), null);
      cuCtxSynchronize();
      long[] v = new long[2];
      cuMemcpyDtoH(Pointer.to(v), out, 16);
      return Math.round(v[0] * 1e9 / v[1]);
    } finally {
      cuMemFree(out);
    }
  }

  private void enablePeerAccess() {
    for (Device a : devices.values()) {
      for (Device b : devices.values()) {
        if (a == b) continue;
        int[] can = new int[1];
        cuDeviceCanAccessPeer(can, a.dev, b.dev);
        if (can[0] == 0) {
          throw new IllegalStateException(
              "GPU "
                  + a.ordinal
                  + " cannot access GPU "
                  + b.ordinal
                  + " (no peer access): place ranks on one GPU");
        }
        cuCtxSetCurrent(a.ctx);
        try {
          cuCtxEnablePeerAccess(b.ctx, 0);
        } catch (jcuda.CudaException e) {
          if (!e.getMessage().contains("ALREADY_ENABLED")) throw e;
        }
      }
    }
  }

  private long elemBytes() {
    return (long) cfg.elements() * opt.dtype().bytes;
  }

  private void allocRank(RankRes r) {
    cuStreamCreate(r.stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
    r.owned.add(r.stream);
    alloc(r, r.slots, elemBytes() * cfg.ringSlots());
    alloc(r, r.sync, OsarLayout.SYNC_BYTES);
    alloc(r, r.input, elemBytes());
    alloc(r, r.output, elemBytes());
    alloc(r, r.state, 8L * OsarLayout.S_WORDS);
    alloc(r, r.params, 8L * OsarLayout.P_WORDS);
    long[] st = new long[OsarLayout.S_WORDS];
    st[OsarLayout.S_NEXT_SEQ] = 1;
    st[OsarLayout.S_CPS] = r.device.cyclesPerSecond;
    cuMemcpyHtoD(r.state, Pointer.to(st), 8L * st.length);
    uploadInput(r);
    int cbBytes = CounterBlock.sizeOf(n, cfg.histogramBuckets());
    cuMemHostAlloc(r.counterHost, cbBytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    r.owned.add(r.counterHost);
    cuMemHostGetDevicePointer(r.counterDev, r.counterHost, 0);
    ByteBuffer cb = r.counterHost.getByteBuffer(0, cbBytes).order(ByteOrder.LITTLE_ENDIAN);
    r.block = CounterBlock.initialize(cb, n, cfg.histogramBuckets());
    cb.putLong(24, r.device.cyclesPerSecond);
  }

  private static void alloc(RankRes r, CUdeviceptr p, long bytes) {
    cuMemAlloc(p, bytes);
    r.owned.add(p);
    cuMemsetD8(p, (byte) 0, bytes);
  }

  private void uploadInput(RankRes r) {
    int e = cfg.elements();
    if (opt.dtype() == DType.F32) {
      float[] in = new float[e];
      for (int i = 0; i < e; i++) in[i] = CollectiveConfig.inputValue(r.rank, 0, i);
      cuMemcpyHtoD(r.input, Pointer.to(in), elemBytes());
    } else {
      short[] in = new short[e];
      for (int i = 0; i < e; i++) in[i] = DType.toBf16(CollectiveConfig.inputValue(r.rank, 0, i));
      cuMemcpyHtoD(r.input, Pointer.to(in), elemBytes());
    }
  }

  private void writeParams(RankRes r) {
    long[] p = new long[OsarLayout.P_WORDS];
    p[OsarLayout.P_RANK] = r.rank;
    p[OsarLayout.P_WORLD] = n;
    p[OsarLayout.P_SLOTS] = cfg.ringSlots();
    p[OsarLayout.P_ELEMS] = cfg.elements();
    p[OsarLayout.P_BUDGET_NS] = cfg.waitBudgetNanos();
    p[OsarLayout.P_ARRIVAL_DELAY_NS] = faults.arrivalDelayNanos(r.rank);
    p[OsarLayout.P_PUBLISH_DELAY_NS] = faults.publishDelayNanos(r.rank);
    p[OsarLayout.P_ACK_DELAY_NS] = faults.ackDelayNanos(r.rank);
    p[OsarLayout.P_HIST_BUCKETS] = cfg.histogramBuckets();
    p[OsarLayout.P_WORK_BLOCKS] = r.blocks;
    for (int q = 0; q < n; q++)
      p[OsarLayout.P_LINK_DELAY_NS + q] = faults.linkDelayNanos(q, r.rank);
    cuMemcpyHtoD(r.params, Pointer.to(p), 8L * p.length);
    putPointer(r, OsarLayout.P_INPUT, r.input);
    putPointer(r, OsarLayout.P_OUTPUT, r.output);
    putPointer(r, OsarLayout.P_STATE, r.state);
    putPointer(r, OsarLayout.P_COUNTER_BLOCK, r.counterDev);
    for (int q = 0; q < n; q++) {
      RankRes peer = ranks[q];
      putPointer(r, OsarLayout.P_SLOT_PTR + q, peer.slots);
      putPointer(r, OsarLayout.P_FLAG_PTR + q, peer.sync.withByteOffset(OsarLayout.SYNC_FLAG));
      putPointer(r, OsarLayout.P_ACK_PTR + q, peer.sync.withByteOffset(OsarLayout.SYNC_ACK));
      putPointer(
          r, OsarLayout.P_PUBTIME_PTR + q, peer.sync.withByteOffset(OsarLayout.SYNC_PUBTIME));
      putPointer(
          r, OsarLayout.P_ACKTIME_PTR + q, peer.sync.withByteOffset(OsarLayout.SYNC_ACKTIME));
    }
  }

  /**
   * Changes how often {@code osar_publish} follows a collective; applies to launches and graph
   * captures from now on (benchmarks compare rates).
   */
  public void setPublishEvery(int k) {
    publishEvery = Math.max(1, k);
    for (RankRes r : localRanks()) r.sincePublish = 0;
  }

  /** Writes a device address into word {@code index} of the rank's parameter array. */
  private static void putPointer(RankRes r, int index, CUdeviceptr value) {
    cuMemcpyHtoD(r.params.withByteOffset(8L * index), Pointer.to(value), 8);
  }

  // ---- running ------------------------------------------------------------------------------

  private void launch(RankRes r, boolean instrumented) {
    cuLaunchKernel(
        r.device.module.kernel(opt.dtype(), instrumented),
        r.blocks,
        1,
        1,
        opt.threadsPerBlock(),
        1,
        1,
        r.device.smemPerBlock,
        r.stream,
        Pointer.to(Pointer.to(r.params)),
        null);
    if (instrumented && ++r.sincePublish >= publishEvery) {
      launchPublish(r);
      r.sincePublish = 0;
    }
  }

  /** Enqueues osar_publish: the counter block gets the totals of every collective before it. */
  private static void launchPublish(RankRes r) {
    cuLaunchKernel(
        r.device.module.publish,
        1,
        1,
        1,
        32,
        1,
        1,
        0,
        r.stream,
        Pointer.to(Pointer.to(r.params)),
        null);
  }

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public String collective() {
    return "allreduce_oneshot_" + opt.dtype().suffix + (opt.instrumented() ? "" : "_plain");
  }

  @Override
  public int worldSize() {
    return n;
  }

  /**
   * Starts one dispatcher thread per GPU. It launches every live rank's collective k before any
   * rank's collective k+1: streams beyond CUDA_DEVICE_MAX_CONNECTIONS share hardware queues, and a
   * queue holding rank A's k+1 ahead of rank B's k would stall A until its wait budget ran out.
   */
  @Override
  public synchronized void start() {
    if (running || closed) return;
    running = true;
    for (Device d : devices.values()) {
      List<RankRes> live = new ArrayList<>();
      for (RankRes r : localRanks()) {
        if (r.device == d && !faults.isDead(r.rank)) live.add(r);
      }
      if (live.isEmpty()) continue;
      Thread t = new Thread(() -> dispatch(d, live), "collscope-cuda-gpu-" + d.ordinal);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  private void dispatch(Device d, List<RankRes> live) {
    try {
      cuCtxSetCurrent(d.ctx);
      for (long batch = 0; running; batch++) {
        for (int i = 0; i < BATCH; i++) {
          for (RankRes r : live) launch(r, opt.instrumented());
        }
        for (RankRes r : live) {
          cuStreamSynchronize(r.stream);
          checkAbort(r);
          if (batch % opt.checkEveryBatches() == 0) verifyOutput(r);
        }
      }
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
      running = false;
    }
  }

  private void checkAbort(RankRes r) {
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), r.state.withByteOffset(8L * OsarLayout.S_ABORT), 8);
    if (v[0] != 0) {
      throw new IllegalStateException(
          "rank "
              + r.rank
              + ": a wait passed its budget of "
              + cfg.waitBudgetNanos() / 1_000_000
              + " ms in collective "
              + v[0]
              + " (timeout counted); a peer is dead or far too slow");
    }
  }

  /** Copies the output back and checks it against the host sum. */
  public void verifyOutput(int rank) {
    RankRes r = ranks[rank];
    cuCtxSetCurrent(r.device.ctx);
    cuStreamSynchronize(r.stream);
    verifyOutput(r);
  }

  private void verifyOutput(RankRes r) {
    int e = cfg.elements();
    float[] got = new float[e];
    if (opt.dtype() == DType.F32) {
      cuMemcpyDtoH(Pointer.to(got), r.output, elemBytes());
    } else {
      short[] raw = new short[e];
      cuMemcpyDtoH(Pointer.to(raw), r.output, elemBytes());
      for (int i = 0; i < e; i++) got[i] = DType.fromBf16(raw[i]);
    }
    for (int i = 0; i < e; i++) {
      float want = CollectiveConfig.expectedSum(n, 0, i);
      if (got[i] != want) {
        throw new IllegalStateException(
            "rank "
                + r.rank
                + " element "
                + i
                + ": all-reduce sum "
                + got[i]
                + " != host sum "
                + want);
      }
    }
  }

  @Override
  public synchronized void stop() throws InterruptedException {
    running = false;
    for (Thread t : threads) t.join();
    threads.clear();
    if (!closed) {
      try {
        flush();
      } catch (RuntimeException e) {
        failure.compareAndSet(null, e);
      }
    }
  }

  /**
   * Publishes every rank's totals now (the in-kernel publisher lags one collective). Call with no
   * collective in flight.
   */
  public void flush() {
    for (RankRes r : localRanks()) {
      cuCtxSetCurrent(r.device.ctx);
      cuStreamSynchronize(r.stream);
      if (opt.instrumented()) {
        launchPublish(r);
        r.sincePublish = 0;
        cuStreamSynchronize(r.stream);
      }
    }
  }

  /**
   * Runs {@code count} collectives on every rank from the calling thread (no rank threads), then
   * waits for them. For tests and benchmarks; not while {@link #start()}ed.
   */
  public void runCollectives(int count, boolean instrumented) {
    List<RankRes> local = localRanks();
    for (int i = 0; i < count; i++) {
      for (RankRes r : local) {
        cuCtxSetCurrent(r.device.ctx);
        launch(r, instrumented);
      }
    }
    synchronizeAll();
  }

  private void synchronizeAll() {
    for (RankRes r : localRanks()) {
      cuCtxSetCurrent(r.device.ctx);
      cuStreamSynchronize(r.stream);
      checkAbort(r);
    }
  }

  /** A CUDA graph per rank holding {@code collectives} launches, replayable without the host. */
  public final class Graphs implements AutoCloseable {
    private final CUgraph[] graphs = new CUgraph[n];
    private final CUgraphExec[] execs = new CUgraphExec[n];

    private Graphs(int collectives, boolean instrumented) {
      try {
        for (RankRes r : localRanks()) {
          cuCtxSetCurrent(r.device.ctx);
          cuStreamSynchronize(r.stream);
          graphs[r.rank] = new CUgraph();
          cuStreamBeginCapture(r.stream, CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
          for (int i = 0; i < collectives; i++) launch(r, instrumented);
          cuStreamEndCapture(r.stream, graphs[r.rank]);
          execs[r.rank] = new CUgraphExec();
          cuGraphInstantiate(execs[r.rank], graphs[r.rank], 0);
        }
      } catch (RuntimeException e) {
        close();
        throw e;
      }
    }

    /** Replays every rank's graph {@code times} times and waits for them. */
    public void replay(int times) {
      List<RankRes> local = localRanks();
      for (int t = 0; t < times; t++) {
        for (RankRes r : local) {
          cuCtxSetCurrent(r.device.ctx);
          cuGraphLaunch(execs[r.rank], r.stream);
        }
      }
      synchronizeAll();
    }

    @Override
    public void close() {
      for (int i = 0; i < n; i++) {
        if (execs[i] != null) cuGraphExecDestroy(execs[i]);
        if (graphs[i] != null) cuGraphDestroy(graphs[i]);
        execs[i] = null;
        graphs[i] = null;
      }
    }
  }

  public Graphs captureGraphs(int collectives, boolean instrumented) {
    return new Graphs(collectives, instrumented);
  }

  @Override
  public CounterBlock block(int rank) {
    return ranks[rank].block;
  }

  @Override
  public boolean reports(int rank) {
    return ranks[rank] != null && ranks[rank].local && !faults.isDead(rank);
  }

  @Override
  public String device(int rank) {
    Device d = ranks[rank].device;
    return "cuda:" + d.ordinal + " " + d.name;
  }

  public long cyclesPerSecond(int rank) {
    return ranks[rank].device.cyclesPerSecond;
  }

  @Override
  public Optional<Throwable> failure() {
    return Optional.ofNullable(failure.get());
  }

  @Override
  public synchronized void close() throws InterruptedException {
    if (closed) return;
    try {
      stop();
      awaitPeersDone();
    } finally {
      closed = true;
      free();
    }
  }

  /**
   * With ranks in other processes, their kernels may still be reducing out of this rank's slots
   * when this one is done: wait (bounded) until every peer has acked this rank's last collective
   * before the memory is freed under them.
   */
  private void awaitPeersDone() throws InterruptedException {
    if (onlyRank < 0) return;
    RankRes me = ranks[onlyRank];
    cuCtxSetCurrent(me.device.ctx);
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), me.state.withByteOffset(8L * OsarLayout.S_NEXT_SEQ), 8);
    long last = v[0] - 1;
    long deadline = System.nanoTime() + rendezvousTimeout.toNanos();
    for (RankRes peer : ranks) {
      if (peer.local || faults.isDead(peer.rank)) continue;
      while (true) {
        cuMemcpyDtoH(Pointer.to(v), peer.sync.withByteOffset(OsarLayout.SYNC_ACK), 8);
        if (v[0] >= last || System.nanoTime() > deadline) break;
        Thread.sleep(5);
      }
    }
  }

  private void free() {
    for (RankRes r : ranks) {
      if (r == null) continue;
      try {
        cuCtxSetCurrent(r.device.ctx);
        if (r.local) cuStreamSynchronize(r.stream);
      } catch (RuntimeException ignored) {
        // best effort: free what we can
      }
      for (Object o : r.owned) {
        try {
          if (o instanceof IpcMapping m) cuIpcCloseMemHandle(m.pointer());
          else if (o instanceof CUstream s) cuStreamDestroy(s);
          else if (o instanceof CUdeviceptr p) cuMemFree(p);
          else if (o instanceof Pointer p) cuMemFreeHost(p);
        } catch (RuntimeException ignored) {
          // keep freeing the rest
        }
      }
      r.owned.clear();
    }
    for (Device d : devices.values()) {
      try {
        if (d.module != null) {
          cuCtxSetCurrent(d.ctx);
          cuModuleUnload(d.module.module);
        }
        cuDevicePrimaryCtxRelease(d.dev);
      } catch (RuntimeException ignored) {
        // context already gone
      }
    }
    devices.clear();
    if (rendezvous != null && onlyRank >= 0) {
      // each rank removes its own files; every peer read them before the ready barrier
      IpcRendezvous.clean(rendezvous, onlyRank);
    }
  }
}
