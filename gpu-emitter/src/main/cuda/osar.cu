// collscope: an instrumented one-shot all-reduce (sum) for N ranks.
//
// Each rank is one kernel launch per collective (one stream per rank; ranks may share a GPU,
// sit on peer GPUs, or in other processes through CUDA IPC: the kernel only sees pointers).
// Per collective and per data block:
//   guard   wait until every peer acked the ring slot this collective reuses
//   copy    this block's chunk of the input into this rank's slot (pull), or into this rank's
//           segment of every peer's slot (push, below)
//   publish the last local block to finish its copy publishes this rank's flag (= seq): local
//           grid completion; the other blocks go on at once
//   wait    from this rank's publication until every peer's flag is seen; billed per peer as
//           critical-path shares (counters/README.md)
//   reduce  sum every rank's slot into the output; the last block acks the slot
// Two data paths, one protocol. Pull (small collectives): each rank copies its input into its own
// slot and every rank reads every peer's slot across NVLink in the reduce. Push (from
// CudaCollective.Options.PUSH_BYTES up): a rank's slot has one segment per rank, each rank writes
// its input straight into its segment of every peer's slot (posted NVLink writes, no local copy)
// and reduces its own slot and input locally. A read across NVLink waits a round trip per request;
// a write does not, and the pull path's copy into its own slot is a second pass over the input.
// The flag, the ack, the guard and every phase mean the same in both: in push a copy's time
// includes the link, and a slow link shows in the peers' waits either way. With whole vectors the
// push path is pipelined (below: "the pipelined push path"): pieces of the input are pushed and
// released on flags of their own, and reduced as they land, under the transfer.
// A third path, two-shot (AllReduceAlgorithm.TWO_SHOT, many ranks and large collectives): a
// reduce-scatter into each rank's chunk, then an all-gather of the sums, on the push path's slots;
// the same guard, flag, wait and ack, the second exchange inside reduce (below: "two-shot").
// The phases and the per-peer shares are those of the block that published the flag (the
// rank's critical path), one block per collective; the latency histogram is counted from that
// block's clocks too. Calls and bytes come from the sequence itself (osar_publish
// derives them: every completed collective moved the same bytes). Every interval is measured on
// the SM's own clock64 (never a difference of two SMs' clocks).
// Sampled accounting: the calls and bytes count every collective; the phases, the per-peer shares
// and lateness, the latency and the clock sample are accounted for 1 collective in
// P_SAMPLE_MASK + 1 (a power of two; 1 = every one), chosen by a hash of its sequence
// (fault_mix(seq, SAMPLE_KEY), so that no period of the job's own collectives aliases with it) and
// weighted by that number: the totals estimate every collective's, as the NCCL plugin's sampled
// kernel times do. The instrumented kernels hold the plain kernel's body beside the accounting
// one and take it for every unsampled collective (osar, at the end): such a collective reads no
// clock and adds nothing, and is scheduled as the plain kernel is. The one-shot f32 push kernel
// keeps one body that tests the sample where it accounts (two_bodies: measured).
// The host launches the plain kernel itself for the unsampled collectives it launches on a stream
// (Launcher.collective): the instrumented kernels' own choice serves CUDA graphs.
// A sampled collective's accounting warp stores the raw clocks and arrivals in a sample record
// (osar_params.h) with plain stores; a separate kernel (osar_publish), which the host enqueues on
// the rank's stream after every k-th collective, folds the records since its last fold into the
// rank's totals in device memory, sums those (a slice per data block: a timeout is added by the
// block that raised it) and copies the sums into the counter block (mapped host memory) under its
// sequence lock: the kernel boundary makes every copy whole, and the collective itself carries no
// PCIe traffic, fence or arithmetic for instrumentation. Until run 180 the accounting warp did the
// arithmetic and ~20 reductions itself: code that a sampled collective ran cold, ~2.5 us per sample
// on a stream that launched the plain kernel in between, ~1 us with the accounting left out
// (run 181, docs/BENCHMARKS.md). Run 70 deferred it too and was slower: thread 0 wrote the record
// on the path that ends the launch, and osar_publish read the records one after another.
// Every wait backs off (hot spins, then __nanosleep 128 ns doubling to 4096 ns) and is bounded:
// past its budget the kernel counts a timeout, raises S_ABORT and returns; it never hangs.
// S_ABORT is sticky: every later launch of the rank (a dispatcher batch or a graph replay already
// queued) sees it at entry and returns without touching anything, so an abort costs one budget,
// not one per queued launch. The rank also raises the abort word in its sync region, and a peer
// still waiting on it gives up once it backs off instead of running out its own budget.
//
// Memory ordering across GPUs and processes: a peer's flag, ack and their timestamps are read
// with ld.acquire.sys, and this rank publishes its own flag and ack with st.release.sys. The
// blocks of one rank meet on two counters (S_ARRIVED, S_FINISHED): each block's increment is a
// GPU-scope acquire-release, so the last block, whose system-scope release store publishes the flag
// or ack, has every block's work ordered before it (cumulativity; see publish and finish).
#include <cuda_bf16.h>
#include <stdint.h>

#include "counter_block.h"
#include "memory_model.h"
#include "osar_params.h"

static_assert(T_STRIDE >= T_WORDS && T_STRIDE % 16 == 0, "a slice of totals: whole 128-byte lines");
static_assert(R_WORDS % 16 == 0 && R_ARRIVAL + OSAR_MAX_RANKS <= R_WORDS, "a record: whole 128-byte lines");
static_assert(OSAR_RECORDS % PUBLISH_THREADS == 0, "osar_publish: whole records per thread");
static_assert(S_TOT % 16 == 0, "the totals start on a 128-byte line of their own (osar_params.h)");
static_assert(OSAR_MAX_RANKS <= 32, "guard and wait poll one peer per lane of warp 0");
static_assert(CB_OFF_PHASES == CB_OFF_COUNTERS + 8 * CB_N_COUNTERS, "phases follow counters");
static_assert(CB_OFF_PEER_WAIT == CB_OFF_PHASES + 8 * CB_N_PHASES, "peer arrays follow phases");

