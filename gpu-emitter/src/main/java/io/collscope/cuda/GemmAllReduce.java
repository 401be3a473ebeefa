package io.collscope.cuda;

import static jcuda.driver.JCudaDriver.*;

import io.collscope.collective.ConfigException;
import io.collscope.counters.CounterBlock;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * The fused FP8 GEMM + all-reduce ({@code gemm_ar.cu}) over the ranks of one process: one rank per
 * GPU with peer access, or several ranks sharing a GPU (each then gets its share of the SMs: every
 * CTA of every rank must be resident at once, as ranks wait on one another's tiles). Rank r holds
 * its K-slice {@code A_r [M][K]}, {@code W_r [N][K]} (FP8 e4m3) and scales {@code sa_r [M]}, {@code
 * sw_r [N]}; after a call every rank's {@code out [M][N]} (BF16) is {@code sum_r (A_r W_r^T) (.)
 * (sa_r x sw_r)}, the same bits on every rank.
 *
 * <p>Each rank's counter block lives in mapped host memory and is written by {@code
 * gemm_ar_publish} on the rank's stream ({@link #publish()}), read by the reporter as the one-shot
 * all-reduce's is.
 */
public final class GemmAllReduce implements AutoCloseable {

  /** An output of M x N, a K-slice of K per rank. */
  public record Shape(int m, int n, int k) {
    public long tiles() {
      return (long) (m / GemmArLayout.BM) * (n / GemmArLayout.BN);
    }

    @Override
    public String toString() {
      return "M=" + m + " N=" + n + " K=" + k;
    }
  }

  /** Whether the kernel can run {@code s}: whole tiles, whole pipeline stages. */
  public static void checkShape(Shape s) {
    if (s.m() <= 0 || s.m() % GemmArLayout.BM != 0) {
      throw new ConfigException("M", "must be a positive multiple of " + GemmArLayout.BM);
    }
    if (s.n() <= 0 || s.n() % GemmArLayout.BN != 0) {
      throw new ConfigException("N", "must be a positive multiple of " + GemmArLayout.BN);
    }
    if (s.k() <= 0 || s.k() % GemmArLayout.BK != 0) {
      throw new ConfigException("K", "must be a positive multiple of " + GemmArLayout.BK);
    }
    if (s.tiles() > Integer.MAX_VALUE / 2) {
      throw new ConfigException("M, N", "too many output tiles: " + s.tiles());
    }
  }

  /** The collective's name in every record: {@code gemm_ar_fp8_bf16[_throttled]}. */
  public static String collectiveName(boolean throttled) {
    return "gemm_ar_fp8_bf16" + (throttled ? "_throttled" : "");
  }

  private final int world;
  private final Shape shape;
  private final int groupM;
  private final int buckets;
  private final int grid;
  private final Map<Integer, GpuDevice> devices;
  private final Map<Integer, GemmArModule> modules;
  private final List<Rank> ranks = new ArrayList<>();

  /** Rank r's memory on its GPU. */
  private static final class Rank {
    final int rank;
    final GpuDevice device;
    final GemmArModule module;
    final CUstream stream = new CUstream();
    final CUdeviceptr a = new CUdeviceptr();
    final CUdeviceptr w = new CUdeviceptr();
    final CUdeviceptr sa = new CUdeviceptr();
    final CUdeviceptr sw = new CUdeviceptr();
    final CUdeviceptr out = new CUdeviceptr();
    final CUdeviceptr recv = new CUdeviceptr();
    final CUdeviceptr flags = new CUdeviceptr();
    final CUdeviceptr state = new CUdeviceptr();
    final CUdeviceptr params = new CUdeviceptr();
    final Pointer counterHost = new Pointer();
    final CUdeviceptr counterDev = new CUdeviceptr();
    final List<Object> owned = new ArrayList<>();
    CounterBlock block;
    // the TMA programs' tensor maps of A and W (GemmArTensorMaps), passed by value at launch
    byte[] mapA;
    byte[] mapW;

