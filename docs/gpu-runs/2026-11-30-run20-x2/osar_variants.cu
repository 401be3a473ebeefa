// collscope: an instrumented one-shot all-reduce (sum) for N ranks.
//
// Each rank is one kernel launch per collective (one stream per rank; ranks may share a GPU,
// sit on peer GPUs, or in other processes through CUDA IPC: the kernel only sees pointers).
// Per collective and per data block:
//   guard   wait until every peer acked the ring slot this collective reuses
//   copy    this block's chunk of the input into this rank's slot
//   publish until this rank's flag (= seq) is visible: the last local block to finish its copy
//           publishes it, so this is local grid completion
//   wait    from this rank's publication until every peer's flag is seen; billed per peer as
//           critical-path shares (counters/README.md)
//   reduce  sum every rank's slot into the output; the last block acks the slot
// Every interval is measured on the SM's own clock64 (never a difference of two SMs' clocks).
// Counters are accumulated in registers and added to per-rank totals in device memory with
// fire-and-forget atomics. A separate one-warp kernel (osar_publish), which the host enqueues
// on the rank's stream after every k-th collective, copies the totals into the counter block
// (mapped host memory) under its sequence lock: the kernel boundary makes every copy whole,
// and the collective itself carries no PCIe traffic or fence for instrumentation.
// Every wait backs off (hot spins, then __nanosleep 128 ns doubling to 4096 ns) and is bounded:
// past its budget the kernel counts a timeout, raises S_ABORT and returns; it never hangs.
// S_ABORT is sticky: every later launch of the rank (a dispatcher batch or a graph replay already
// queued) sees it at entry and returns without touching anything, so an abort costs one budget,
// not one per queued launch. The rank also raises the abort word in its sync region, and a peer
// still waiting on it gives up once it backs off instead of running out its own budget.
//
// Memory ordering across GPUs and processes: a peer's flag, ack and their timestamps are read
// with ld.acquire.sys, and this rank publishes its own flag and ack with st.release.sys. The
// blocks of one rank meet on two counters (S_ARRIVED, S_FINISHED): each block fences its own
// work before its increment, the increment is an acquire, so the last block, whose release store
// publishes the flag or ack, has every block's work ordered before it (see publish and finish).
#include <cuda_bf16.h>
#include <stdint.h>

#include "counter_block.h"
#include "osar_params.h"
// Bisect switches: each OMIT_* removes one part of the instrumentation from the INSTR kernels.
#ifndef OMIT_SAMPLER
#define OMIT_SAMPLER 0
#endif
#ifndef OMIT_TOTALS
#define OMIT_TOTALS 0
#endif
#ifndef OMIT_PHASE_CLOCKS
#define OMIT_PHASE_CLOCKS 0
#endif
#ifndef OMIT_WAIT_CLOCK
#define OMIT_WAIT_CLOCK 0
#endif
#ifndef OMIT_PEER_ACC
#define OMIT_PEER_ACC 0
#endif
#define PCLK(x) ((INSTR && !OMIT_PHASE_CLOCKS) ? clock64() : 0)

typedef unsigned long long u64;

static_assert(S_WORDS == S_TOT + T_WORDS, "state words: S_TOT plus the totals");
static_assert(OSAR_MAX_RANKS <= 32, "guard and wait poll one peer per lane of warp 0");
static_assert(CB_OFF_PHASES == CB_OFF_COUNTERS + 8 * CB_N_COUNTERS, "phases follow counters");
static_assert(CB_OFF_PEER_WAIT == CB_OFF_PHASES + 8 * CB_N_PHASES, "peer arrays follow phases");

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// This rank's own words: its state, which only its own launches write (ordered by the kernel
// boundaries between them), and its counter block (ordered by the seqlock's fences).
__device__ __forceinline__ u64 ld_volatile(const u64* p) { return *(volatile const u64*)p; }
__device__ __forceinline__ void st_volatile(u64* p, u64 v) { *(volatile u64*)p = v; }