// Adds v to a total in device memory and moves on: red.global has no result to wait for.
// atomicAdd on a generic pointer (the totals' address comes from the parameter array) compiles to
// a generic ATOM whose predicate result (did the address fall in shared memory?) the warp waits
// for before the next one: one L2 round trip per add, ~10 of them at the end of every block,
// which was ~1.2 us of the instrumentation's ~1.6 us per collective (docs/BENCHMARKS.md, run 20).
__device__ __forceinline__ void red_add(u64* p, u64 v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

// Whether peer p (a lane's own peer: any p < 32) aborted. A peer whose collective aborted never
// publishes or acks again (its later launches return at entry), so this collective cannot
// complete on every rank, whichever peer this rank is still waiting for: the wait may end now
// rather than at this rank's budget. The abort word carries no data: relaxed.
__device__ __forceinline__ bool peer_aborted(const u64* P, int rank, int world, int p) {
  return p < world && p != rank && ld_relaxed_sys((const u64*)P[P_ABORT_PTR + p]) != 0;
}

__device__ __forceinline__ void spin_ns(u64 ns) {
  if (ns == 0) return;
  u64 end = globaltimer() + ns;
  while (globaltimer() < end) __nanosleep(256);
}

// Bounded back-off: returns false once the deadline (globaltimer) has passed.
// The sleep's cap: 4096 ns for the waits on a peer's flag or ack, which a slow peer can make long;
// a piece's wait (the pipelined push path) uses 256, as it is the collective's tail whenever the
// piece is the last to land.
struct Backoff {
  static constexpr unsigned HOT_SPINS = 32;
  unsigned spins = 0;
  unsigned sleep = 128;
  unsigned cap = 4096;
  __device__ __forceinline__ bool pause(u64 deadline) {
    if (spins < HOT_SPINS) {
      ++spins;
    } else {
      __nanosleep(sleep);
      sleep = sleep < cap ? sleep * 2 : cap;
    }
    return globaltimer() <= deadline;
  }
  // Past the hot spins: the wait is long enough to be worth a look at the peers' abort words,
  // and short waits (every healthy collective's) never pay for that look.
  __device__ __forceinline__ bool cold() const { return spins >= HOT_SPINS; }
};

// ---- injected faults (io.collscope.collective.FaultPlan) ----------------------------------
// The per-sequence pattern of a fault with a fraction (~P%): splitmix64 of the sequence offset by
// the fault's index, the same function as FaultPlan.mix. Pinned in FaultPlanTest:
//   fault_mix(1, 0)         = 0x910a2dec89025cc1
//   fault_mix(2, 0)         = 0x975835de1c9756ce
//   fault_mix(1, 1)         = 0xbeeb8da1658eec67
//   fault_mix(1000, 3)      = 0x4f50d8f6e14fcfa7
//   fault_mix(123456789, 7) = 0xc56da70a99d3435c
__host__ __device__ __forceinline__ u64 fault_mix(u64 seq, u64 index) {
  u64 z = seq + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// This collective's injected delays, summed over the rank's fault table (osar_params.h): d[F_*]
// for the rank's own phases, link[p] for peer p's flag. An entry counts when its delay is set
// (the host zeroes it outside the fault's active interval) and its pattern selects seq. Thread 0;
// d and link were zeroed before the block's first barrier. No faults: one load of P_N_FAULTS.
__device__ __forceinline__ void fault_delays(const u64* P, u64 seq, int rank, int world, u64* d,
                                             u64* link) {
  const int nf = (int)P[P_N_FAULTS];
  for (int i = 0; i < nf; ++i) {
    const u64* f = P + P_FAULTS + F_WORDS * i;
    const u64 ns = f[F_DELAY];
    if (ns == 0 || (fault_mix(seq, f[F_INDEX]) >> 32) >= f[F_THRESHOLD]) continue;
    const int what = (int)(f[F_WHAT] & 0xff);
    if (what == F_LINK) {
      link[(int)(f[F_WHAT] >> 8)] += ns;
    } else if (what == F_ALL) {
      for (int p = 0; p < world; ++p)
        if (p != rank) link[p] += ns;
    } else {
      d[what] += ns;
    }
  }
}

__device__ __forceinline__ int bucket_of(u64 cycles, int buckets) {
  int b = cycles <= 1 ? 0 : 63 - __clzll((long long)cycles);
  return b < buckets ? b : buckets - 1;
}

// RankTotals.lateBucketOf: factor-of-two buckets from 2^(CB_LATE_SHIFT + 1) cycles up.
__device__ __forceinline__ int late_bucket_of(u64 cycles) {
  const int b = cycles <= 1 ? 0 : 63 - __clzll((long long)cycles) - CB_LATE_SHIFT;
  return b < 0 ? 0 : (b < CB_LATE_BUCKETS ? b : CB_LATE_BUCKETS - 1);
}

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// 16 bytes of T, moved as one uint4 (one 128-bit load or store) and summed as floats. The data
// path uses them when a rank's elements fill whole vectors (every slot, input and output is
// then 16-byte aligned): a thread keeps several of them in flight per peer, which is what a
// read across NVLink, microseconds long, needs to approach the link's bandwidth.
template <typename T>
struct Vec16;
template <>
struct Vec16<float> {
  static constexpr int N = 4;
  __device__ static void unpack(uint4 x, float* f) {
    f[0] = __uint_as_float(x.x); f[1] = __uint_as_float(x.y);
    f[2] = __uint_as_float(x.z); f[3] = __uint_as_float(x.w);
  }
  __device__ static uint4 pack(const float* f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  }
};
template <>
struct Vec16<__nv_bfloat16> {
  static constexpr int N = 8;
  __device__ static float2 pair(unsigned w) {
    __nv_bfloat162 h;
    memcpy(&h, &w, 4);
    return __bfloat1622float2(h);
  }
  __device__ static unsigned word(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);  // round to nearest, as __float2bfloat16
    unsigned w;
    memcpy(&w, &h, 4);
    return w;
  }
  __device__ static void unpack(uint4 x, float* f) {
    float2 a = pair(x.x), b = pair(x.y), c = pair(x.z), d = pair(x.w);
    f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y; f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
  }
  __device__ static uint4 pack(const float* f) {
    return make_uint4(word(f[0], f[1]), word(f[2], f[3]), word(f[4], f[5]), word(f[6], f[7]));
  }
};
constexpr int REDUCE_UNROLL = 2;  // vectors per thread and peer in flight at once
constexpr int PEER_GROUP = 4;     // peers whose loads are issued together
constexpr int PUSH_UNROLL = 4;    // input vectors per thread loaded before any is pushed

// The input plus the sequence term, rounded to T: what a slot holds (the copy's value).
template <typename T>
__device__ __forceinline__ uint4 with_term(uint4 x, float term) {
  using V = Vec16<T>;
  float f[V::N];
  V::unpack(x, f);
#pragma unroll
  for (int k = 0; k < V::N; ++k) f[k] += term;
  return V::pack(f);
}

// Where rank p's data for this collective is. Pull: p's slot. Push: p's segment of this rank's
// slot, or this rank's own input (its term added by the caller).
template <typename T, bool PUSH>
__device__ __forceinline__ const T* source_of(const u64* __restrict__ P, int rank, int world, int p,
                                              int slot, long long elems) {
  if (!PUSH) return (const T*)P[P_SLOT_PTR + p] + (long long)slot * elems;
  if (p == rank) return (const T*)P[P_INPUT];
  return (const T*)P[P_SLOT_PTR + rank] + ((long long)slot * world + p) * elems;
}

// The serial push path (scalars, or P_PUSH_WARPS = 0): this block's chunk of the input, plus the
// sequence term, into this rank's segment of every peer's slot. The stores are posted; each thread
// loads round r + 1's PUSH_UNROLL vectors before it stores round r's, so that no round waits for
// its own loads. Measured the same as loading each round just before storing it (runs 76 and 78,
// within 1 us at 16 MB); the copy runs at the link's pace either way (374 GB/s each way, run 77).
// bf16 measured ~10 % slower than f32 here at 16 MB for the same bytes; on the pipelined path the
// two are within 2 % (runs 105-106).
template <typename T>
__device__ __forceinline__ void push_input(const u64* __restrict__ P, int rank, int world, int slot,
                                           long long elems, long long lo, long long hi, bool vec,
                                           float term) {
  const T* in = (const T*)P[P_INPUT];
  const long long seg = ((long long)slot * world + rank) * elems;
  if (vec) {
    using V = Vec16<T>;
    const long long stride = blockDim.x;
    const long long step = stride * PUSH_UNROLL;
    const long long v_hi = hi / V::N;
    long long v = lo / V::N + threadIdx.x;
    uint4 x[PUSH_UNROLL];
#pragma unroll
    for (int u = 0; u < PUSH_UNROLL; ++u) {
      const long long i = v + u * stride;
      x[u] = i < v_hi ? ((const uint4*)in)[i] : make_uint4(0, 0, 0, 0);
    }
    for (; v < v_hi; v += step) {
      uint4 next[PUSH_UNROLL];
#pragma unroll
      for (int u = 0; u < PUSH_UNROLL; ++u) {
        const long long i = v + step + u * stride;
        next[u] = i < v_hi ? ((const uint4*)in)[i] : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < PUSH_UNROLL; ++u) x[u] = with_term<T>(x[u], term);
      for (int p = 0; p < world; ++p) {
        if (p == rank) continue;
        uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg);
#pragma unroll
        for (int u = 0; u < PUSH_UNROLL; ++u) {
          const long long i = v + u * stride;
          if (i < v_hi) dst[i] = x[u];
        }
      }
#pragma unroll
      for (int u = 0; u < PUSH_UNROLL; ++u) x[u] = next[u];
    }
  } else {
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      const T x = from_f<T>(to_f<T>(in[i]) + term);
      for (int p = 0; p < world; ++p)
        if (p != rank) ((T*)P[P_SLOT_PTR + p] + seg)[i] = x;
    }
  }
}

