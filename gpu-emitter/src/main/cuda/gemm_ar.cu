// collscope: a fused FP8 GEMM + all-reduce, OUT = sum over ranks of (A_r . W_r^T) (.) (sa_r x sw_r),
// BF16 on every rank (the second seed's kernel, instrumented in the counter model).
//
// Persistent CTAs walk the output tiles in a static order (tile t = blockIdx.x + k * grid, raster
// groups of G_GROUP_M tile rows). Per tile:
//   guard    (throttled variant) the CTA begins tile t only while t - begun < 2 * grid, begun
//            being the grid's count of tiles begun this call: never 2 persistent rounds ahead
//   copy     the GEMM: a pipeline of GA_STAGES stages loaded by TMA (the default, *_wg_tma) or
//            cp.async, then either wgmma m64n128k32 e4m3 -> f32 (each warpgroup 64 rows of the
//            tile, promoted to FP32 registers every GA_WG_PROMOTE k32 steps) or mma.sync
//            m16n8k32 (each warp 64 x 32), scaled by sa (rows) and sw (columns)
//   publish  the partial tile, rounded to BF16, pushed into every peer's receive buffer over
//            NVLink, then a per-(tile, source) flag released at system scope
//   wait     until every peer's partial of the tile has arrived (the local flags)
//   reduce   the partials summed in rank order (so every rank writes the same bits), BF16 stored
// Every interval is one SM's clock64. Each CTA accumulates in registers and adds to the rank's
// totals once at its end (red.global); gemm_ar_publish, a kernel of its own, copies the totals
// into the counter block under its seqlock, as osar_publish does.
// Drift: at every tile start the CTA's lead over the grid, (t - begun) / grid rounds, goes into a
// histogram of quarter rounds and a running maximum (counter block extension words).
// Every wait backs off (hot spins, then __nanosleep 128 ns doubling to 4096 ns) and is bounded
// by G_BUDGET_NS: past it the CTA counts a timeout, raises the rank's sticky abort and its abort
// word (which the peers' waits watch) and stops; later launches return at entry. Never a hang.
//
// Receive buffers are double-buffered by the epoch's parity: a rank may begin call e+1 while a
// peer still reads call e's partials, but it can only begin call e+2 after every peer published
// every tile of e+1, hence after the peer finished call e.
//
// What is left on the table (docs/BENCHMARKS.md, docs/GEMM_AR.md): no warp-specialized
// producer, each wgmma group waited for before its FP32 promotion (no ping-pong between
// warpgroups), the epilogue (push, wait, reduce) not overlapped with the next tile's main loop
// within a CTA (only across the 2 CTAs of an SM), and no TMA multicast: CTA pairs sharing a W
// tile measured 1.16x slower (runs 126-131; the code is in ed3797c).
#include <cuda.h>  // CUtensorMap: the TMA programs' parameters
#include <cuda_bf16.h>
#include <stdint.h>

#include "counter_block.h"
#include "gemm_ar_params.h"
#include "memory_model.h"

// k32 steps per FP32 promotion of the wgmma accumulator (below), and CTAs per SM for those
// kernels. Measured on two H200s (runs 94-95): every 2 steps (64 of K) at 2 CTAs per SM is the
// fastest promoted form that meets GemmArReference's bound; every step costs 4-21 % more, 1 CTA
// per SM (no register spills, half the CTAs) 23-27 % more. No promotion (run 93, 15 % faster)
// is torch's use_fast_accum=True, whose error grows with K; the torch baseline promotes.
#ifndef GA_WG_PROMOTE
#define GA_WG_PROMOTE 2
#endif
#ifndef GA_WG_CTAS
#define GA_WG_CTAS 2
#endif
// A row of the reduced tile staged in shared memory: 256 bytes and 16 of padding
#define GA_OUT_ROW_BYTES (GA_BN * 2 + 16)

typedef unsigned int u32;

static_assert(GA_BM == 128 && GA_BN == 128 && GA_BK == 64 && GA_THREADS == 256, "the warp layout below");
static_assert(GT_WORDS <= 256, "gemm_ar_publish: one word per thread pair");