    Rank(int rank, GpuDevice device, GemmArModule module) {
      this.rank = rank;
      this.device = device;
      this.module = module;
    }

    void alloc(CUdeviceptr p, long bytes) {
      cuMemAlloc(p, bytes);
      owned.add(p);
      cuMemsetD8(p, (byte) 0, bytes);
    }

    void free() {
      try {
        device.makeCurrent();
      } catch (RuntimeException ignored) {
        return;
      }
      for (Object o : owned) {
        try {
          if (o instanceof CUstream s) cuStreamDestroy(s);
          else if (o instanceof CUdeviceptr p) cuMemFree(p);
          else if (o instanceof Pointer p) cuMemFreeHost(p);
        } catch (RuntimeException ignored) {
          // free the rest
        }
      }
      owned.clear();
    }
  }

  /**
   * Allocates every rank; rank r runs on GPU {@code deviceOfRank[r]}.
   *
   * @param groupM raster group (tile rows walked together)
   * @param budgetNanos bound on any single wait inside the kernel
   */
  public static GemmAllReduce open(
      int world, Shape shape, int groupM, int[] deviceOfRank, int buckets, long budgetNanos) {
    checkShape(shape);
    if (world < 1 || world > GemmArLayout.MAX_RANKS) {
      throw new ConfigException("ranks", "must be 1.." + GemmArLayout.MAX_RANKS + ", got " + world);
    }
    if (groupM < 1) throw new ConfigException("groupM", "must be >= 1, got " + groupM);
    if (buckets < 1 || buckets > GemmArLayout.HIST_MAX) {
      throw new ConfigException("histogramBuckets", "must be 1.." + GemmArLayout.HIST_MAX);
    }
    CudaProbe.requireGpu();
    Map<Integer, GpuDevice> devices = new LinkedHashMap<>();
    Map<Integer, GemmArModule> modules = new LinkedHashMap<>();
    try {
      for (int r = 0; r < world; r++) {
        int d = deviceOfRank[r];
        if (!devices.containsKey(d)) {
          GpuDevice dev = GpuDevice.open(d);
          devices.put(d, dev);
          dev.makeCurrent();
          modules.put(d, new GemmArModule());
        }
      }
      for (GpuDevice a : devices.values())
        for (GpuDevice b : devices.values()) if (a != b) a.enablePeerAccess(b);
      // every rank the same grid: the CTAs that fit at once on the most shared GPU
      int grid = Integer.MAX_VALUE;
      for (var e : devices.entrySet()) {
        int sharing = 0;
        for (int r = 0; r < world; r++) if (deviceOfRank[r] == e.getKey()) sharing++;
        e.getValue().makeCurrent();
        int[] perSm = new int[1];
        cuOccupancyMaxActiveBlocksPerMultiprocessor(
            perSm,
            modules.get(e.getKey()).kernel(true, true),
            GemmArLayout.THREADS,
            GemmArLayout.SMEM_BYTES);
        grid = Math.min(grid, Math.max(1, perSm[0] * e.getValue().sms / sharing));
      }
      GemmAllReduce g = new GemmAllReduce(world, shape, groupM, buckets, grid, devices, modules);
      try {
        for (int r = 0; r < world; r++) {
          int d = deviceOfRank[r];
          g.ranks.add(g.allocate(r, devices.get(d), modules.get(d)));
        }
        for (Rank r : g.ranks) g.writeParams(r, budgetNanos);
      } catch (RuntimeException | Error e) {
        g.close();
        throw e;
      }
      return g;
    } catch (RuntimeException | Error e) {
      if (e instanceof ConfigException) throw e;
      for (var m : modules.entrySet()) {
        devices.get(m.getKey()).makeCurrent();
        m.getValue().close();
      }
      for (GpuDevice d : devices.values()) d.close();
      throw e;
    }
  }

  /** Ranks on GPUs 0, 1, ... when there are enough, else all on GPU 0. */
  public static int[] defaultDevices(int world) {
    int gpus = CudaProbe.gpuCount();
    int[] d = new int[world];
    for (int r = 0; r < world; r++) d[r] = gpus >= world ? r : 0;
    return d;
  }