// Sums every rank's data (source_of) into the output over vectors [v_lo, v_hi) of 16 bytes. The
// peers are taken PEER_GROUP at a time in rank order (the sum's order is the scalar path's, so both
// give the same bits, and push the same as pull), each thread issuing all PEER_GROUP x REDUCE_UNROLL
// loads before it adds any. SCATTER (two-shot): each sum also goes into this rank's segment of
// every peer's slot, from the registers that hold it (no second pass over the output); the sources
// and those segments come from the caller's tables in shared memory (src_of, scatter_to).
template <typename T, bool PUSH, bool SCATTER = false>
__device__ __forceinline__ void reduce_vec(const u64* __restrict__ P, int rank, int world, int slot,
                                           long long elems, long long v_lo, long long v_hi, T* out,
                                           float term, const uint4* const* src_of = nullptr,
                                           uint4* const* scatter_to = nullptr) {
  using V = Vec16<T>;
  const long long stride = blockDim.x;
  for (long long v = v_lo + threadIdx.x; v < v_hi; v += stride * REDUCE_UNROLL) {
    float acc[REDUCE_UNROLL][V::N];
#pragma unroll
    for (int u = 0; u < REDUCE_UNROLL; ++u)
#pragma unroll
      for (int k = 0; k < V::N; ++k) acc[u][k] = 0.f;
    for (int p0 = 0; p0 < world; p0 += PEER_GROUP) {
      uint4 x[PEER_GROUP][REDUCE_UNROLL];
#pragma unroll
      for (int g = 0; g < PEER_GROUP; ++g) {
        const int p = p0 + g;
        const uint4* src = p >= world ? nullptr
                           : SCATTER  ? src_of[p]
                                      : (const uint4*)source_of<T, PUSH>(P, rank, world, p, slot, elems);
#pragma unroll
        for (int u = 0; u < REDUCE_UNROLL; ++u) {
          const long long i = v + u * stride;
          x[g][u] = p < world && i < v_hi ? __ldcg(src + i) : make_uint4(0, 0, 0, 0);
        }
        if (PUSH && p == rank) {
#pragma unroll
          for (int u = 0; u < REDUCE_UNROLL; ++u) x[g][u] = with_term<T>(x[g][u], term);
        }
      }
#pragma unroll
      for (int g = 0; g < PEER_GROUP; ++g) {
        if (p0 + g >= world) break;
#pragma unroll
        for (int u = 0; u < REDUCE_UNROLL; ++u) {
          float f[V::N];
          V::unpack(x[g][u], f);
#pragma unroll
          for (int k = 0; k < V::N; ++k) acc[u][k] += f[k];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < REDUCE_UNROLL; ++u) {
      const long long i = v + u * stride;
      if (i < v_hi) {
        const uint4 y = V::pack(acc[u]);
        ((uint4*)out)[i] = y;
        if (SCATTER) {
          for (int q = 0; q < world; ++q)
            if (q != rank) scatter_to[q][i] = y;
        }
      }
    }
  }
}

// Vectors [lo, hi) of src into dst, the block's threads striding by blockDim.x, PUSH_UNROLL loads
// in flight before their stores; `term` added when `add` (the input's copy). Loads go past L1
// (__ldcg): src may be a slot a peer wrote, acquired by another warp of the block.
template <typename T>
__device__ __forceinline__ void copy_vecs(const uint4* __restrict__ src, uint4* dst, long long lo,
                                          long long hi, bool add, float term) {
  const long long stride = blockDim.x;
  for (long long v = lo + threadIdx.x; v < hi; v += stride * PUSH_UNROLL) {
    uint4 x[PUSH_UNROLL];
#pragma unroll
    for (int u = 0; u < PUSH_UNROLL; ++u) {
      const long long i = v + u * stride;
      x[u] = i < hi ? __ldcg(src + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < PUSH_UNROLL; ++u) {
      const long long i = v + u * stride;
      if (i < hi) dst[i] = add ? with_term<T>(x[u], term) : x[u];
    }
  }
}

// ---- the two-shot's data loops, out of line ----------------------------------------------
// The plain and the instrumented two-shot kernel call the same three functions for their bytes.
// __noinline__: ptxas compiles a copy of each per kernel, as a function of its own, so the
// kernel's instrumentation is no longer interleaved with the loops (the two kernels' copies still
// differ in register assignment and the order of some address arithmetic: dev/sass.sh, NORM=1).
// Inlined, the instrumented kernel's loops ran 1.5 % slower at 8 emulated ranks and
// 64 MB though the accounting did not run: +13 us whether 1 collective in 16 or every one was
// accounted, +0.6 us with the accounting warp's code taken out of the kernel (runs 151-155).
// Out of line (run 157, one H200, 8 emulated ranks, instrumented - plain, two passes): f32 4 MB
// +451 / +386 ns, 16 MB +312 / +435, 64 MB +205 / +223 against +1,537, +216, +12,681 inlined in
// the same machine session; bf16 64 MB +616 / +693 against +12,927; the plain kernel's times
// the same (f32 64 MB 878.8 us against 878.5). The pull and push kernels are byte-identical.
// Compiled separately (-rdc, one copy shared by both kernels) they ran 2 % faster at 64 MB but
// 1-4 % slower at 4-16 MB, and -rdc cost the other kernels ~300 ns at 4 KB (runs 156-157).
// Chunk r of the vectors is rank r's; two_shot_share gives this block's part of chunk c.
__device__ __forceinline__ void two_shot_share(long long nvec, int world, int blocks, int c,
                                               long long* a, long long* b) {
  const long long per_rank = (nvec + world - 1) / world;
  const long long lo_c = min((long long)c * per_rank, nvec);
  const long long hi_c = min(lo_c + per_rank, nvec);
  const long long per_block = (hi_c - lo_c + blocks - 1) / blocks;
  *a = min(lo_c + (long long)blockIdx.x * per_block, hi_c);
  *b = min(*a + per_block, hi_c);
}

// The reduce's sources and the segments its sums go to, one per rank, read by every thread in
// every iteration of its loop: from shared memory, not reloaded from P (after the wait's acquires
// emptied L1) on the path of each 16-byte load and store. Measured 4-5 % faster, plain and
// instrumented, f32 and bf16, at 8 ranks and 16-64 MB (run 152: f32 16 MB 221.5 us against
// 234.2, 64 MB 879.5 against 918.4). At file scope so that two_shot_reduce reads them as shared
// memory; the kernel writes them before the copy.
__shared__ const uint4* s_two_src[OSAR_MAX_RANKS];
__shared__ uint4* s_two_scatter[OSAR_MAX_RANKS];

// copy: chunk q of the input, with the term, into r's segment (my_seg) of peer q's slot, for
// every peer q, staggered (the ranks start on different peers)
template <typename T>
__device__ __noinline__ void two_shot_scatter(const u64* __restrict__ P, int rank, int world,
                                              int blocks, long long elems, long long my_seg,
                                              float term) {
  const long long nvec = elems / Vec16<T>::N;
  const uint4* in = (const uint4*)P[P_INPUT];
  for (int k = 1; k < world; ++k) {
    const int q = (rank + k) % world;
    long long a, b;
    two_shot_share(nvec, world, blocks, q, &a, &b);
    copy_vecs<T>(in, (uint4*)((T*)P[P_SLOT_PTR + q] + my_seg), a, b, true, term);
  }
}

// reduce: chunk r over every rank into the output and into r's segment of every peer's slot
template <typename T>
__device__ __noinline__ void two_shot_reduce(const u64* __restrict__ P, int rank, int world,
                                             int blocks, int slot, long long elems, float term) {
  long long a, b;
  two_shot_share(elems / Vec16<T>::N, world, blocks, rank, &a, &b);
  reduce_vec<T, true, true>(P, rank, world, slot, elems, a, b, (T*)P[P_OUTPUT], term, s_two_src,
                            s_two_scatter);
}

// gather: the peers' reduced chunks, from their segments of this rank's slot, into the output
template <typename T>
__device__ __noinline__ void two_shot_gather(const u64* __restrict__ P, int rank, int world,
                                             int blocks, int slot, long long elems) {
  const long long nvec = elems / Vec16<T>::N;
  const T* base = (const T*)P[P_SLOT_PTR + rank];
  for (int k = 1; k < world; ++k) {
    const int p = (rank + k) % world;
    long long a, b;
    two_shot_share(nvec, world, blocks, p, &a, &b);
    copy_vecs<T>((const uint4*)(base + ((long long)slot * world + p) * elems), (uint4*)P[P_OUTPUT],
                 a, b, false, 0.f);
  }
}

// ---- the pipelined push path ------------------------------------------------------------
// The input is cut into units of OSAR_PIECE_BYTES (the last one may be short) and the units into
// pieces of P_PIECE_UNITS units, numbered from 0 whatever the launch's shape. A push warp writes
// a whole piece into every peer's slot and then releases that piece's flag in each peer's memory
// (st.release.sys of the sequence: the warp's stores are ordered before it by __syncwarp, and the
// release waits for them to land); a reduce warp polls the piece's flag of every peer in its own
// memory, a local read, and reduces the piece. Pushes are dealt round-robin to every push warp of
// the launch and reduces to every reduce warp, so both sweep the pieces in the same order: the
// pieces land over the whole transfer and most of the reduce runs under it. Before, every block
// reduced only after every peer's flag, which waits for the last byte (runs 77-78: 7.7 us of
// local reduce, then a 4 us system-scope arrival, after a 44.8 us transfer at 16 MB,
// docs/BENCHMARKS.md).
// Rank q's piece flags follow the ring in its slot allocation (RankBuffers): a row per sending
// rank, a word per unit (room for pieces of one unit). A flag holds the last sequence whose piece
// landed: the guard keeps a sender from overwriting a slot the receiver has not acked, so flag >=
// seq means this collective's piece is in the slot (a later one's is in another slot). Every rank
// of a communicator must run the same P_PIECE_UNITS.
constexpr int UNIT_VECS = OSAR_PIECE_BYTES / 16;
constexpr int UNIT_PER_LANE = UNIT_VECS / 32;  // vectors of a unit per lane of a warp
static_assert(UNIT_VECS % 32 == 0, "a unit: whole vectors for every lane");

template <typename T>
__device__ __forceinline__ u64* piece_flags(const u64* __restrict__ P, int q, int world, int nslots,
                                            long long elems) {
  return (u64*)((char*)P[P_SLOT_PTR + q] + (long long)nslots * world * elems * (long long)sizeof(T));
}

// The push warps of a block: P_PUSH_WARPS of its warps (CudaCollective.Options.PUSH_WARPS), at
// least one and leaving at least one to reduce. 0 takes the serial push path instead.
__device__ __forceinline__ int pipeline_push_warps(const u64* __restrict__ P, int warps) {
  const int w = (int)P[P_PUSH_WARPS];
  return w < 1 ? 1 : (w > warps - 1 ? warps - 1 : w);
}

// The pipeline's shape for `elems` elements of T: units, the units of a piece, pieces.
template <typename T>
struct Pieces {
  long long nvec, units, per, count;
  __device__ __forceinline__ Pieces(const u64* __restrict__ P, long long elems) {
    nvec = elems / Vec16<T>::N;
    units = (nvec + UNIT_VECS - 1) / UNIT_VECS;
    per = P[P_PIECE_UNITS] < 1 ? 1 : (long long)P[P_PIECE_UNITS];
    count = (units + per - 1) / per;
  }
  // the last unit of piece j, plus one
  __device__ __forceinline__ long long end(long long j) const {
    return (j + 1) * per < units ? (j + 1) * per : units;
  }
  // Every unit but the input's last: read and written from one pointer with immediate offsets,
  // no bound per vector. The pipelined kernels sit at their 128-register cap, where ptxas
  // otherwise recomputed each vector's 64-bit index and bound for every peer (run 188), and
  // scheduled the instrumented kernel's loops apart from the plain kernel's (runs 183-186, 193).
  __device__ __forceinline__ bool whole(long long unit) const { return (unit + 1) * UNIT_VECS <= nvec; }
};

// Push warp `gw` of `nw` in the launch: pieces gw, gw + nw, ... into every peer's slot. Each lane
// loads the next unit's vectors before it stores this one's and before a piece's release, so the
// loads overlap the stores and the wait for them.
template <typename T>
__device__ __forceinline__ void push_pieces(const u64* __restrict__ P, int rank, int world,
                                            int nslots, int slot, long long elems, u64 seq,
                                            float term, long long gw, long long nw) {
  const uint4* in = (const uint4*)P[P_INPUT];
  const Pieces<T> pc(P, elems);
  const long long seg = ((long long)slot * world + rank) * elems;  // in elements
  const int lane = threadIdx.x & 31;
  u64* my_flag = nullptr;  // lane p: this rank's flag row in peer p's memory
  if (lane < world && lane != rank)
    my_flag = piece_flags<T>(P, lane, world, nslots, elems) + (long long)rank * pc.units;
  auto load = [&](long long unit, uint4* y) {
    const uint4* src = in + unit * UNIT_VECS + lane;
    if (pc.whole(unit)) {
#pragma unroll
      for (int u = 0; u < UNIT_PER_LANE; ++u) y[u] = src[32 * u];
    } else {
#pragma unroll
      for (int u = 0; u < UNIT_PER_LANE; ++u) {
        const long long i = unit * UNIT_VECS + lane + 32 * u;
        y[u] = i < pc.nvec ? src[32 * u] : make_uint4(0, 0, 0, 0);
      }
    }
  };
  uint4 x[UNIT_PER_LANE];
  long long j = gw, unit = gw * pc.per;  // this warp's piece and unit
  if (j < pc.count) load(unit, x);
  while (j < pc.count) {
#pragma unroll
    for (int u = 0; u < UNIT_PER_LANE; ++u) x[u] = with_term<T>(x[u], term);
    const bool full = pc.whole(unit);
    for (int p = 0; p < world; ++p) {
      if (p == rank) continue;
      uint4* dst = (uint4*)((T*)P[P_SLOT_PTR + p] + seg) + unit * UNIT_VECS + lane;
      if (full) {
#pragma unroll
        for (int u = 0; u < UNIT_PER_LANE; ++u) dst[32 * u] = x[u];
      } else {
#pragma unroll
        for (int u = 0; u < UNIT_PER_LANE; ++u)
          if (unit * UNIT_VECS + lane + 32 * u < pc.nvec) dst[32 * u] = x[u];
      }
    }
    long long next_j = j, next_unit = unit + 1;
    if (next_unit == pc.end(j)) {
      next_j = j + nw;
      next_unit = next_j * pc.per;
    }
    uint4 next[UNIT_PER_LANE];
    if (next_j < pc.count) load(next_unit, next);
    if (next_j != j) {  // the piece is out: its flag in every peer
      __syncwarp();
      if (my_flag) st_release_sys(my_flag + j, seq);
    }
#pragma unroll
    for (int u = 0; u < UNIT_PER_LANE; ++u) x[u] = next[u];
    j = next_j;
    unit = next_unit;
  }
}

// Reduce warp `gw` of `nw` in the launch: pieces gw, gw + nw, ... each once every peer's has
// landed (lane p polls peer p's flag), summed in rank order as reduce_vec does (the same bits as
// the other paths). False when a wait ran out its budget or a peer aborted.
template <typename T>
__device__ __forceinline__ bool reduce_pieces(const u64* __restrict__ P, int rank, int world,
                                              int nslots, int slot, long long elems, u64 seq,
                                              float term, long long gw, long long nw, u64 deadline,
                                              T* out) {
  using V = Vec16<T>;
  const Pieces<T> pc(P, elems);
  const int lane = threadIdx.x & 31;
  const bool peer = lane < world && lane != rank;
  const u64* their_flag =
      peer ? piece_flags<T>(P, rank, world, nslots, elems) + (long long)lane * pc.units : nullptr;
  for (long long j = gw; j < pc.count; j += nw) {
    Backoff bo;
    bo.cap = 256;
    for (;;) {
      // acquire: the peer's piece (released with its flag) before this warp's reads of it
      const bool landed = !peer || ld_acquire_sys(their_flag + j) >= seq;
      if (__all_sync(0xffffffffu, landed)) break;
      const bool give_up = !bo.pause(deadline) || (bo.cold() && peer_aborted(P, rank, world, lane));
      if (__any_sync(0xffffffffu, give_up)) return false;
    }
    // the vote orders no memory: the barrier puts the lanes' acquires before every lane's reads
    __syncwarp();
    // bf16's eight floats per vector: half a unit per pass, or the accumulators spill
    constexpr int SUB = V::N == 4 ? UNIT_PER_LANE : UNIT_PER_LANE / 2;
    for (long long unit = j * pc.per; unit < pc.end(j); ++unit) {
      const bool full = pc.whole(unit);
#pragma unroll
      for (int h = 0; h < UNIT_PER_LANE; h += SUB) {
        float acc[SUB][V::N];
#pragma unroll
        for (int u = 0; u < SUB; ++u)
#pragma unroll
          for (int k = 0; k < V::N; ++k) acc[u][k] = 0.f;
        for (int p = 0; p < world; ++p) {
          const uint4* src = (const uint4*)source_of<T, true>(P, rank, world, p, slot, elems) +
                             unit * UNIT_VECS + lane + 32 * h;
          uint4 x[SUB];
#pragma unroll
          for (int u = 0; u < SUB; ++u) {
            const long long i = unit * UNIT_VECS + lane + 32 * (h + u);
            x[u] = full || i < pc.nvec ? __ldcg(src + 32 * u) : make_uint4(0, 0, 0, 0);
            if (p == rank) x[u] = with_term<T>(x[u], term);
          }
#pragma unroll
          for (int u = 0; u < SUB; ++u) {
            float f[V::N];
            V::unpack(x[u], f);
#pragma unroll
            for (int k = 0; k < V::N; ++k) acc[u][k] += f[k];
          }
        }
#pragma unroll
        for (int u = 0; u < SUB; ++u) {
          const long long i = unit * UNIT_VECS + lane + 32 * (h + u);
          if (full || i < pc.nvec) ((uint4*)out)[i] = V::pack(acc[u]);
        }
      }
    }
  }
  return true;
}

// Where published word d of the counter block (from CB_OFF_COUNTERS, in the block's order: counters,
// phases, then the per-peer arrays at this world's size, then the histogram) comes from in the
// totals. -1: past the words this world publishes. Every word is a plain sum over the slices: one
// block per collective accounts it (the one that published the flag).
__device__ __forceinline__ int published_source(int d, int world, int buckets) {
  if (d < T_PEER_WAIT) return d;  // counters, then phases
  d -= T_PEER_WAIT;
  if (d < world) return T_PEER_WAIT + d;
  d -= world;
  if (d < world) return T_PEER_LAST + d;
  d -= world;
  if (d < world) return T_PEER_LATE + d;
  d -= world;
  if (d < CB_LATE_BUCKETS * world) return T_PEER_LATE_HIST + d;
  d -= CB_LATE_BUCKETS * world;
  if (d < buckets) return T_HIST + d;
  return -1;
}

__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" : : : "memory"); }

// Adds one sample record (osar_params.h) to the totals `tot` (slice 0): what the accounting warp
// of the collective's publishing block added itself before the records (runs up to 180; the
// one-shot f32 push kernel up to 187), the same words and weights. Lateness: peer p was seen arrival[p] - t3 after this rank published (both on
// that SM's clock), whatever other peers did. The wait itself, publication to the last arrival,
// is billed whole to the peer(s) that gated it: those seen in the round that ended it.
__device__ void fold_record(const u64* __restrict__ rec, int rank, int world, int buckets,
                            u64* tot) {
  const u64 w = __ldcg(rec + R_WEIGHT);
  u64 c[6];
#pragma unroll
  for (int k = 0; k < 6; ++k) c[k] = __ldcg(rec + R_CLOCK + k);
  const u64* arrival = rec + R_ARRIVAL;
  u64 latest = 0;
  int gaters = 0;
  for (int q = 0; q < world; ++q) {
    const u64 tq = q == rank ? 0 : __ldcg(arrival + q);
    if (tq > latest) {
      latest = tq;
      gaters = 1;
    } else if (q != rank && tq == latest) {
      ++gaters;
    }
  }
  const bool self_last = world == 1 || latest <= __ldcg(rec + R_FIRST_ROUND);
  for (int p = 0; p < world; ++p) {
    if (p == rank) {
      // every peer was already there at the first round
      if (self_last) red_add(tot + T_PEER_LAST + p, w);
      continue;
    }
    const u64 tp = __ldcg(arrival + p);
    const u64 late = tp > c[3] ? tp - c[3] : 0;
    if (late) red_add(tot + T_PEER_LATE + p, late * w);
    if (tp == latest && latest > c[3]) red_add(tot + T_PEER_WAIT + p, (latest - c[3]) / gaters * w);
    if (!self_last && tp == latest) red_add(tot + T_PEER_LAST + p, w);
    red_add(tot + T_PEER_LATE_HIST + p * CB_LATE_BUCKETS + late_bucket_of(late), w);
  }
#pragma unroll
  for (int k = 0; k < CB_N_PHASES; ++k) red_add(tot + T_PHASES + k, (c[k + 1] - c[k]) * w);
  // the latency, weighted as the phases are; calls and bytes are derived (publish_counter_block)
  red_add(tot + T_HIST + bucket_of(c[5] - c[0], buckets), w);
  // the clock sample: the whole collective, weighted as the phases
  red_add(tot + CB_C_CLOCK_NS, (__ldcg(rec + R_G5) - __ldcg(rec + R_G0)) * w);
  red_add(tot + CB_C_CLOCK_CYCLES, (__ldcg(rec + R_T5_RATE) - c[0]) * w);
}

// Folds the records of the collectives completed since the last fold into slice 0, a thread per
// record, then marks them folded. No collective of the rank runs meanwhile (a kernel of its own on
// the rank's stream), so the records and S_NEXT_SEQ hold still.
__device__ void fold_records(const u64* __restrict__ P, u64* st) {
  const int t = threadIdx.x;
  const int rank = (int)P[P_RANK];
  const int world = (int)P[P_WORLD];
  const int buckets = (int)P[P_HIST_BUCKETS];
  const long long blocks = (long long)P[P_WORK_BLOCKS];
  const u64* records = st + S_TOT + blocks * T_STRIDE;
  const u64 folded = ld_volatile(st + S_FOLDED);
  const u64 completed = ld_volatile(st + S_NEXT_SEQ) - 1;
  // every record's sequence loaded before any is tested: one round trip, not one per record
  // (run 70's ring billed record after record: ~8 us per publication)
  constexpr int PER_THREAD = OSAR_RECORDS / PUBLISH_THREADS;
  u64 seq[PER_THREAD];
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j)
    seq[j] = __ldcg(records + (long long)(t + PUBLISH_THREADS * j) * R_WORDS + R_SEQ);
#pragma unroll 1
  for (int j = 0; j < PER_THREAD; ++j)
    if (seq[j] > folded && seq[j] <= completed)
      fold_record(records + (long long)(t + PUBLISH_THREADS * j) * R_WORDS, rank, world, buckets,
                  st + S_TOT);
  // every thread's reductions performed before any thread's loads of the totals
  __threadfence();
  __syncthreads();
  if (t == 0) st_volatile(st + S_FOLDED, completed);
}

// Copies the totals into the counter block under its sequence lock. One block of
// PUBLISH_THREADS, in a kernel of its own: no collective of this rank runs meanwhile, so the
// totals hold still. Each thread sums its words over the data blocks' slices, loading every one
// before the first store (a few round trips to device memory, not one per word), and only the
// words this world publishes (a slice has room for 32 peers). The lock value is mirrored in
// device memory, so the only PCIe traffic is posted writes and two fences.
constexpr int PUB_PER_THREAD = (T_WORDS + PUBLISH_THREADS - 1) / PUBLISH_THREADS;
__device__ void publish_counter_block(const u64* __restrict__ P, u64* st) {
  fold_records(P, st);
  const int t = threadIdx.x;
  const int world = (int)P[P_WORLD];
  const int buckets = (int)P[P_HIST_BUCKETS];
  const int blocks = (int)P[P_WORK_BLOCKS];
  const u64* tot = st + S_TOT;
  u64* cb = (u64*)P[P_COUNTER_BLOCK];
  u64* lock = cb + CB_OFF_SEQLOCK / 8;
  int src[PUB_PER_THREAD];
  u64 v[PUB_PER_THREAD];
#pragma unroll
  for (int j = 0; j < PUB_PER_THREAD; ++j) {
    src[j] = published_source(t + PUBLISH_THREADS * j, world, buckets);
    v[j] = 0;
  }
  // 16 slices' loads at a time, all issued before any is summed and with no branch between
  // them: one round trip per 16 data blocks (a guarded load per slice had the loads wait for
  // one another, ~58 us for 128 blocks: run 24)
#pragma unroll
  for (int j = 0; j < PUB_PER_THREAD; ++j) {
    if (src[j] < 0) continue;
    const u64* q = tot + src[j];
    u64 sum = 0;
    int b = 0;
    for (; b + 16 <= blocks; b += 16) {
      u64 x[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) x[u] = __ldcg(q + (long long)(b + u) * T_STRIDE);
#pragma unroll
      for (int u = 0; u < 16; ++u) sum += x[u];
    }
    for (; b < blocks; ++b) sum += __ldcg(q + (long long)b * T_STRIDE);
    v[j] = sum;
  }
  // Calls are not added up in the kernels: every collective that completed advanced S_NEXT_SEQ
  // (from 1), and the one that aborted, if any, left it at its own sequence. Nor are bytes: every
  // completed collective moved P_BYTES, so they are exact here, where a sampled count would make a
  // consumer's bytes per call wander with the sample (a baseline keyed by message size would
  // start over every window; the kernels' byte adds went in runs 164-166).
  {
    const u64 completed = ld_volatile(st + S_NEXT_SEQ) - 1;
    const u64 calls = completed + (ld_volatile(st + S_ABORT) != 0 ? 1 : 0);
    const u64 bytes = completed * P[P_BYTES];
#pragma unroll
    for (int j = 0; j < PUB_PER_THREAD; ++j) {
      if (src[j] == CB_C_CALLS) v[j] = calls;
      if (src[j] == CB_C_BYTES) v[j] = bytes;
    }
  }
  const u64 s = ld_volatile(st + S_LOCK);
  const u64 cps = ld_volatile(st + S_CPS);
  if (t == 0) st_volatile(lock, s + 1);
  __syncthreads();
  // the odd lock value before any counter: the barrier carried thread 0's store to every
  // thread, and each one's fence orders it before that thread's stores below (cumulativity)
  fence_acq_rel_sys();
  if (t == 0) cb[CB_OFF_CPS / 8] = cps;
#pragma unroll
  for (int j = 0; j < PUB_PER_THREAD; ++j)
    if (src[j] >= 0)
      cb[CB_OFF_COUNTERS / 8 + t + PUBLISH_THREADS * j] = v[j];
  // every thread's counters before the even lock value
  fence_acq_rel_sys();
  __syncthreads();
  if (t == 0) {
    st_volatile(lock, s + 2);
    st_volatile(st + S_LOCK, s + 2);
  }
}

// The key of the sampling hash (CudaCollective.Options.SAMPLE_KEY): fault_mix's index argument,
// far from any fault table's.
#define SAMPLE_KEY 1000003ull

// The block's shared state, at file scope so that both bodies of an instrumented kernel (osar
// below) use the same words.
__shared__ u64 s_seq;
__shared__ u64 s_ack_seen;
__shared__ int s_abort;
__shared__ int s_publisher;                // this block published the flag: it accounts
__shared__ int s_sampled;                  // this collective's phases and peers are accounted
__shared__ u64 s_arrival[OSAR_MAX_RANKS];
__shared__ u64 s_first_round;
__shared__ u64 s_delay[F_ALL];             // injected delays by F_ARRIVAL..F_ACK
__shared__ u64 s_link[OSAR_MAX_RANKS];     // injected delay of each peer's flag
// Thread 0's clocks: t0..t5 (the phase boundaries), g0 and g5 (%globaltimer at t0 and after
// t5) and the clock after g5 (for the rate), for the accounting warp's sample record. The push
// kernels write each clock here as thread 0 takes it and never hold them in registers: every thread of the
// block would hold them across the data path, where those kernels are at their 128-register
// cap (__launch_bounds__(512, 1)); so held, they cost f32 at 16 MB +0.89-1.00 us against
// +0.55-0.70, and 39 us at 8 ranks (run 111, docs/BENCHMARKS.md). The pull kernels (68-96
// registers) keep them in registers: there shared memory cost +70 ns at 4 KB and up to +300 ns
// at 8 ranks (same run), the branch and store on thread 0's path at every phase boundary.
__shared__ u64 s_clock[9];

// The sampled collective's record (osar_params.h), by the accounting warp of the block that
// published the flag: thread 0's clocks and the arrivals, stored as they are (osar_publish does
// the arithmetic). The stores are fire-and-forget, a lane's two at most, and nothing in this
// launch reads them. Out of line, so that the kernels' data paths are scheduled as if it were not
// there (inlined, the one-shot f32 push kernel ran ~3 us slower per collective at 16 MB: run 183).
template <bool PUSH>
__device__ __noinline__ void store_record(const u64* __restrict__ P, u64* st, int blocks, u64 seq,
                                          int rank, int world) {
  const int lane = threadIdx.x & 31;
  u64* rec = st + S_TOT + (long long)blocks * T_STRIDE + (long long)(seq % OSAR_RECORDS) * R_WORDS;
  // The end of the rate's interval: in the pull kernels read here, by lane 0 (the hand-off
  // leaves it to this warp), in the push kernels by thread 0 before the hand-off. Either way the
  // cycles' end is read once the timer's value is back.
  u64 g5 = 0, t5_rate = 0;
  if (PUSH) {
    g5 = s_clock[7];
    t5_rate = s_clock[8];
  } else {
    if (lane == 0) {
      g5 = globaltimer();
      t5_rate = g5 != 0 ? clock64() : s_clock[5];
    }
    g5 = __shfl_sync(0xffffffffu, g5, 0);
    t5_rate = __shfl_sync(0xffffffffu, t5_rate, 0);
  }
  u64 word = 0;
  if (lane == R_SEQ) word = seq;
  else if (lane == R_WEIGHT) word = P[P_SAMPLE_MASK] + 1;  // the collectives this one stands for
  else if (lane < R_CLOCK + 6) word = s_clock[lane - R_CLOCK];
  else if (lane == R_G0) word = s_clock[6];
  else if (lane == R_G5) word = g5;
  else if (lane == R_T5_RATE) word = t5_rate;
  else if (lane == R_FIRST_ROUND) word = s_first_round;
  if (lane <= R_FIRST_ROUND) rec[lane] = word;
  for (int p = lane; p < world; p += 32) rec[R_ARRIVAL + p] = p == rank ? 0 : s_arrival[p];
}

// Whether an instrumented kernel holds two bodies (osar, below) or one that tests the sample at
// each phase. Measured, not derived: ptxas schedules the one-shot f32 push kernel's pipelined loops
// worse in the two-body kernel (+1.7-2.0 us at 16 MB in every collective, sampled or not, against
// +0.15-0.40 us with one body; bf16 the other way round, +0.05-0.26 us against +0.67-0.74: runs
// 167-169; with the sample records, +2.7 us, run 185; with run 189's whole units two bodies
// spill to local memory in its SASS, not run). The f32 pull kernel had one body from run
// 174 to 180 (its plain body then ran slower at 8 ranks than the plain kernel itself, +93..+138
// ns at 4-256 KB); with the sample records two bodies are at parity or faster (-98..-62 ns at 2
// and 8 ranks, 4-256 KB, against one body's +8..+272: runs 184-185, docs/BENCHMARKS.md). bf16
// and both two-shot kernels are at parity with two. What the one body's unsampled collective pays
// (f32 push, 8 MB: ~+140 ns over the plain code in the same graph) is ptxas's schedule of a kernel
// holding both the sampled paths and thread 0's phase clocks: without both it runs as the plain
// kernel, without either one it does not, and gating the clocks on the sample gains nothing
// (runs 202-204, diagnostics that never sample).
template <typename T, bool PUSH, bool TWO>
__host__ __device__ constexpr bool two_bodies() {
  return TWO || !PUSH || sizeof(T) != 4;
}

// One collective of one rank, after the launch's entry (osar, below). ACCOUNT: this collective
// may be accounted (phases, per-peer shares, clock sample, latency). In a two-body kernel only the
// sampled collectives run the body with ACCOUNT true, the others run it with ACCOUNT false, the
// plain kernel's code; a one-body kernel runs every collective with ACCOUNT true and tests the
// sample (s_sampled) where it accounts.
template <typename T, bool ACCOUNT, bool PUSH, bool TWO>
__device__ __forceinline__ void osar_collective(const u64* __restrict__ P, int rank, int world,
                                                int nslots, long long elems, int blocks,
                                                u64* st) {
  constexpr bool INSTR = ACCOUNT;
  // One block per collective accounts it: the one whose thread 0 published the rank's flag (the
  // last to finish its copy), whose phases are the rank's critical path. Its last warp stores the
  // sample record after the reduce, beside thread 0's count, ack and release that complete the
  // collective and never ahead of them on any thread's path (in the pull kernels thread 0 never
  // waits for it either); osar_publish bills it later. The other blocks run the plain kernel's path
  // but for the phase clocks. The clocks are thread 0's (the injected delays are on
  // its path), handed to the accounting warp in shared memory across a named barrier of the two
  // warps, in that block only: a warp that waits at a barrier can read its clock before the
  // barrier lets it go (run 23: slow-publish seen as 0.13 us; run 50, where the accounting warp
  // read the reduce's end itself: a clock rate 5-7 % low), while thread 0 ends every phase.
  const int accounting_warp = blockDim.x >= 64 ? (int)(blockDim.x >> 5) - 1 : 0;  // a whole warp
  const bool accountant = INSTR && (int)(threadIdx.x >> 5) == accounting_warp;
  const u64 seq = s_seq;
  // In a two-body kernel the accounting body runs the sampled collectives only. In the one-body
  // kernel s_sampled is read from shared memory at each use, not held in a register for the whole
  // kernel: held, it cost the push path 5-7 us per collective at 16 MB (run 82, docs/BENCHMARKS.md);
  // on today's kernel it gains nothing either (run 206).
#define sampled (ACCOUNT && (two_bodies<T, PUSH, TWO>() || s_sampled))
  // the end of a phase: thread 0's clock tk, in shared memory in the push kernels (s_clock above)
#define MARK_CLOCK(k)                                            \
  do {                                                          \
    if (INSTR && PUSH) {                                        \
      if (threadIdx.x == 0) s_clock[k] = clock64();             \
    } else if (INSTR) {                                         \
      t##k = clock64();                                         \
    }                                                           \
  } while (0)

  const int slot = (int)(seq % (u64)nslots);
  if (threadIdx.x == 0) {
    fault_delays(P, seq, rank, world, s_delay, s_link);
    spin_ns(s_delay[F_ARRIVAL]);
  }
  __syncthreads();

  const u64 deadline = globaltimer() + P[P_BUDGET_NS];
  // Whole 16-byte vectors when the elements fill them: each block's chunk is then a whole number
  // of vectors too, so every vector lies in one block's chunk.
  const bool vec = elems % Vec16<T>::N == 0;
  long long chunk = (elems + blocks - 1) / blocks;
  if (vec) chunk = (chunk + Vec16<T>::N - 1) / Vec16<T>::N * Vec16<T>::N;
  const long long lo = (long long)blockIdx.x * chunk < elems ? (long long)blockIdx.x * chunk : elems;
  const long long hi = lo + chunk < elems ? lo + chunk : elems;
  // t0 and t5 time every instrumented collective (its latency histogram); t1-t4 are read always
  // (a clock read is cheap; skipping them in unsampled collectives measured no faster, run 82) and
  // used in the sampled ones
  u64 t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0;
  MARK_CLOCK(0);
  // The clock's own rate: the accounting block times the whole collective on %globaltimer too,
  // so consumers convert cycles with the rate of the very intervals they measured, whatever the
  // SM clock did. In a sampled collective every block's thread 0 reads it: which block accounts is
  // known only later.
  const u64 g0 = !PUSH && sampled && threadIdx.x == 0 ? globaltimer() : 0;
  if (PUSH && sampled && threadIdx.x == 0) s_clock[6] = globaltimer();

  // ---- guard: the slot's previous user (seq - nslots) was acked by every peer ------------
  // Warp 0, one lane per peer as in wait: one thread would issue the acquire loads one after
  // another (an acquire orders every later load), lanes issue them side by side. A peer's ack is
  // a read across NVLink (or PCIe), about a microsecond; the least ack this rank's last poll
  // acquired (S_ACK_SEEN, in its own memory) usually covers the next few collectives' guards, and
  // the acquire that saw it is ordered before this launch by the launches' order on the stream.
  // An injected slow-ack is timed against each ack's time, so it always polls.
  if (threadIdx.x < 32 && seq > (u64)nslots &&
      (s_delay[F_ACK] != 0 || s_ack_seen < seq - (u64)nslots)) {
    const int lane = threadIdx.x;
    const bool peer = lane < world && lane != rank;
    const u64 need = seq - nslots;
    const u64 ack_delay = s_delay[F_ACK];
    // in registers: every acquire below empties this SM's L1, where P would otherwise be cached
    const u64* ack = peer ? (const u64*)P[P_ACK_PTR + lane] : nullptr;
    const u64* acktime = peer ? (const u64*)P[P_ACKTIME_PTR + lane] + need % OSAR_ACK_HISTORY : nullptr;
    Backoff bo;
    u64 seen = ~0ull;  // the peer's ack as last read; none for a lane without a peer
    for (;;) {
      // acquire: the peer's reads of this rank's slot are done before the copy below overwrites it
      if (peer) seen = ld_acquire_sys(ack);
      const bool ok = !peer || (seen >= need &&
                                (!ack_delay || ld_acquire_sys(acktime) + ack_delay <= globaltimer()));
      if (__all_sync(0xffffffffu, ok)) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
          const u64 other = __shfl_xor_sync(0xffffffffu, seen, o);
          seen = other < seen ? other : seen;
        }
        if (lane == 0) st_volatile(st + S_ACK_SEEN, seen);  // read by later launches only
        break;
      }
      const bool give_up = !bo.pause(deadline) || (bo.cold() && peer_aborted(P, rank, world, lane));
      if (__any_sync(0xffffffffu, give_up)) {
        if (lane == 0) s_abort = 1;
        break;
      }
    }
  }
  __syncthreads();
  MARK_CLOCK(1);

  // The slot gets the input plus a term of the sequence (CollectiveConfig.inputValue), so every
  // collective reduces different data and the host's sum check, which knows the sequence, fails
  // on a slot or an output left over from another collective.
  // (mine and in: the serial paths' copy. Declared there instead, they changed the pull
  // kernels' SASS, which would need another GPU run to keep.)
  T* mine = (T*)P[P_SLOT_PTR + rank] + (long long)slot * elems;
  const T* in = (const T*)P[P_INPUT];
  const float term = (float)(seq % P[P_SEQ_PERIOD]);
  // ---- publish: the last block to finish copying publishes the rank's flag -----------------
  // Thread 0 of every block. `system_arrival`: the block's copy wrote to peers' memory and was not
  // released yet (the serial push path). `local_wait`: a block that did not publish waits until
  // the flag is out (the serial paths, which poll the peers next).
  auto publish = [&](bool system_arrival, bool local_wait) {
    // read before the atom, whose acquire empties L1: the last block's path to its flag stays short
    u64* flag = (u64*)P[P_FLAG_PTR + rank];
    u64* pubtime = (u64*)P[P_PUBTIME_PTR + rank] + slot;
    const u64 publish_delay = s_delay[F_PUBLISH];
    const u64 before = system_arrival ? atom_add_acq_rel_sys(st + S_ARRIVED, 1ull)
                                      : atom_add_acq_rel_gpu(st + S_ARRIVED, 1ull);
    if (before + 1 == seq * (u64)blocks) {
      spin_ns(publish_delay);
      st_relaxed_sys(pubtime, globaltimer());
      // The release store orders the publish time and, being cumulative, every block's slot data
      // (released to the count this block acquired) before the flag.
      st_release_sys(flag, seq);
      s_publisher = 1;
    } else if (local_wait) {
      // The other blocks wait until the flag is out before they poll the peers' flags. Not for
      // correctness (a block reduces its own chunk of this rank's slot, which its own threads
      // copied), but measured: polling the peers at once was ~0.3 us slower per collective at
      // 4 KB (run 50, `local-flag-wait`, docs/BENCHMARKS.md). Local completion only: relaxed.
      Backoff bo;
      while (ld_relaxed_sys(flag) < seq) {
        if (!bo.pause(deadline)) { s_abort = 1; break; }
      }
    }
  };

  // ---- wait: warp 0 polls every peer; each lane owns peers lane, lane+32, ... ---------------
  auto wait_peers = [&]() {
    const int lane = threadIdx.x;
    const bool clocks = sampled && s_publisher;  // the accounting block's arrivals only
    unsigned pending = 0;  // bit k: peer lane + 32k not yet seen
    for (int k = 0; lane + 32 * k < world; ++k)
      if (lane + 32 * k != rank) pending |= 1u << k;
    // in registers: every acquire below empties this SM's L1, where P would otherwise be cached
    const u64* flag_of[OSAR_MAX_RANKS / 32];
    const u64* pubtime_of[OSAR_MAX_RANKS / 32];
    u64 link_of[OSAR_MAX_RANKS / 32];
    for (int k = 0; k < OSAR_MAX_RANKS / 32; ++k) {
      const int p = lane + 32 * k;
      flag_of[k] = p < world ? (const u64*)P[P_FLAG_PTR + p] : nullptr;
      pubtime_of[k] = p < world ? (const u64*)P[P_PUBTIME_PTR + p] + slot : nullptr;
      link_of[k] = p < world ? s_link[p] : 0;
    }
    Backoff bo;
    for (;;) {
      // one timestamp per poll round, taken by lane 0: peers seen in one round are tied
      u64 now = 0;
      if (clocks) {
        now = __shfl_sync(0xffffffffu, clock64(), 0);
        if (lane == 0 && bo.spins == 0) s_first_round = now;
      }
      u64 gt = globaltimer();
      unsigned left = pending;
      while (left) {
        int k = __ffs(left) - 1;
        left &= left - 1;
        int p = lane + 32 * k;
        // acquire: the peer's slot data (released with its flag) before this block's reads of it
        if (ld_acquire_sys(flag_of[k]) >= seq) {
          if (link_of[k] == 0 || ld_acquire_sys(pubtime_of[k]) + link_of[k] <= gt) {
            pending &= ~(1u << k);
            if (clocks) s_arrival[p] = now;
          }
        }
      }
      if (__all_sync(0xffffffffu, pending == 0)) break;
      const bool give_up = !bo.pause(deadline) || (bo.cold() && peer_aborted(P, rank, world, lane));
      if (__any_sync(0xffffffffu, give_up)) {
        if (lane == 0) s_abort = 1;
        break;
      }
    }
  };

  if (TWO) {
    // ---- two-shot: reduce-scatter, then all-gather (whole vectors only: the host checks) ------
    // Rank r owns chunk r of the vectors (world chunks in rank order, the last ones shorter or
    // empty). copy: the blocks push chunk q of the input, with the term, into r's segment of
    // peer q's slot, for every peer q. publish and wait: the serial paths' (the rank's flag; the
    // peers' flags mean their pushes of chunk r landed), so the phases, the per-peer shares and
    // the injected faults mean what they mean there. reduce: chunk r summed over every rank in
    // rank order (reduce_vec: the same bits as the one-shot paths) into the output and pushed
    // into r's segment of every peer's slot (the chunk-r part of it, unused by the copy); once
    // every block's pushes are out (S_GATHERED) the last block releases r's gather flag in each
    // peer's memory (word 0 of r's row of piece flags; one lane per peer, so the releases' waits
    // for the pushes overlap instead of queueing); then every block waits for the peers'
    // gather flags in its own memory and copies their reduced chunks from its slot into the
    // output. The second exchange is billed to reduce, not to a peer: a rank late before its
    // flag is billed in wait as on every path, one late only between the two shows as reduce.
    // Per rank the link carries 2 (world - 1) / world of the bytes a one-shot push sends
    // world - 1 times: at two ranks the same bytes plus a second exchange, from four far fewer.
    // The bytes move in two_shot_scatter, two_shot_reduce and two_shot_gather (out of line, above).
    const long long my_seg = ((long long)slot * world + rank) * elems;  // r's segment, in elements
    if (threadIdx.x < world) {  // the reduce's tables (above), published by the barrier after the copy
      const int p = threadIdx.x;
      s_two_src[p] = (const uint4*)source_of<T, true>(P, rank, world, p, slot, elems);
      s_two_scatter[p] = (uint4*)((T*)P[P_SLOT_PTR + p] + my_seg);
    }
    if (!s_abort) {
      two_shot_scatter<T>(P, rank, world, blocks, elems, my_seg, term);
      if (threadIdx.x == 0) spin_ns(s_delay[F_COPY]);  // injected slow-copy, in every block
    }
    __syncthreads();
    MARK_CLOCK(2);
    if (threadIdx.x == 0 && !s_abort) publish(true, true);
    __syncthreads();
    MARK_CLOCK(3);
    if (threadIdx.x < 32 && !s_abort) wait_peers();
    // warp 0's acquires before every thread's reads of the peers' pushes, as on the serial paths
    __syncthreads();
    MARK_CLOCK(4);
    if (!s_abort) two_shot_reduce<T>(P, rank, world, blocks, slot, elems, term);
    __syncthreads();
    const Pieces<T> pc(P, elems);
    if (threadIdx.x < 32 && !s_abort) {
      const int lane = threadIdx.x;
      const bool peer = lane < world && lane != rank;
      // As publish: the system-scope arrival carries every block's pushes to the last block, whose
      // lanes' release stores are cumulative over them: the warp barrier orders lane 0's acquire
      // before every lane's release (the shuffle only hands over the count).
      u64 before = 0;
      if (lane == 0) before = atom_add_acq_rel_sys(st + S_GATHERED, 1ull);
      before = __shfl_sync(0xffffffffu, before, 0);
      __syncwarp();
      if (before + 1 == seq * (u64)blocks && peer)
        st_release_sys(piece_flags<T>(P, lane, world, nslots, elems) + (long long)rank * pc.units, seq);
      const u64* theirs =
          peer ? piece_flags<T>(P, rank, world, nslots, elems) + (long long)lane * pc.units : nullptr;
      Backoff bo;
      bo.cap = 256;  // the collective's tail, as a piece's wait
      for (;;) {
        // acquire: the peer's reduced chunk (released with its gather flag) before the reads below
        const bool landed = !peer || ld_acquire_sys(theirs) >= seq;
        if (__all_sync(0xffffffffu, landed)) break;
        const bool give_up = !bo.pause(deadline) || (bo.cold() && peer_aborted(P, rank, world, lane));
        if (__any_sync(0xffffffffu, give_up)) {
          if (lane == 0) s_abort = 1;
          break;
        }
      }
    }
    __syncthreads();
    if (!s_abort) two_shot_gather<T>(P, rank, world, blocks, slot, elems);
  } else if (PUSH && vec && blockDim.x >= 64 && P[P_PUSH_WARPS] != 0) {
    // ---- the pipelined push path: copy and reduce at once, piece by piece -------------------
    // The first push_warps warps of every block push pieces of the input into the peers' slots,
    // each piece released on its own piece flag; the other warps reduce pieces as the peers'
    // land (push_pieces, reduce_pieces). The rank's flag still goes out once the block's pushes
    // are out, and the publishing block's warp 0 still waits for every peer's: the phases, the
    // per-peer shares and the injected faults mean what they mean on the other paths, but the
    // data no longer waits for the flags, so the reduce overlaps the transfer. Phases here:
    // copy = this block's pushes, publish and wait as elsewhere, reduce = what is left of the
    // reduce once the last peer's flag was seen (the part that did not overlap).
    const int warp = threadIdx.x >> 5;
    const int push_warps = pipeline_push_warps(P, blockDim.x >> 5);
    if (warp < push_warps) {
      if (!s_abort)
        push_pieces<T>(P, rank, world, nslots, slot, elems, seq, term,
                       (long long)blockIdx.x * push_warps + warp, (long long)blocks * push_warps);
      // the block's pushes are out (every piece released on its own); the reduce warps go on
      asm volatile("bar.sync 2, %0;" : : "r"(push_warps * 32) : "memory");
      if (threadIdx.x == 0 && !s_abort) spin_ns(s_delay[F_COPY]);  // injected slow-copy
      MARK_CLOCK(2);
      if (threadIdx.x == 0 && !s_abort) publish(false, false);
      __syncwarp();
      MARK_CLOCK(3);
      // The publishing block alone waits for the peers' flags: every block's data waited for its
      // pieces, and the rank's ack, which waits for every block, comes after this wait.
      if (warp == 0 && !*(volatile int*)&s_abort && *(volatile int*)&s_publisher) wait_peers();
      MARK_CLOCK(4);
    } else if (!s_abort) {
      const int reduce_warps = (int)(blockDim.x >> 5) - push_warps;
      if (!reduce_pieces<T>(P, rank, world, nslots, slot, elems, seq, term,
                            (long long)blockIdx.x * reduce_warps + warp - push_warps,
                            (long long)blocks * reduce_warps, deadline, (T*)P[P_OUTPUT]))
        s_abort = 1;
    }
  } else {
    // ---- the serial paths: copy, publish, wait, then reduce ------------------------------
    if (!s_abort) {
      if (PUSH) {
        push_input<T>(P, rank, world, slot, elems, lo, hi, vec, term);
      } else if (vec) {
        using V = Vec16<T>;
        for (long long v = lo / V::N + threadIdx.x; v < hi / V::N; v += blockDim.x) {
          float f[V::N];
          V::unpack(((const uint4*)in)[v], f);
#pragma unroll
          for (int k = 0; k < V::N; ++k) f[k] += term;
          ((uint4*)mine)[v] = V::pack(f);
        }
      } else {
        for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) mine[i] = from_f<T>(to_f<T>(in[i]) + term);
      }
      if (threadIdx.x == 0) spin_ns(s_delay[F_COPY]);  // injected slow-copy, in every block
    }
    __syncthreads();
    MARK_CLOCK(2);
    if (threadIdx.x == 0 && !s_abort) publish(PUSH, true);
    __syncthreads();
    MARK_CLOCK(3);
    if (threadIdx.x < 32 && !s_abort) wait_peers();
    // The flags were acquired by warp 0; the barrier orders those acquires before every thread's
    // reads of the peers' slots (so no fence is needed here). The reads go past this SM's L1
    // (__ldcg), which may still hold the slot from nslots collectives ago.
    __syncthreads();
    MARK_CLOCK(4);

    // ---- reduce -----------------------------------------------------------------------------
    if (!s_abort && vec) {
      reduce_vec<T, PUSH>(P, rank, world, slot, elems, lo / Vec16<T>::N, hi / Vec16<T>::N,
                          (T*)P[P_OUTPUT], term);
    } else if (!s_abort) {
      T* out = (T*)P[P_OUTPUT];
      for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        float acc = 0.f;
        for (int p = 0; p < world; ++p) {
          const T x = __ldcg(source_of<T, PUSH>(P, rank, world, p, slot, elems) + i);
          acc += to_f<T>(PUSH && p == rank ? from_f<T>(to_f<T>(x) + term) : x);
        }
        out[i] = from_f<T>(acc);
      }
    }
  }
  __syncthreads();
  MARK_CLOCK(5);
  // The accounting block only: thread 0's clocks to its accounting warp across a named barrier of
  // warp 0 and that warp; the other warps go on to their end.
  if (!PUSH && sampled && s_publisher) {
    // The pull kernels: thread 0 leaves its clocks and goes on to complete the collective
    // (bar.arrive: it never waits for the accounting warp, whose bar.sync makes the stores
    // visible to it: the PTX ISA's producer-consumer use of the two); the accounting warp reads
    // the end of the clock sample itself. Thread 0 reading the timer and waiting at a barrier
    // with that warp, then adding to the totals after the ack, cost ~170 ns per sampled
    // collective at 4 KB (run 147: with every collective sampled, instrumented - plain
    // +216 ns, +44 without the accounting warp's work, +59 without the hand-off); run 148: this
    // hand-off with the bytes and latency added by the accounting warp (below), +155 at 4 KB,
    // +22..+33 at 256 KB - 1 MB against the kernel before's +232, +86..+111.
    if (threadIdx.x == 0) {
      s_clock[0] = t0; s_clock[1] = t1; s_clock[2] = t2; s_clock[3] = t3; s_clock[4] = t4; s_clock[5] = t5;
      s_clock[6] = g0;
    }
    if (accounting_warp == 0) {
      __syncwarp();
    } else if (threadIdx.x < 32) {
      asm volatile("bar.arrive 1, 64;" : : : "memory");
    } else if (accountant) {
      asm volatile("bar.sync 1, 64;" : : : "memory");
    }
  } else if (PUSH && sampled && s_publisher) {
    if (threadIdx.x == 0) {
      const u64 g5 = globaltimer();
      // The rate's cycles end once the timer's value is back: a clock read under a branch on g5
      // is issued only then. t5 itself, the reduce's end, can be hundreds of ns before the timer
      // samples (a stall between the two reads that grows with the blocks in flight: run 68, the
      // rate read 0.95-0.99 of the calibration with t5, 1.001-1.002 with this read).
      const u64 t5_rate = g5 != 0 ? clock64() : s_clock[5];
      s_clock[7] = g5; s_clock[8] = t5_rate;
    }
    if (accounting_warp == 0) {
      __syncwarp();
    } else if (threadIdx.x < 32 || accountant) {
      asm volatile("bar.sync 1, 64;" : : : "memory");
    }
  }

  // ---- finish: the data path first, then the sample's record, which needs no fence ---------
  // The totals are read only by osar_publish, after this launch has completed, so the timeout's
  // add below is fire-and-forget (red_add): nothing in this launch waits for it. Its call is not
  // added: osar_publish derives calls from the sequence and the abort word (publish_counter_block;
  // the push kernels' unread add here went in run 201, their SASS otherwise the same).
  u64* tot = st + S_TOT + (long long)blockIdx.x * T_STRIDE;  // this block's slice
  if (threadIdx.x == 0) {
    if (s_abort) {
      // Count the timeout once per collective and tell the host; the data path is abandoned.
      // A wait cut short because a peer had aborted counts too: the communicator is broken, and
      // a wait on that peer, this one or the next, would only run out its budget.
      if (atomicCAS(st + S_ABORT, 0ull, seq) == 0ull) {
        red_add(tot + CB_C_TIMEOUTS, 1ull);
        st_relaxed_sys((u64*)P[P_ABORT_PTR + rank], seq);  // for the peers' waits
      }
    } else {
      u64* ack = (u64*)P[P_ACK_PTR + rank];  // before the atom, as for the flag
      u64* acktime = (u64*)P[P_ACKTIME_PTR + rank] + seq % OSAR_ACK_HISTORY;
      // release: this block's reads of the peers' slots are done before its count
      if (atom_add_acq_rel_gpu(st + S_FINISHED, 1ull) + 1 == seq * (u64)blocks) {
        // last block: every block has read every peer's slot, so ack it. As for the flag, the
        // release store replaces __threadfence_system() + a volatile store.
        st_relaxed_sys(acktime, globaltimer());
        st_release_sys(ack, seq);
        // read by the next launch only, after this one completed: no fence needed
        st_volatile(st + S_NEXT_SEQ, seq + 1);
      }
    }
  }
  // The sample: its record, which osar_publish bills (fold_record), in every instrumented kernel.
  // The one-shot f32 push kernel billed it inline here up to run 187: with a record store its
  // pipelined loops were scheduled 1.5-3 us slower at 16 MB (runs 183-186), until their whole
  // units took one pointer and no bound per vector (Pieces::whole; runs 188-191).
  if (accountant && sampled && s_publisher && !s_abort) store_record<PUSH>(P, st, blocks, seq, rank, world);
}