__device__ __forceinline__ void red_add(u64* p, u64 v) {
  if (v) asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" : : : "memory"); }

struct Backoff {
  static constexpr unsigned HOT_SPINS = 32;
  unsigned spins = 0;
  unsigned sleep = 128;
  __device__ __forceinline__ bool pause(u64 deadline) {
    if (spins < HOT_SPINS) {
      ++spins;
    } else {
      __nanosleep(sleep);
      sleep = sleep < 4096 ? sleep * 2 : 4096;
    }
    return globaltimer() <= deadline;
  }
  __device__ __forceinline__ bool cold() const { return spins >= HOT_SPINS; }
};

// Whether this rank (another CTA) or any peer aborted: a wait on such a communicator cannot end.
__device__ __forceinline__ bool any_abort(const u64* P, const u64* st, int world) {
  if (ld_volatile(st + GS_ABORT) != 0) return true;
  for (int p = 0; p < world; ++p)
    if (ld_relaxed_sys((const u64*)P[G_ABORT_PTR + p]) != 0) return true;
  return false;
}

__device__ __forceinline__ int bucket_of(u64 cycles, int buckets) {
  int b = cycles <= 1 ? 0 : 63 - __clzll((long long)cycles);
  return b < buckets ? b : buckets - 1;
}

// Thread 0 ends a phase: its cycles since the last boundary go to *sum.
__device__ __forceinline__ void phase_end(u64* sum, u64* mark, u64 now) {
  *sum += now - *mark;
  *mark = now;
}

// ---- shared-memory tiles: 128 rows x 64 bytes per stage, 16-byte chunks XOR-swizzled by row so
// that ldmatrix's 8 row addresses of a phase fall in distinct banks
__device__ __forceinline__ u32 swz(int row, int chunk) {
  return (u32)(row * GA_BK + ((chunk ^ ((row >> 1) & 3)) << 4));
}
__device__ __forceinline__ void cp_async16(u32 smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" : : : "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" : : "n"(N) : "memory"); }
__device__ __forceinline__ void ldmatrix_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void mma_e4m3(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- wgmma (sm_90a): a warpgroup of 4 warps multiplies its 64 rows of the A tile by the whole W
// tile, both read by the tensor cores straight from shared memory through matrix descriptors.
// The stages are the cp.async stages above: K-major rows of 64 bytes whose 16-byte chunks are
// XOR-swizzled by bits 1-2 of the row, which is exactly the hardware's 64-byte swizzle (address
// bits 4-5 ^= bits 7-8) once a tile starts on a 512-byte boundary (the dynamic shared memory is
// aligned to 1024 below). Descriptor: start >> 4 (bits 0-13), leading offset (unused by swizzled
// K-major operands: 1), stride offset 512 B >> 4 between 8-row groups (bits 32-45), swizzle mode 2
// = 64 B (bits 62-63). The second k32 step of a stage starts 32 bytes into the rows: the hardware
// swizzles the address it computes, as CUTLASS's descriptor iterator relies on.
__device__ __forceinline__ u64 wg_desc(u32 smem_addr) {
  return (u64)((smem_addr & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(512 >> 4) << 32) | ((u64)2 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" : : : "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(N) : "memory"); }
// cp.async writes shared memory through the generic proxy, wgmma reads it through the async one
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); }
// Pins the accumulators at this point of the program: a read after wg_wait must not move above it.
__device__ __forceinline__ void wg_pin(float* d) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i]) : : "memory");
}
// D[64 x 128] += A[64 x 32] . B[128 x 32]^T, e4m3 in, f32 accumulate. d[4 * j + e]: rows 16 * warp
// + lane / 4 (+ 8 for e >= 2), columns 8 * j + 2 * (lane % 4) (+ 1 for odd e): the m16n8 layout of
// mma.sync's accumulators, repeated over 16 column chunks.
// accumulate: D += A . B^T; otherwise D = A . B^T.
__device__ __forceinline__ void wgmma_e4m3_m64n128k32(float* d, u64 da, u64 db, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(accumulate));
}

// Where a thread's accumulator (i, j, h) lies in the 128 x 128 tile. mma.sync: warp (warp_m,
// warp_n) holds rows 64 warp_m + 16 i, columns 32 warp_n + 8 j. wgmma: warpgroup warp_m holds rows
// 64 warp_m, its warp warp_n the 16 rows from 16 warp_n, and column chunk 4 i + j of all 16.
template <bool WG>
__device__ __forceinline__ int frag_row(int warp_m, int warp_n, int i, int g, int h) {
  return WG ? warp_m * 64 + warp_n * 16 + g + 8 * h : warp_m * 64 + i * 16 + g + 8 * h;
}
template <bool WG>
__device__ __forceinline__ int frag_col(int warp_n, int i, int j, int tq) {
  return WG ? (i * 4 + j) * 8 + tq * 2 : warp_n * 32 + j * 8 + tq * 2;
}

// Tile t's (row, column) of tiles: raster groups of group_m tile rows, walked column by column
// inside a group, so CTAs working at the same time share A rows and W rows in L2.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m, int* tm, int* tn) {
  const int per_group = group_m * tiles_n;
  const int g = t / per_group;
  const int first = g * group_m;
  const int rows = min(tiles_m - first, group_m);
  const int r = t - g * per_group;
  *tm = first + r % rows;
  *tn = r / rows;
}