  private GemmAllReduce(
      int world,
      Shape shape,
      int groupM,
      int buckets,
      int grid,
      Map<Integer, GpuDevice> devices,
      Map<Integer, GemmArModule> modules) {
    this.world = world;
    this.shape = shape;
    this.groupM = groupM;
    this.buckets = buckets;
    this.grid = grid;
    this.devices = devices;
    this.modules = modules;
  }

  private Rank allocate(int r, GpuDevice d, GemmArModule module) {
    Rank k = new Rank(r, d, module);
    try {
      d.makeCurrent();
      cuStreamCreate(k.stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
      k.owned.add(k.stream);
      long m = shape.m(), n = shape.n(), kk = shape.k(), tiles = shape.tiles();
      k.alloc(k.a, m * kk);
      k.alloc(k.w, n * kk);
      k.alloc(k.sa, 4 * m);
      k.alloc(k.sw, 4 * n);
      k.alloc(k.out, 2 * m * n);
      k.alloc(k.recv, world > 1 ? 2L * world * tiles * GemmArLayout.TILE_BYTES : 16);
      k.alloc(k.flags, 8L * tiles * world);
      k.alloc(k.state, 8L * GemmArLayout.GS_WORDS);
      k.alloc(k.params, 8L * GemmArLayout.G_WORDS);
      long[] st = new long[GemmArLayout.GS_WORDS];
      st[GemmArLayout.GS_EPOCH] = 1;
      st[GemmArLayout.GS_CPS] = d.cyclesPerSecond;
      cuMemcpyHtoD(k.state, Pointer.to(st), 8L * st.length);
      int cbBytes = CounterBlock.sizeOf(world, buckets);
      cuMemHostAlloc(k.counterHost, cbBytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
      k.owned.add(k.counterHost);
      cuMemHostGetDevicePointer(k.counterDev, k.counterHost, 0);
      ByteBuffer cb = k.counterHost.getByteBuffer(0, cbBytes).order(ByteOrder.LITTLE_ENDIAN);
      k.block = CounterBlock.initialize(cb, world, buckets);
      k.block.setCyclesPerSecond(d.cyclesPerSecond);
      return k;
    } catch (RuntimeException | Error e) {
      k.free();
      throw e;
    }
  }

  private void writeParams(Rank k, long budgetNanos) {
    long[] p = new long[GemmArLayout.G_WORDS];
    p[GemmArLayout.G_RANK] = k.rank;
    p[GemmArLayout.G_WORLD] = world;
    p[GemmArLayout.G_M] = shape.m();
    p[GemmArLayout.G_N] = shape.n();
    p[GemmArLayout.G_K] = shape.k();
    p[GemmArLayout.G_GROUP_M] = groupM;
    p[GemmArLayout.G_TILES] = shape.tiles();
    p[GemmArLayout.G_BUDGET_NS] = budgetNanos;
    p[GemmArLayout.G_HIST_BUCKETS] = buckets;
    p[GemmArLayout.G_GRID] = grid;
    k.device.makeCurrent();
    cuMemcpyHtoD(k.params, Pointer.to(p), 8L * p.length);
    putPointer(k, GemmArLayout.G_A, k.a);
    putPointer(k, GemmArLayout.G_W, k.w);
    putPointer(k, GemmArLayout.G_SA, k.sa);
    putPointer(k, GemmArLayout.G_SW, k.sw);
    putPointer(k, GemmArLayout.G_OUT, k.out);
    putPointer(k, GemmArLayout.G_STATE, k.state);
    putPointer(k, GemmArLayout.G_COUNTER_BLOCK, k.counterDev);
    if (GemmArModule.tma()) {
      k.mapA =
          GemmArTensorMaps.encode(
              GemmArTensorMaps.operand(pointerAt(k, GemmArLayout.G_A), shape.m(), shape.k()));
      k.mapW =
          GemmArTensorMaps.encode(
              GemmArTensorMaps.operand(pointerAt(k, GemmArLayout.G_W), shape.n(), shape.k()));
    }
    for (Rank q : ranks) {
      // one process, unified addressing: a peer's device pointer is valid here with peer access
      putPointer(k, GemmArLayout.G_RECV_PTR + q.rank, q.recv);
      putPointer(k, GemmArLayout.G_FLAG_PTR + q.rank, q.flags);
      putPointer(
          k,
          GemmArLayout.G_ABORT_PTR + q.rank,
          q.state.withByteOffset(8L * GemmArLayout.GS_ABORT_WORD));
    }
  }

  /**
   * The device address in parameter word {@code index}, as the kernel reads it: read back because
   * JCuda's CUdeviceptr has no public getter for its address (putPointer copies it natively).
   */
  private static long pointerAt(Rank k, int index) {
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), k.params.withByteOffset(8L * index), 8);
    return v[0];
  }