#undef sampled
#undef MARK_CLOCK

// A launch: one collective of one rank. The instrumented kernels (INSTR) but the one-shot f32
// ones (two_bodies, above) hold two bodies and take one per collective, the same in every block:
// the plain kernel's for the collectives the sample leaves out, the accounting one for the sampled
// ones. An unsampled collective so runs the plain kernel's very code but for this branch: a body
// that tested `sampled` at every phase was scheduled differently by ptxas wherever the test sat
// (+0.3-0.9 us at 16 MB whether or not the collective was sampled: runs 107, 109, 140-158; at
// 4 KB - 1 MB the two bodies took bf16 from +40..+110 ns to parity: runs 166-167).
template <typename T, bool INSTR, bool PUSH, bool TWO = false>
__device__ void osar(const u64* __restrict__ P) {
  static_assert(!TWO || PUSH, "two-shot uses the push path's slots (a segment per rank)");
  const int rank = (int)P[P_RANK];
  const int world = (int)P[P_WORLD];
  const int nslots = (int)P[P_SLOTS];
  const long long elems = (long long)P[P_ELEMS];
  const int blocks = (int)P[P_WORK_BLOCKS];
  u64* st = (u64*)P[P_STATE];
  if (threadIdx.x == 0) {
    s_seq = ld_volatile(st + S_NEXT_SEQ);
    s_abort = ld_volatile(st + S_ABORT) != 0;
    s_ack_seen = ld_volatile(st + S_ACK_SEEN);
    s_publisher = 0;
    const u64 mask = INSTR ? P[P_SAMPLE_MASK] : 0;
    s_sampled = INSTR && (fault_mix(s_seq, SAMPLE_KEY) & mask) == 0;
  }
  if (threadIdx.x < OSAR_MAX_RANKS) s_link[threadIdx.x] = 0;
  if (threadIdx.x < F_ALL) s_delay[threadIdx.x] = 0;
  __syncthreads();
  // An earlier collective of this rank aborted: return before the ring, the flags, the acks or
  // the counters are touched. The abort was counted once, by the launch that raised it.
  if (s_abort) return;
  if (INSTR && (s_sampled || !two_bodies<T, PUSH, TWO>()))
    osar_collective<T, true, PUSH, TWO>(P, rank, world, nslots, elems, blocks, st);
  else
    osar_collective<T, false, PUSH, TWO>(P, rank, world, nslots, elems, blocks, st);
}