// One stage: 128 x 64 bytes of A and of W, two 16-byte chunks per thread each.
__device__ __forceinline__ void load_stage(u32 sA, u32 sW, const uint8_t* A, const uint8_t* W, long long K,
                                           int kt) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int c = threadIdx.x + i * GA_THREADS;  // 0..511
    const int row = c >> 2, chunk = c & 3;
    cp_async16(sA + swz(row, chunk), A + row * K + kt * GA_BK + chunk * 16);
    cp_async16(sW + swz(row, chunk), W + row * K + kt * GA_BK + chunk * 16);
  }
}

// ---- TMA (the *_tma programs): a stage's A and W tiles, 128 rows x 64 bytes each, loaded by
// the tensor memory accelerator from 2-D tensor maps (GemmArTensorMaps: UINT8, box 64 x 128,
// 64-byte swizzle), which write exactly the layout load_stage's cp.async writes (swz above is
// that swizzle), so the wgmma descriptors are the same. One thread issues both loads of a stage;
// an mbarrier per stage counts their bytes; every thread waits on it instead of cp.async's groups
// and the barrier after them. Correct on two H200s and 1.41x faster than cp.async at K = 4096
// (runs 120-122).
__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(bar), "r"(bytes) : "memory");
}
// Bounded like every wait here: past the budget the kernel traps (the launch fails with a CUDA
// error the host reports) rather than hang on a load that never completes.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity, u64 budget) {
  u32 done = 0;
  u64 deadline = 0;
  for (;;) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    const u64 now = globaltimer();
    if (deadline == 0) deadline = now + budget;
    else if (now > deadline) __trap();
  }
}
__device__ __forceinline__ void tma_load_2d(u32 dst, const CUtensorMap* map, int col, int row, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :
      : "r"(dst), "l"((u64)map), "r"(col), "r"(row), "r"(bar)
      : "memory");
}