// Sync words that other GPUs and processes read or write: system scope.
__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u64 ld_relaxed_sys(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(u64* p, u64 v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed_sys(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}
// A block's arrival on a counter the rank's blocks share (one GPU): the acquire makes the work
// that earlier blocks fenced before their increments visible to, and ordered before, whatever the
// block that sees the final count does next.
__device__ __forceinline__ u64 atom_add_acquire_gpu(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acquire.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
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

// Copies the totals into the counter block under its sequence lock. One warp, in a kernel of
// its own: no collective of this rank runs meanwhile. The lock value is mirrored in device
// memory, so the only PCIe traffic is posted writes and two fences.
__device__ void publish_counter_block(const u64* __restrict__ P, u64* st) {
  const int lane = threadIdx.x & 31;
  const int world = (int)P[P_WORLD];
  const int buckets = (int)P[P_HIST_BUCKETS];
  const int blocks = (int)P[P_WORK_BLOCKS];
  const u64* tot = st + S_TOT;
  u64* cb = (u64*)P[P_COUNTER_BLOCK];
  u64* lock = cb + CB_OFF_SEQLOCK / 8;
  const u64 s = ld_volatile(st + S_LOCK);
  if (lane == 0) st_volatile(lock, s + 1);
  __syncwarp();
  __threadfence_system();
  if (lane == 0) cb[CB_OFF_CPS / 8] = ld_volatile(st + S_CPS);
  for (int i = lane; i < T_WORDS; i += 32) {
    const u64 v = ld_volatile(tot + i);
    if (i < T_PHASES) {
      cb[CB_OFF_COUNTERS / 8 + i] = v;
    } else if (i < T_PEER_WAIT) {
      // phases are summed over data blocks: publish their mean, so a phase is time
      cb[CB_OFF_PHASES / 8 + (i - T_PHASES)] = v / blocks;
    } else if (i < T_PEER_WAIT + world) {
      cb[CB_OFF_PEER_WAIT / 8 + (i - T_PEER_WAIT)] = v / blocks;
    } else if (i >= T_PEER_LAST && i < T_PEER_LAST + world) {
      cb[CB_OFF_PEER_WAIT / 8 + world + (i - T_PEER_LAST)] = v;
    } else if (i >= T_PEER_LATE && i < T_PEER_LATE + world) {
      cb[CB_OFF_PEER_WAIT / 8 + 2 * world + (i - T_PEER_LATE)] = v / blocks;
    } else if (i >= T_PEER_LATE_HIST && i < T_PEER_LATE_HIST + CB_LATE_BUCKETS * world) {
      cb[CB_OFF_PEER_WAIT / 8 + 3 * world + (i - T_PEER_LATE_HIST)] = v;
    } else if (i >= T_HIST && i < T_HIST + buckets) {
      cb[CB_OFF_PEER_WAIT / 8 + (3 + CB_LATE_BUCKETS) * world + (i - T_HIST)] = v;
    }
  }
  __syncwarp();
  __threadfence_system();
  if (lane == 0) {
    st_volatile(lock, s + 2);
    st_volatile(st + S_LOCK, s + 2);
  }
}

template <typename T, bool INSTR>
__device__ void osar(const u64* __restrict__ P) {
  const int rank = (int)P[P_RANK];
  const int world = (int)P[P_WORLD];
  const int nslots = (int)P[P_SLOTS];
  const long long elems = (long long)P[P_ELEMS];
  const int blocks = (int)P[P_WORK_BLOCKS];
  u64* st = (u64*)P[P_STATE];

  __shared__ u64 s_seq;
  __shared__ int s_abort;
  __shared__ u64 s_arrival[OSAR_MAX_RANKS];
  __shared__ u64 s_first_round;
  __shared__ u64 s_delay[F_ALL];             // injected delays by F_ARRIVAL..F_ACK
  __shared__ u64 s_link[OSAR_MAX_RANKS];     // injected delay of each peer's flag

  if (threadIdx.x == 0) {
    s_seq = ld_volatile(st + S_NEXT_SEQ);
    s_abort = ld_volatile(st + S_ABORT) != 0;
  }
  if (threadIdx.x < OSAR_MAX_RANKS) s_link[threadIdx.x] = 0;
  if (threadIdx.x < F_ALL) s_delay[threadIdx.x] = 0;
  __syncthreads();
  // An earlier collective of this rank aborted: return before the ring, the flags, the acks or
  // the counters are touched. The abort was counted once, by the launch that raised it.
  if (s_abort) return;
  const u64 seq = s_seq;

  const int slot = (int)(seq % (u64)nslots);
  if (threadIdx.x == 0) {
    fault_delays(P, seq, rank, world, s_delay, s_link);
    spin_ns(s_delay[F_ARRIVAL]);
  }
  __syncthreads();

  const u64 deadline = globaltimer() + P[P_BUDGET_NS];
  const long long chunk = (elems + blocks - 1) / blocks;
  const long long lo = (long long)blockIdx.x * chunk;
  const long long hi = lo + chunk < elems ? lo + chunk : elems;
  u64 t0 = PCLK(), t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0;
  // The clock's own rate: block 0 times the whole collective on %globaltimer too, so consumers
  // convert cycles with the rate of the very intervals they measured, whatever the SM clock did.
  const bool clock_sampler = INSTR && !OMIT_SAMPLER && blockIdx.x == 0 && threadIdx.x == 0;
  const u64 g0 = clock_sampler ? globaltimer() : 0;
  u64 my_share[OSAR_MAX_RANKS / 32] = {0};
  u64 my_late[OSAR_MAX_RANKS / 32] = {0};
  bool my_last[OSAR_MAX_RANKS / 32] = {false};

  // ---- guard: the slot's previous user (seq - nslots) was acked by every peer ------------
  // Warp 0, one lane per peer as in wait: one thread would issue the acquire loads one after
  // another (an acquire orders every later load), lanes issue them side by side.
  if (threadIdx.x < 32 && seq > (u64)nslots) {
    const int lane = threadIdx.x;
    const bool peer = lane < world && lane != rank;
    const u64 need = seq - nslots;
    const u64 ack_delay = s_delay[F_ACK];
    // in registers: every acquire below empties this SM's L1, where P would otherwise be cached
    const u64* ack = peer ? (const u64*)P[P_ACK_PTR + lane] : nullptr;
    const u64* acktime = peer ? (const u64*)P[P_ACKTIME_PTR + lane] + need % OSAR_ACK_HISTORY : nullptr;
    Backoff bo;
    for (;;) {
      // acquire: the peer's reads of this rank's slot are done before the copy below overwrites it
      const bool ok = !peer || (ld_acquire_sys(ack) >= need &&
                                (!ack_delay || ld_acquire_sys(acktime) + ack_delay <= globaltimer()));
      if (__all_sync(0xffffffffu, ok)) break;
      const bool give_up = !bo.pause(deadline) || (bo.cold() && peer_aborted(P, rank, world, lane));
      if (__any_sync(0xffffffffu, give_up)) {
        if (lane == 0) s_abort = 1;
        break;
      }
    }
  }
  __syncthreads();
  t1 = PCLK();

  // ---- copy -----------------------------------------------------------------------------
  // The slot gets the input plus a term of the sequence (CollectiveConfig.inputValue), so every
  // collective reduces different data and the host's sum check, which knows the sequence, fails
  // on a slot or an output left over from another collective.
  T* mine = (T*)P[P_SLOT_PTR + rank] + (long long)slot * elems;
  const T* in = (const T*)P[P_INPUT];
  if (!s_abort) {
    const float term = (float)(seq % P[P_SEQ_PERIOD]);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) mine[i] = from_f<T>(to_f<T>(in[i]) + term);
    if (threadIdx.x == 0) spin_ns(s_delay[F_COPY]);  // injected slow-copy, in every block
  }
  __syncthreads();
  t2 = PCLK();

  // ---- publish: the last block to finish copying publishes the rank's flag -----------------
  if (threadIdx.x == 0 && !s_abort) {
    // read before the atom, whose acquire empties L1: the last block's path to its flag stays short
    u64* flag = (u64*)P[P_FLAG_PTR + rank];
    u64* pubtime = (u64*)P[P_PUBTIME_PTR + rank] + slot;
    const u64 publish_delay = s_delay[F_PUBLISH];
    __threadfence_system();  // this block's slot data (every thread's: __syncthreads above) first
    const u64 before = atom_add_acquire_gpu(st + S_ARRIVED, 1ull);
    if (before + 1 == seq * (u64)blocks) {
      spin_ns(publish_delay);
      st_relaxed_sys(pubtime, globaltimer());
      // The release store replaces __threadfence_system() + a volatile store: it orders the
      // publish time and, being cumulative, every block's slot data (ordered before the count
      // this block acquired) before the flag. The old fence's other duty, acquiring the other
      // blocks' increments, is the atom's acquire above; one system-scope fence either way.
      st_release_sys(flag, seq);
    } else {
      // local completion only: nothing is read on the strength of it, so relaxed
      Backoff bo;
      while (ld_relaxed_sys(flag) < seq) {
        if (!bo.pause(deadline)) { s_abort = 1; break; }
      }
    }
  }
  __syncthreads();
  t3 = PCLK();

  // ---- wait: warp 0 polls every peer; each lane owns peers lane, lane+32, ... ---------------
  if (threadIdx.x < 32 && !s_abort) {
    const int lane = threadIdx.x;
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
      constexpr bool WC = INSTR && !OMIT_WAIT_CLOCK;
      u64 now = WC ? clock64() : 0;
      if (WC) now = __shfl_sync(0xffffffffu, now, 0);
      if (WC && lane == 0 && bo.spins == 0) s_first_round = now;
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
            if (WC) s_arrival[p] = now;
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
    __syncwarp();  // lane 0 may have raised s_abort
    if (INSTR && !OMIT_PEER_ACC && !s_abort) {
      // One lane per peer. Lateness: peer p was seen s_arrival[p] - t3 after this rank
      // published, whatever other peers did. The wait itself, publication to the last arrival,
      // is billed whole to the peer(s) that gated it: those seen in the round that ended it.
      u64 latest = 0;
      int gaters = 0;
      for (int q = 0; q < world; ++q)
        if (q != rank && s_arrival[q] > latest) latest = s_arrival[q];
      for (int q = 0; q < world; ++q)
        if (q != rank && s_arrival[q] == latest) ++gaters;
      const bool self_last = world == 1 || latest <= s_first_round;
      for (int k = 0; k < OSAR_MAX_RANKS / 32; ++k) {
        const int p = lane + 32 * k;
        if (p >= world) break;
        bool last = false;
        if (p == rank) {
          last = self_last;  // every peer was already there at the first round
        } else {
          const u64 tp = s_arrival[p];
          my_late[k] = tp > t3 ? tp - t3 : 0;
          my_share[k] = tp == latest && latest > t3 ? (latest - t3) / gaters : 0;
          last = !self_last && tp == latest;  // in the round that ended the wait
        }
        my_last[k] = last && blockIdx.x == 0;  // arrived-last from block 0's view
      }
    }
  }
  // The flags were acquired by warp 0; the barrier orders those acquires before every thread's
  // reads of the peers' slots (so no fence is needed here). The reads go past this SM's L1
  // (__ldcg), which may still hold the slot from nslots collectives ago.
  __syncthreads();
  t4 = PCLK();

  // ---- reduce -----------------------------------------------------------------------------
  if (!s_abort) {
    T* out = (T*)P[P_OUTPUT];
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      float acc = 0.f;
      for (int p = 0; p < world; ++p)
        acc += to_f<T>(__ldcg((const T*)P[P_SLOT_PTR + p] + (long long)slot * elems + i));
      out[i] = from_f<T>(acc);
    }
  }
  __syncthreads();
  t5 = PCLK();
  const u64 g5 = clock_sampler ? globaltimer() : 0;

  // ---- finish: the data path first, then the instrumentation, which needs no fence ----------
  // The totals are read only by osar_publish, after this launch has completed, so the atomics
  // below are fire-and-forget: nothing in this launch waits for them.
  __shared__ int s_last;
  if (threadIdx.x == 0) {
    s_last = 0;
    if (s_abort) {
      // Count the timeout once per collective and tell the host; the data path is abandoned.
      // A wait cut short because a peer had aborted counts too: the communicator is broken, and
      // a wait on that peer, this one or the next, would only run out its budget.
      if (atomicCAS(st + S_ABORT, 0ull, seq) == 0ull) {
        atomicAdd(st + S_TOT + CB_C_TIMEOUTS, 1ull);
        atomicAdd(st + S_TOT + CB_C_CALLS, 1ull);
        st_relaxed_sys((u64*)P[P_ABORT_PTR + rank], seq);  // for the peers' waits
      }
    } else {
      u64* ack = (u64*)P[P_ACK_PTR + rank];  // before the atom, as for the flag
      u64* acktime = (u64*)P[P_ACKTIME_PTR + rank] + seq % OSAR_ACK_HISTORY;
      __threadfence();  // this block's reads of the peers' slots are done before its count
      if (atom_add_acquire_gpu(st + S_FINISHED, 1ull) + 1 == seq * (u64)blocks) {
        // last block: every block has read every peer's slot, so ack it. As for the flag, the
        // release store replaces __threadfence_system() + a volatile store.
        st_relaxed_sys(acktime, globaltimer());
        st_release_sys(ack, seq);
        s_last = 1;
      }
    }
  }
  if (INSTR && !OMIT_TOTALS && !s_abort) {
    u64* tot = st + S_TOT;
    if (threadIdx.x < 32) {
      for (int k = 0; k < OSAR_MAX_RANKS / 32; ++k) {
        const int p = threadIdx.x + 32 * k;
        if (p >= world) break;
        if (my_share[k]) atomicAdd(tot + T_PEER_WAIT + p, my_share[k]);
        if (my_late[k]) atomicAdd(tot + T_PEER_LATE + p, my_late[k]);
        if (my_last[k]) atomicAdd(tot + T_PEER_LAST + p, 1ull);
        if (blockIdx.x == 0 && p != rank)
          atomicAdd(tot + T_PEER_LATE_HIST + p * CB_LATE_BUCKETS + late_bucket_of(my_late[k]), 1ull);
      }
    }
    if (threadIdx.x == 0) {
      atomicAdd(tot + T_PHASES + CB_PH_GUARD, t1 - t0);
      atomicAdd(tot + T_PHASES + CB_PH_COPY, t2 - t1);
      atomicAdd(tot + T_PHASES + CB_PH_PUBLISH, t3 - t2);
      atomicAdd(tot + T_PHASES + CB_PH_WAIT, t4 - t3);
      atomicAdd(tot + T_PHASES + CB_PH_REDUCE, t5 - t4);
      if (clock_sampler) {
        atomicAdd(tot + CB_C_CLOCK_NS, g5 - g0);
        atomicAdd(tot + CB_C_CLOCK_CYCLES, t5 - t0);
      }
      if (s_last) {
        atomicAdd(tot + CB_C_CALLS, 1ull);
        atomicAdd(tot + CB_C_BYTES, (u64)elems * sizeof(T));
        atomicAdd(tot + T_HIST + bucket_of(t5 - t0, (int)P[P_HIST_BUCKETS]), 1ull);
      }
    }
  }
  // read by the next launch only, after this one completed: no fence needed
  if (threadIdx.x == 0 && s_last) st_volatile(st + S_NEXT_SEQ, seq + 1);
}

extern "C" __global__ void __launch_bounds__(512, 1) osar_f32(const u64* P) { osar<float, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_f32_plain(const u64* P) { osar<float, false>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16(const u64* P) { osar<__nv_bfloat16, true>(P); }
extern "C" __global__ void __launch_bounds__(512, 1) osar_bf16_plain(const u64* P) { osar<__nv_bfloat16, false>(P); }

// Publishes the totals of every collective before it on this stream. One warp.
extern "C" __global__ void osar_publish(const u64* P) {
  if (threadIdx.x < 32) publish_counter_block(P, (u64*)P[P_STATE]);
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