extern "C" __global__ void __launch_bounds__(512, 1) osar_f32(const u64* P) { osar<float, true, false>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_plain(const u64* P) { osar<float, false, false>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16(const u64* P) { osar<__nv_bfloat16, true, false>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_plain(const u64* P) { osar<__nv_bfloat16, false, false>(P); }
// The push path (a slot of world segments: RankBuffers allocates it so)
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_push(const u64* P) { osar<float, true, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_push_plain(const u64* P) { osar<float, false, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_push(const u64* P) { osar<__nv_bfloat16, true, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_push_plain(const u64* P) { osar<__nv_bfloat16, false, true>(P); }
// Two-shot (the push path's slots; whole vectors)
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_two(const u64* P) { osar<float, true, true, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_two_plain(const u64* P) { osar<float, false, true, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_two(const u64* P) { osar<__nv_bfloat16, true, true, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_two_plain(const u64* P) { osar<__nv_bfloat16, false, true, true>(P); }

// Publishes the totals of every collective before it on this stream. One block of
// PUBLISH_THREADS.
extern "C" __global__ void __launch_bounds__(PUBLISH_THREADS) osar_publish(const u64* P) {
  publish_counter_block(P, (u64*)P[P_STATE]);
}

// clock64 cycles per second against %globaltimer over ~20 ms. out[0] = cycles, out[1] = ns.
extern "C" __global__ void osar_calibrate(u64* out) {
  if (threadIdx.x != 0) return;
  u64 g0 = globaltimer(), c0 = clock64();
  while (globaltimer() - g0 < 20000000ull) {
  }
  u64 c1 = clock64(), g1 = globaltimer();
  out[0] = c1 - c0;
  out[1] = g1 - g0;
}