template <bool THROTTLE, bool INSTR, bool WG, bool TMA = false>
__device__ void gemm_ar(const u64* __restrict__ P, const CUtensorMap* tmA = nullptr,
                        const CUtensorMap* tmW = nullptr) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int rank = (int)P[G_RANK];
  const int world = (int)P[G_WORLD];
  const int M = (int)P[G_M], N = (int)P[G_N];
  const long long K = (long long)P[G_K];
  const int group_m = (int)P[G_GROUP_M];
  const int tiles = (int)P[G_TILES];
  const int grid = (int)gridDim.x;
  const u64 budget = P[G_BUDGET_NS];
  const uint8_t* A = (const uint8_t*)P[G_A];
  const uint8_t* W = (const uint8_t*)P[G_W];
  const float* sa = (const float*)P[G_SA];
  const float* sw = (const float*)P[G_SW];
  __nv_bfloat16* out = (__nv_bfloat16*)P[G_OUT];
  u64* st = (u64*)P[G_STATE];
  u64* tot = st + GS_TOT;
  const int buckets = INSTR ? (int)P[G_HIST_BUCKETS] : 0;
  const int tiles_m = M / GA_BM, tiles_n = N / GA_BN;
  const int k_tiles = (int)(K / GA_BK);

  __shared__ u64 s_epoch;
  __shared__ int s_abort;
  __shared__ u32 s_lead_hist[CB_EXT_LEAD_BUCKETS];
  // thread 0's per-peer sums, in shared memory rather than registers the GEMM needs
  __shared__ u64 s_peer_wait[GA_MAX_RANKS], s_peer_last[GA_MAX_RANKS], s_peer_late[GA_MAX_RANKS];
  if (threadIdx.x == 0) {
    s_epoch = ld_volatile(st + GS_EPOCH);
    s_abort = ld_volatile(st + GS_ABORT) != 0;
  }
  if (threadIdx.x < CB_EXT_LEAD_BUCKETS) s_lead_hist[threadIdx.x] = 0;
  if (threadIdx.x < GA_MAX_RANKS) s_peer_wait[threadIdx.x] = s_peer_last[threadIdx.x] = s_peer_late[threadIdx.x] = 0;
  // TMA: one "full" barrier per stage, and the count of stages this CTA consumed so far, whose
  // quotient by GA_STAGES is each barrier's phase
  __shared__ __align__(8) u64 s_full[GA_STAGES];
  if (TMA && threadIdx.x == 0) {
    for (int i = 0; i < GA_STAGES; ++i) mbar_init(smem_u32(&s_full[i]), 1);
    asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
  }
  u32 consumed = 0;
  __syncthreads();
  if (s_abort) return;  // an earlier call aborted (sticky); it was counted then
  const u64 epoch = s_epoch;
  const u64 begun_base = (epoch - 1) * (u64)tiles;
  const int parity = (int)(epoch & 1);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warp_m = warp >> 2, warp_n = warp & 3;  // 2 x 4 warps: 64 rows x 32 columns each
  const int g = lane >> 2, tq = lane & 3;
  // 1024-aligned (the host gives GA_SMEM_ALIGN bytes more): wgmma's swizzle is on address bits
  const u32 smem_base = ((u32)__cvta_generic_to_shared(smem) + (GA_SMEM_ALIGN - 1)) & ~(u32)(GA_SMEM_ALIGN - 1);
  constexpr u32 STAGE_BYTES = 2 * GA_BM * GA_BK;  // A then W
  // The reduced tile goes out through the stages' shared memory (free from the publish barrier
  // to the next tile's guard barrier), rows padded 16 bytes so the fragment stores of a warp fall
  // in 32 distinct banks
  uint8_t* const out_tile = smem + (smem_base - (u32)__cvta_generic_to_shared(smem));
  static_assert(GA_BM * GA_OUT_ROW_BYTES <= GA_STAGES * 2 * GA_BM * GA_BK, "the staged tile fits the stages");

  // Thread 0's accumulators (the CTA's clocks) live in shared memory, and each phase's clock is
  // added as it ends: held in registers by every thread across the main loop they cost the wgmma
  // program its registers (spills, and the instrumented program +16-106 % slower than the plain
  // one, run 96).
  __shared__ u64 s_ph[5];  // guard, GEMM, publish, wait, reduce
  __shared__ u64 s_mark;   // thread 0's clock at the last phase boundary
  __shared__ u64 s_k0, s_g0, s_lead_max, s_stalls, s_tiles;
  if (INSTR && threadIdx.x == 0) {
    for (int i = 0; i < 5; ++i) s_ph[i] = 0;
    s_lead_max = s_stalls = s_tiles = 0;
    s_k0 = clock64();
    s_g0 = globaltimer();
  }

  for (int t = blockIdx.x; t < tiles; t += grid) {
    u64 t3 = 0;
    if (INSTR && threadIdx.x == 0) s_mark = clock64();
    // ---- guard: the throttle, and the drift measurement --------------------------------------
    if (threadIdx.x == 0) {
      if (THROTTLE) {
        const u64 limit = (u64)GA_THROTTLE_ROUNDS * grid;
        u64 begun = ld_relaxed_gpu(st + GS_BEGUN) - begun_base;
        if ((u64)t >= begun + limit) {
          if (INSTR) ++s_stalls;
          const u64 deadline = globaltimer() + budget;
          Backoff bo;
          do {
            const bool give_up = !bo.pause(deadline) || (bo.cold() && any_abort(P, st, world));
            if (give_up) { s_abort = 1; break; }
            begun = ld_relaxed_gpu(st + GS_BEGUN) - begun_base;
          } while ((u64)t >= begun + limit);
        }
      }
      const u64 before = atom_add_relaxed_gpu(st + GS_BEGUN, 1ull) - begun_base;
      if (INSTR) {
        const long long lead = (long long)t - (long long)before;  // tiles ahead of the grid
        if (lead > 0) {
          const u64 milli = (u64)lead * 1000ull / (u64)grid;
          s_lead_max = milli > s_lead_max ? milli : s_lead_max;
          const u64 b = (u64)lead * CB_EXT_LEAD_PER_ROUND / (u64)grid;
          s_lead_hist[b < CB_EXT_LEAD_BUCKETS ? b : CB_EXT_LEAD_BUCKETS - 1]++;
        } else {
          s_lead_hist[0]++;
        }
      }
    }
    __syncthreads();
    if (s_abort) break;
    if (INSTR && threadIdx.x == 0) phase_end(s_ph + 0, &s_mark, clock64());

    // ---- copy: the GEMM of the tile ---------------------------------------------------------
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, group_m, &tm, &tn);
    const uint8_t* At = A + (long long)tm * GA_BM * K;
    const uint8_t* Wt = W + (long long)tn * GA_BN * K;
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    // The tensor cores add FP8 products into their accumulator at less than FP32's precision
    // (DeepSeek-V3's report: about 14 bits on H800); the first wgmma kernel here, accumulating the
    // whole K in place, missed the host reference's bound by 1-3 % on outputs with cancellation
    // (run 93). So each wgmma group accumulates GA_WG_PROMOTE k32 steps into `part` and the CUDA
    // cores add that to `acc` in FP32, as DeepGEMM does. The group is waited for before the add,
    // so no wgmma is in flight across an iteration's barrier: the loads run GA_STAGES - 1 stages
    // ahead in both main loops.
    float part[WG ? GA_FRAG : 1];
    const u32 sAw = warp_m * 64 * GA_BK;  // wgmma: this warpgroup's 64 rows of the A tile
    // TMA: stage kt of this tile is slot (consumed + kt) % GA_STAGES, filled for the
    // ((consumed + kt) / GA_STAGES)-th time
    auto tma_stage = [&](int k_tile) {
      if (threadIdx.x == 0) {
        const u32 slot = (consumed + (u32)k_tile) % GA_STAGES;
        const u32 bar = smem_u32(&s_full[slot]);
        const u32 sa_dst = smem_base + slot * STAGE_BYTES;
        mbar_expect_tx(bar, STAGE_BYTES);
        tma_load_2d(sa_dst, tmA, k_tile * GA_BK, tm * GA_BM, bar);
        tma_load_2d(sa_dst + GA_BM * GA_BK, tmW, k_tile * GA_BK, tn * GA_BN, bar);
      }
    };