  private static void putPointer(Rank k, int index, CUdeviceptr value) {
    cuMemcpyHtoD(k.params.withByteOffset(8L * index), Pointer.to(value), 8);
  }

  public int worldSize() {
    return world;
  }

  public Shape shape() {
    return shape;
  }

  public int grid() {
    return grid;
  }

  public int groupM() {
    return groupM;
  }

  /** Rank {@code rank}'s device label, e.g. {@code cuda:0 NVIDIA H200}. */
  public String device(int rank) {
    return ranks.get(rank).device.label();
  }

  public long cyclesPerSecond(int rank) {
    return ranks.get(rank).device.cyclesPerSecond;
  }

  /** Each GPU's SM clock now, in MHz (a ~20 ms kernel per GPU, after the work queued). */
  public long[] clocksMhz() {
    synchronize();
    return devices.values().stream().mapToLong(d -> d.clockNow() / 1_000_000).toArray();
  }

  public CounterBlock block(int rank) {
    return ranks.get(rank).block;
  }

  /** Uploads rank {@code rank}'s inputs (FP8 bytes, FP32 scales). */
  public void upload(int rank, byte[] a, byte[] w, float[] sa, float[] sw) {
    Rank k = ranks.get(rank);
    if (a.length != (long) shape.m() * shape.k()
        || w.length != (long) shape.n() * shape.k()
        || sa.length != shape.m()
        || sw.length != shape.n()) {
      throw new IllegalArgumentException("inputs do not match " + shape);
    }
    k.device.makeCurrent();
    cuStreamSynchronize(k.stream);
    cuMemcpyHtoD(k.a, Pointer.to(a), a.length);
    cuMemcpyHtoD(k.w, Pointer.to(w), w.length);
    cuMemcpyHtoD(k.sa, Pointer.to(sa), 4L * sa.length);
    cuMemcpyHtoD(k.sw, Pointer.to(sw), 4L * sw.length);
  }

  /** Enqueues one call on every rank's stream (returns at once). */
  public void launch(boolean throttled, boolean instrumented) {
    for (Rank k : ranks) launchRank(k.rank, throttled, instrumented);
  }

  /**
   * Enqueues one call on rank {@code rank}'s stream only: its peers' partials never come, so its
   * waits run out their budget (the timeout test), unless the peers are launched too.
   */
  public void launchRank(int rank, boolean throttled, boolean instrumented) {
    {
      Rank k = ranks.get(rank);
      k.device.makeCurrent();
      CUfunction f = k.module.kernel(throttled, instrumented);
      cuLaunchKernel(
          f,
          grid,
          1,
          1,
          GemmArLayout.THREADS,
          1,
          1,
          GemmArLayout.SMEM_BYTES,
          k.stream,
          k.mapA == null
              ? Pointer.to(Pointer.to(k.params))
              : Pointer.to(Pointer.to(k.params), Pointer.to(k.mapA), Pointer.to(k.mapW)),
          null);
    }
  }

  /** Enqueues a publication of every rank's totals into its counter block. */
  public void publish() {
    for (Rank k : ranks) {
      k.device.makeCurrent();
      cuLaunchKernel(
          k.module.publish,
          1,
          1,
          1,
          GemmArLayout.PUBLISH_THREADS,
          1,
          1,
          0,
          k.stream,
          Pointer.to(Pointer.to(k.params), Pointer.to(new int[] {grid})),
          null);
    }
  }