#pragma unroll
    for (int s = 0; s < GA_STAGES - 1; ++s) {
      if (TMA) {
        if (s < k_tiles) tma_stage(s);
      } else {
        if (s < k_tiles) load_stage(smem_base + s * STAGE_BYTES, smem_base + s * STAGE_BYTES + GA_BM * GA_BK, At, Wt, K, s);
        cp_async_commit();
      }
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      if (TMA) {
        const u32 n = consumed + (u32)kt;
        mbar_wait(smem_u32(&s_full[n % GA_STAGES]), (n / GA_STAGES) & 1, budget);
      } else {
        cp_async_wait<GA_STAGES - 2>();
        if (WG) fence_proxy_async();
      }
      __syncthreads();
      {
        const int nk = kt + GA_STAGES - 1;  // refills the stage of kt - 1, which every warp is done with
        if (TMA) {
          if (nk < k_tiles) tma_stage(nk);
        } else {
          const int ns = nk % GA_STAGES;
          if (nk < k_tiles) load_stage(smem_base + ns * STAGE_BYTES, smem_base + ns * STAGE_BYTES + GA_BM * GA_BK, At, Wt, K, nk);
          cp_async_commit();
        }
      }
      const int cs = TMA ? (int)((consumed + (u32)kt) % GA_STAGES) : kt % GA_STAGES;
      const u32 sA = smem_base + cs * STAGE_BYTES;
      const u32 sW = sA + GA_BM * GA_BK;
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {  // two k32 steps per 64-byte stage
        if (WG) {
          const int step = kt * 2 + ks;
          wg_fence();
          wgmma_e4m3_m64n128k32(part, wg_desc(sA + sAw + 32 * ks), wg_desc(sW + 32 * ks), step % GA_WG_PROMOTE != 0);
          if ((step + 1) % GA_WG_PROMOTE == 0 || step + 1 == 2 * k_tiles) {
            wg_commit();
            wg_wait<0>();
            wg_pin(part);
            float* d = &acc[0][0][0];
#pragma unroll
            for (int e = 0; e < GA_FRAG; ++e) d[e] += part[e];
          }
        } else {
          u32 a[4][4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            // matrices: rows 0-7 / 8-15 of the m16 tile x k bytes 0-15 / 16-31 -> a0, a1, a2, a3
            const int row = warp_m * 64 + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
            const int chunk = ks * 2 + (lane >> 4);
            ldmatrix_x4(sA + swz(row, chunk), a[i][0], a[i][1], a[i][2], a[i][3]);
          }
          u32 b[4][2];
#pragma unroll
          for (int j = 0; j < 4; j += 2) {
            // matrices: n8 tile j (k 0-15, 16-31), then n8 tile j+1 (k 0-15, 16-31)
            const int mi = lane >> 3;
            const int row = warp_n * 32 + j * 8 + (lane & 7) + (mi >> 1) * 8;
            const int chunk = ks * 2 + (mi & 1);
            ldmatrix_x4(sW + swz(row, chunk), b[j][0], b[j][1], b[j + 1][0], b[j + 1][1]);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) mma_e4m3(acc[i][j], a[i], b[j][0], b[j][1]);
        }
      }
    }
    if (!TMA) cp_async_wait<0>();
    consumed += (u32)k_tiles;
    // the scales, and this rank's partial rounded to BF16 (what the peers receive)
    u32 mine[GA_FRAG / 2];
    {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int c = tn * GA_BN + frag_col<WG>(warp_n, i, j, tq);
          const float c0 = __ldg(sw + c), c1 = __ldg(sw + c + 1);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float r = __ldg(sa + tm * GA_BM + frag_row<WG>(warp_m, warp_n, i, g, h));
            __nv_bfloat162 v = __floats2bfloat162_rn(acc[i][j][2 * h] * r * c0, acc[i][j][2 * h + 1] * r * c1);
            mine[(i * 4 + j) * 2 + h] = *reinterpret_cast<u32*>(&v);
          }
        }
    }
    if (INSTR && threadIdx.x == 0) phase_end(s_ph + 1, &s_mark, clock64());

    // ---- publish: push the partial into every peer's receive buffer, then its flag ----------
    // A tile in a receive buffer is GA_FRAG / 8 rows of GA_THREADS 16-byte vectors: thread x's
    // v-th vector at v * GA_THREADS + x, so each store instruction of a warp writes 512
    // contiguous bytes (whole 128-byte lines over NVLink) and each load of the reduce reads them
    // back so. (Thread-major, 128 bytes per thread, a warp's store touched 32 lines 16 bytes each.)
    const long long slot_bytes = (long long)tiles * GA_TILE_BYTES;  // one source's tiles
    for (int p = 0; p < world; ++p) {
      if (p == rank) continue;
      uint4* dst = (uint4*)((uint8_t*)P[G_RECV_PTR + p] + ((long long)parity * world + rank) * slot_bytes +
                            (long long)t * GA_TILE_BYTES) + threadIdx.x;
#pragma unroll
      for (int v = 0; v < GA_FRAG / 8; ++v)
        dst[v * GA_THREADS] = make_uint4(mine[4 * v], mine[4 * v + 1], mine[4 * v + 2], mine[4 * v + 3]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // release, cumulative over the barrier: every thread's pushes before the flag
      for (int p = 0; p < world; ++p)
        if (p != rank) st_release_sys((u64*)P[G_FLAG_PTR + p] + (long long)t * world + rank, epoch);
    }
    if (INSTR && threadIdx.x == 0) {
      t3 = clock64();  // the wait's start, for the per-peer lateness below
      phase_end(s_ph + 2, &s_mark, t3);
    }

    // ---- wait: every peer's partial of this tile is here --------------------------------------
    if (threadIdx.x == 0 && world > 1) {
      const u64* flags = (const u64*)P[G_FLAG_PTR + rank] + (long long)t * world;
      u32 pending = ((1u << world) - 1) & ~(1u << rank);
      const u64 deadline = globaltimer() + budget;
      Backoff bo;
      int last = rank;
      bool first_round = true;
      for (;;) {
        const u64 now = INSTR ? clock64() : 0;
        u32 left = pending;
        while (left) {
          const int p = __ffs(left) - 1;
          left &= left - 1;
          if (ld_acquire_sys(flags + p) >= epoch) {
            pending &= ~(1u << p);
            if (INSTR) s_peer_late[p] += now - t3;
            if (!first_round) last = p;
          }
        }
        if (!pending) break;
        first_round = false;
        const bool give_up = !bo.pause(deadline) || (bo.cold() && any_abort(P, st, world));
        if (give_up) {
          s_abort = 1;
          break;
        }
      }
      if (INSTR) {
        s_peer_last[last]++;
        if (last != rank) s_peer_wait[last] += clock64() - t3;
      }
    }
    __syncthreads();
    if (s_abort) break;
    if (INSTR && threadIdx.x == 0) phase_end(s_ph + 3, &s_mark, clock64());

    // ---- reduce: the partials in rank order, BF16 out ------------------------------------------
    {
      float sum[GA_FRAG];
#pragma unroll
      for (int e = 0; e < GA_FRAG; ++e) sum[e] = 0.f;
      for (int p = 0; p < world; ++p) {
        const uint4* src = (const uint4*)((const uint8_t*)P[G_RECV_PTR + rank] +
                                          ((long long)parity * world + p) * slot_bytes +
                                          (long long)t * GA_TILE_BYTES) + threadIdx.x;
#pragma unroll
        for (int v = 0; v < GA_FRAG / 8; ++v) {
          uint4 x;
          if (p == rank) x = make_uint4(mine[4 * v], mine[4 * v + 1], mine[4 * v + 2], mine[4 * v + 3]);
          else x = __ldcg(src + v * GA_THREADS);
          const u32 w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[q]));
            sum[8 * v + 2 * q] += f.x;
            sum[8 * v + 2 * q + 1] += f.y;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = frag_row<WG>(warp_m, warp_n, i, g, h);
            const int c = frag_col<WG>(warp_n, i, j, tq);
            const int e = ((i * 4 + j) * 2 + h) * 2;
            *reinterpret_cast<__nv_bfloat162*>(out_tile + r * GA_OUT_ROW_BYTES + c * 2) =
                __floats2bfloat162_rn(sum[e], sum[e + 1]);
          }
      // The tile's rows from shared memory, 16 bytes a thread: each warp store is 2 rows of 256
      // contiguous bytes, where the fragments are 8 rows x 16 bytes (4-byte stores): the reduce
      // phase 28-30 % shorter, calls 1-7 % faster (run 118).
      __syncthreads();
#pragma unroll
      for (int k = 0; k < GA_BM * GA_BN * 2 / 16 / GA_THREADS; ++k) {
        const int idx = threadIdx.x + k * GA_THREADS;
        const int r = idx / (GA_BN * 2 / 16), c16 = idx % (GA_BN * 2 / 16);
        *reinterpret_cast<uint4*>(out + (long long)(tm * GA_BM + r) * N + tn * GA_BN + c16 * 8) =
            *reinterpret_cast<const uint4*>(out_tile + r * GA_OUT_ROW_BYTES + c16 * 16);
      }
      // TMA: the next tile's loads write these bytes through the async proxy; this thread's
      // generic accesses to them are ordered before those by a proxy fence (then the guard barrier)
      if (TMA) fence_proxy_async();
    }
    // The next tile's first loads overwrite stages this tile's main loop read (and, staged, its
    // output): every warp passed the publish barrier after its last ldmatrix, and the next tile's
    // guard barrier after its last read of the staged tile, so they may.
    if (INSTR && threadIdx.x == 0) {
      phase_end(s_ph + 4, &s_mark, clock64());
      ++s_tiles;
    }
  }

  // ---- finish ---------------------------------------------------------------------------------
  __syncthreads();
  if (threadIdx.x == 0) {
    if (s_abort) {
      if (atomicCAS(st + GS_ABORT, 0ull, epoch) == 0ull) {
        red_add(tot + CB_C_TIMEOUTS, 1ull);
        red_add(tot + CB_C_CALLS, 1ull);
        st_relaxed_sys(st + GS_ABORT_WORD, epoch);  // for the peers' waits
      }
    }
    if (INSTR && !s_abort) {
      red_add(tot + GT_PHASES + CB_PH_GUARD, s_ph[0]);
      red_add(tot + GT_PHASES + CB_PH_COPY, s_ph[1]);
      red_add(tot + GT_PHASES + CB_PH_PUBLISH, s_ph[2]);
      red_add(tot + GT_PHASES + CB_PH_WAIT, s_ph[3]);
      red_add(tot + GT_PHASES + CB_PH_REDUCE, s_ph[4]);
      for (int p = 0; p < world; ++p) {
        red_add(tot + GT_PEER_WAIT + p, s_peer_wait[p]);
        red_add(tot + GT_PEER_LAST + p, s_peer_last[p]);
        red_add(tot + GT_PEER_LATE + p, s_peer_late[p]);
      }
      red_add(tot + GT_EXT + CB_EXT_THROTTLE_STALLS, s_stalls);
      red_add(tot + GT_EXT + CB_EXT_TILES, s_tiles);
      if (s_lead_max) atomicMax(tot + GT_EXT + CB_EXT_LEAD_MAX, s_lead_max);
      for (int b = 0; b < CB_EXT_LEAD_BUCKETS; ++b) red_add(tot + GT_EXT + CB_EXT_LEAD_HIST + b, s_lead_hist[b]);
      if (blockIdx.x == 0) {
        red_add(tot + CB_C_CLOCK_NS, globaltimer() - s_g0);
        red_add(tot + CB_C_CLOCK_CYCLES, clock64() - s_k0);
      }
    }
    __threadfence();
    if (atom_add_acq_rel_gpu(st + GS_DONE, 1ull) + 1 == epoch * (u64)grid && !s_abort) {
      if (INSTR) {
        red_add(tot + CB_C_CALLS, 1ull);
        red_add(tot + CB_C_BYTES, (u64)M * (u64)N * 2ull);
        red_add(tot + GT_HIST + bucket_of(clock64() - s_k0, buckets), 1ull);
        const u64 lo = (u64)tiles / grid, hi = lo + ((u64)tiles % grid ? 1 : 0);
        red_add(tot + GT_EXT + CB_EXT_TILE_SPREAD, hi - lo);
      }
      st_volatile(st + GS_EPOCH, epoch + 1);  // read by the next launch only
    }
  }
}

#define GA_KERNEL(name, thr, instr, wg)                                               \
  extern "C" __global__ void __launch_bounds__(GA_THREADS, 2) name(const u64* P) { \
    gemm_ar<thr, instr, wg>(P);                                                       \
  }
GA_KERNEL(gemm_ar_fp8_bf16, false, true, false)
GA_KERNEL(gemm_ar_fp8_bf16_throttled, true, true, false)
GA_KERNEL(gemm_ar_fp8_bf16_plain, false, false, false)
GA_KERNEL(gemm_ar_fp8_bf16_throttled_plain, true, false, false)
// The same programs with the wgmma main loop (GemmArModule.MAIN_LOOP). Two sets of 64
// accumulators need more than the 128 registers that two CTAs per SM allow: at GA_WG_CTAS = 2
// ptxas spills 80-300 bytes, which measured faster than one CTA per SM without spills (run 94).
#define GA_KERNEL_WG(name, thr, instr)                                                      \
  extern "C" __global__ void __launch_bounds__(GA_THREADS, GA_WG_CTAS) name(const u64* P) { \
    gemm_ar<thr, instr, true>(P);                                                           \
  }
GA_KERNEL_WG(gemm_ar_fp8_bf16_wg, false, true)
GA_KERNEL_WG(gemm_ar_fp8_bf16_throttled_wg, true, true)
GA_KERNEL_WG(gemm_ar_fp8_bf16_plain_wg, false, false)
GA_KERNEL_WG(gemm_ar_fp8_bf16_throttled_plain_wg, true, false)
// The wgmma programs with TMA loads (GemmArModule.MAIN_LOOP = wgmma-tma): A's and W's tensor maps
// (GemmArTensorMaps) as __grid_constant__ parameters after P.
#define GA_KERNEL_WG_TMA(name, thr, instr)                                                    \
  extern "C" __global__ void __launch_bounds__(GA_THREADS, GA_WG_CTAS)                       \
      name(const u64* P, const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmW) { \
    gemm_ar<thr, instr, true, true>(P, &tmA, &tmW);                                           \
  }