  public void synchronize() {
    for (Rank k : ranks) {
      k.device.makeCurrent();
      cuStreamSynchronize(k.stream);
    }
  }

  /**
   * Runs {@code calls} calls of one program on every rank and returns the longest rank's device
   * time per call in microseconds (CUDA events on each rank's own stream: events of two GPUs cannot
   * be compared, and the longest interval includes a rank's wait for a later peer).
   */
  public double timeCalls(boolean throttled, boolean instrumented, int calls) {
    CUevent[] start = new CUevent[world];
    CUevent[] end = new CUevent[world];
    try {
      for (Rank k : ranks) {
        k.device.makeCurrent();
        start[k.rank] = new CUevent();
        end[k.rank] = new CUevent();
        cuEventCreate(start[k.rank], CUevent_flags.CU_EVENT_DEFAULT);
        cuEventCreate(end[k.rank], CUevent_flags.CU_EVENT_DEFAULT);
        cuEventRecord(start[k.rank], k.stream);
      }
      for (int i = 0; i < calls; i++) launch(throttled, instrumented);
      for (Rank k : ranks) {
        k.device.makeCurrent();
        cuEventRecord(end[k.rank], k.stream);
      }
      double worst = 0;
      for (Rank k : ranks) {
        k.device.makeCurrent();
        cuEventSynchronize(end[k.rank]);
        float[] ms = new float[1];
        cuEventElapsedTime(ms, start[k.rank], end[k.rank]);
        worst = Math.max(worst, ms[0] * 1000.0 / calls);
      }
      return worst;
    } finally {
      for (Rank k : ranks) {
        k.device.makeCurrent();
        if (start[k.rank] != null) cuEventDestroy(start[k.rank]);
        if (end[k.rank] != null) cuEventDestroy(end[k.rank]);
      }
    }
  }

  /** Rank {@code rank}'s output, BF16 bits, after {@link #synchronize()}. */
  public short[] output(int rank) {
    Rank k = ranks.get(rank);
    short[] o = new short[shape.m() * shape.n()];
    k.device.makeCurrent();
    cuStreamSynchronize(k.stream);
    cuMemcpyDtoH(Pointer.to(o), k.out, 2L * o.length);
    return o;
  }

  /** Rows {@code [row, row + rows)} of rank {@code rank}'s output, BF16 bits. */
  public short[] outputRows(int rank, int row, int rows) {
    Rank k = ranks.get(rank);
    short[] o = new short[rows * shape.n()];
    k.device.makeCurrent();
    cuStreamSynchronize(k.stream);
    cuMemcpyDtoH(Pointer.to(o), k.out.withByteOffset(2L * row * shape.n()), 2L * o.length);
    return o;
  }

  /** The call that aborted rank {@code rank} (a wait past its budget), or 0. */
  public long abortedAt(int rank) {
    return stateWord(rank, GemmArLayout.GS_ABORT);
  }

  /** The rank's next call number (calls completed + 1 while none aborted). */
  public long epoch(int rank) {
    return stateWord(rank, GemmArLayout.GS_EPOCH);
  }

  private long stateWord(int rank, int word) {
    Rank k = ranks.get(rank);
    k.device.makeCurrent();
    cuStreamSynchronize(k.stream);
    long[] v = new long[1];
    cuMemcpyDtoH(Pointer.to(v), k.state.withByteOffset(8L * word), 8);
    return v[0];
  }

  @Override
  public void close() {
    for (Rank k : ranks) k.free();
    ranks.clear();
    for (var m : modules.entrySet()) {
      try {
        devices.get(m.getKey()).makeCurrent();
        m.getValue().close();
      } catch (RuntimeException ignored) {
        // context already gone
      }
    }
    modules.clear();
    for (GpuDevice d : devices.values()) d.close();
    devices.clear();
  }
}