GA_KERNEL_WG_TMA(gemm_ar_fp8_bf16_wg_tma, false, true)
GA_KERNEL_WG_TMA(gemm_ar_fp8_bf16_throttled_wg_tma, true, true)
GA_KERNEL_WG_TMA(gemm_ar_fp8_bf16_plain_wg_tma, false, false)
GA_KERNEL_WG_TMA(gemm_ar_fp8_bf16_throttled_plain_wg_tma, true, false)

// Copies the totals into the counter block under its seqlock (one block of GA_PUBLISH_THREADS,
// a kernel of its own on the rank's stream, so the totals hold still). Published words, from
// CB_OFF_COUNTERS: counters, phases (mean over CTAs: time), peer wait / last / late (world each;
// wait and late as the mean over CTAs), the per-peer late histogram (zero: not measured here),
// the latency histogram, then the extension words.
__device__ __forceinline__ int published_source(int d, int world, int buckets, bool* per_cta) {
  *per_cta = false;
  if (d < GT_PEER_WAIT) { *per_cta = d >= GT_PHASES; return d; }
  d -= GT_PEER_WAIT;
  if (d < world) { *per_cta = true; return GT_PEER_WAIT + d; }
  d -= world;
  if (d < world) return GT_PEER_LAST + d;
  d -= world;
  if (d < world) { *per_cta = true; return GT_PEER_LATE + d; }
  d -= world;
  if (d < CB_LATE_BUCKETS * world) return -2;  // published as zero
  d -= CB_LATE_BUCKETS * world;
  if (d < buckets) return GT_HIST + d;
  d -= buckets;
  if (d < CB_EXT_WORDS) return GT_EXT + d;
  return -1;
}

extern "C" __global__ void __launch_bounds__(GA_PUBLISH_THREADS) gemm_ar_publish(const u64* P, int grid) {
  const u64* st = (const u64*)P[G_STATE];
  u64* stw = (u64*)P[G_STATE];
  const int world = (int)P[G_WORLD];
  const int buckets = (int)P[G_HIST_BUCKETS];
  u64* cb = (u64*)P[G_COUNTER_BLOCK];
  u64* lock = cb + CB_OFF_SEQLOCK / 8;
  constexpr int PER = 8;
  int src[PER];
  bool per_cta[PER];
  u64 v[PER];
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    src[j] = published_source(threadIdx.x + GA_PUBLISH_THREADS * j, world, buckets, &per_cta[j]);
    v[j] = src[j] >= 0 ? __ldcg(st + GS_TOT + src[j]) : 0;
    if (per_cta[j]) v[j] /= (u64)grid;
  }
  const u64 s = ld_volatile(st + GS_LOCK);
  const u64 cps = ld_volatile(st + GS_CPS);
  if (threadIdx.x == 0) st_volatile(lock, s + 1);
  __syncthreads();
  fence_acq_rel_sys();
  if (threadIdx.x == 0) cb[CB_OFF_CPS / 8] = cps;
#pragma unroll
  for (int j = 0; j < PER; ++j)
    if (src[j] != -1) cb[CB_OFF_COUNTERS / 8 + threadIdx.x + GA_PUBLISH_THREADS * j] = v[j];
  fence_acq_rel_sys();
  __syncthreads();
  if (threadIdx.x == 0) {
    st_volatile(lock, s + 2);
    st_volatile(stw + GS_LOCK, s + 2);
  }
}
