// libnccl-profiler-collscope.so: an NCCL profiler plugin (interfaces v6 and v5) that fills one
// collscope counter block per (communicator, rank) in shared memory, for `collscope emit --source
// nccl`. Design and the meaning of every field: gpu-emitter/src/main/c/nccl-profiler/README.md.
//
// Threads and what they do (nothing but a few stores and atomics on NCCL's own threads):
//   user thread   CollApi start: counts the call and its bytes, notes graph capture, decides
//                 whether the communicator's next collective is timed (1 in
//                 COLLSCOPE_NCCL_KERNEL_SAMPLING) and sets NCCL's event mask for it; Coll start
//                 (NCCL sends it only for collectives it gave KernelCh): for a timed collective,
//                 claims a slot of the in-flight pool (or counts a drop) and notes the host time
//                 and the collective's key.
//   proxy thread  KernelCh start/stop (timed collectives only): atomic min of the channels' GPU
//                 starts, max of their stops, one more channel done. ProxyOp/ProxyStep (the
//                 network steps of the same timed collectives): a record per operation from a
//                 process-wide pool, two host clock reads per step, and the step's network wait
//                 added to its peer's totals (see "network waits" below).
//   publisher     one thread per process while it has communicators, every CSN_PERIOD_US: takes
//                 the completed slots in order, writes each one's GPU start into this rank's
//                 arrival ring, joins it with the node's other ranks' rings (their blocks in the
//                 same directory), accumulates and publishes the block under its seqlock. Started
//                 by the first init, stopped and joined by the last finalize (see stopPublisher).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "collscope_block.h"
#include "nccl/err.h"
#include "nccl/profiler.h"

#define CSN_POOL 4096          // collectives in flight per context (enqueued, not yet published)
#define CSN_MAX_CHANNELS 64
#define CSN_PERIOD_US 2000     // publisher pass
#define CSN_PEER_WAIT_NS 200000000ull   // how long a completed collective waits for peers' arrivals
#define CSN_ORDER_GRACE_NS 20000000ull  // see drain: a later collective done, this one not
#define CSN_HEARTBEAT_NS 1000000000ull  // publish at least this often (heartbeat, drop counts)
#define CSN_STALE_NS 10000000000ull  // a slot whose channels stopped reporting is closed
// A CollNet collective's Coll event says nChannels 0 (NCCL 2.28.9's scheduleCollTasksToPlan never
// sets the task's nChannels on its CollNet path), so how many channel events will come is unknown:
// it is complete once every channel that started has stopped and no other channel started for
// this long. NCCL's proxy starts all the channels whose kernel start it sees in one progress pass
// (src/transport/profiler.cc) and a kernel's blocks start within microseconds of each other.
#define CSN_SETTLE_NS 1000000ull
// How long the last finalize waits for the publisher thread to stop (it wakes at once: see
// stopPublisher) before it pins the library instead.
#define CSN_JOIN_TIMEOUT_S 2
// Kernel-channel events for 1 collective in this many per communicator (the others: calls and
// bytes only). KernelCh events are NCCL's own largest cost: for each collective that has them it
// adds a profiler proxy operation per channel, wakes the proxy thread and polls host memory the
// kernel writes (docs/BENCHMARKS.md, runs 58-62). COLLSCOPE_NCCL_KERNEL_SAMPLING overrides it.
#define CSN_KERNEL_SAMPLING_DEFAULT 64

#define EXPORT __attribute__((visibility("default")))
#define LD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

enum { SLOT_FREE = 0, SLOT_OPEN = 1 };

// One collective in flight. `state` hands the slot between the user thread (claims it) and the
// publisher (frees it); the proxy thread only touches the atomics.
struct slot {
  uint32_t state;
  uint32_t nChannels;     // channels NCCL said it would use
  uint32_t started;       // channels whose start arrived
  uint32_t done;          // channels whose stop arrived
  uint64_t key;
  uint64_t hostStartNs;   // CLOCK_REALTIME at Coll start (enqueue)
  uint64_t gpuStart;      // min over channels, %globaltimer ns (UINT64_MAX: none yet)
  uint64_t gpuStop;       // max over channels
  uint64_t hostAlignedStart;  // gpuStart on CLOCK_REALTIME (this GPU's offset estimate)
  uint64_t seenAt;        // CLOCK_MONOTONIC ns when the publisher first looked at it (0: not yet)
  uint64_t completedAt;   // CLOCK_MONOTONIC ns when it first saw it complete (0: not yet)
  uint64_t doneSeenAt;    // CLOCK_MONOTONIC ns when the publisher first saw it complete while an
                          // earlier slot was still open (0: not seen so)
  uint64_t weight;        // collectives this timed one stands for (the sampling period)
  uint64_t settledAt;     // nChannels 0 (CollNet): CLOCK_MONOTONIC ns when the publisher first saw
  uint32_t settledN;      // settledN channels started and all of them stopped (0: not yet)
  int func;
};

struct peer {
  uint8_t* map;
  size_t len;
  uint64_t nextTry;  // CLOCK_MONOTONIC ns: a peer not found (another node) is looked for 1/s
};

struct ctx {
  struct ctx* next;
  uint64_t commId;
  int rank, nranks, nNodes;
  char path[512];
  int fd;                  // the block file, held open for its write lock while this context lives
  uint8_t* map;
  size_t len;
  size_t blockSize;
  ncclDebugLogger_t log;
  struct slot pool[CSN_POOL];
  uint64_t head;           // next slot to claim (user thread)
  uint64_t apiCount;       // collective API calls seen on this communicator (user thread)
  int wantKernel;          // the next API call is timed: g_wanting counts this one
  int capture;             // CAPTURE_*: the graph capture this communicator is in, if any
  int kernelOff;           // it captured a collective without KernelCh: g_tainted counts this one,
                           // and no collective of the process gets KernelCh while it lives
  // every collective's call and bytes, by type (user thread, relaxed atomics)
  uint64_t funcCalls[CSN_N_FUNCS], funcBytes[CSN_N_FUNCS];
  uint64_t tail;           // next slot to publish (publisher)
  uint64_t written;        // slots before this one have their arrival in the ring (publisher)
  int finalizing;
  // totals, owned by the publisher (published into the block); timed collectives' values are
  // weighted by the collectives each stands for
  uint64_t kernelNs, waitNs, reduceNs;
  uint64_t* peerWait;
  uint64_t* peerLast;
  uint64_t* peerLate;
  uint64_t* peerLateHist;
  uint64_t hist[CSN_HIST_BUCKETS];
  uint64_t stats[CSN_S_N];
  uint64_t funcKernelNs[CSN_N_FUNCS];
  uint64_t seqlock;
  uint64_t lastPublishNs;  // CLOCK_MONOTONIC (publisher)
  int64_t clockLagMin;     // written by the proxy thread (atomic min)
  uint64_t graphRefused, dropped; // atomics, user thread
  uint64_t graphMixed;      // captured collectives whose KernelCh differed from the capture's first
  struct peer* peers;
  // network waits per peer rank (CSN_X_NET; proxy thread, relaxed atomics): send steps' wait in
  // ns and their count, receive steps' wait and count
  uint64_t* netSendNs;
  uint64_t* netSendSteps;
  uint64_t* netRecvNs;
  uint64_t* netRecvSteps;
  uint64_t netDropped;      // proxy operations without a record (the pool was full)
  int warnedGraph;
  // The last function and datatype names seen, and what they map to (user thread: NCCL calls a
  // communicator's Coll events from one thread at a time, as it takes its API calls). NCCL passes
  // pointers to its own constant strings, so a pointer compare usually spares the string
  // matches; another pointer is matched by name and remembered.
  const char* lastFunc;
  int lastFuncIndex;
  const char* lastType;
  size_t lastTypeSize;
};

// The publisher thread. One per process while it has contexts: the first init starts it, the last
// finalize stops and joins it (stopPublisher). Each thread has its own stop flag, so a thread
// still stopping never takes a flag meant for the one a concurrent init started.
struct publisher {
  pthread_t thread;
  pid_t pid;   // the process that started it (a forked child has no such thread)
  int stop;    // under g_lock
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_cvOnce = PTHREAD_ONCE_INIT;
static pthread_cond_t g_cv;  // CLOCK_MONOTONIC: the publisher's period, and its stop
static struct ctx* g_ctxs;
static struct publisher* g_pub;  // the running publisher (NULL: none)
static int* g_mask;       // NCCL's event mask (one per process, read at each collective's enqueue)
static int g_active = 1;
static uint64_t g_periodUs = CSN_PERIOD_US;
static uint64_t g_sampling = CSN_KERNEL_SAMPLING_DEFAULT;
static int g_wanting;     // contexts whose next collective is timed: KernelCh in the mask while > 0
static int g_tainted;     // live contexts that captured a collective without KernelCh: while > 0,
                          // KernelCh is vetoed for the whole process (see graphCapture)

enum { CAPTURE_NONE = 0, CAPTURE_WITH_KERNEL = 1, CAPTURE_WITHOUT_KERNEL = 2 };
// CollApi handles: their address says whether the collective is graph-captured, timed or neither.
static char g_eagerApi, g_capturedApi, g_timedApi;

// The masks never hold ncclProfileColl. NCCL 2.28.9 sends a collective's Coll event when the mask
// it latched for that collective (at its enqueue, ncclProfilerStartGroupApiEvent) holds Coll or
// KernelCh (ncclProfilerStartTaskEvents), so without Coll in the mask the Coll event itself says
// that NCCL latched KernelCh for the collective: its channel events will come. Nothing else the
// plugin can see tells what NCCL latched (the mask may have changed since), and calls and bytes
// are counted at the CollApi event, which NCCL sends for every collective either way.
// The timed collectives' network proxy events come with their kernel-channel events (same mask,
// so a captured collective has both or neither): COLLSCOPE_NCCL_NET=0 leaves them out.
#define CSN_BASE_MASK ncclProfileCollApi
#define CSN_NET_MASK (ncclProfileProxyOp | ncclProfileProxyStep)
#define CSN_MASK \
  (CSN_BASE_MASK | ncclProfileKernelCh | __atomic_load_n(&g_netMask, __ATOMIC_RELAXED))
static int g_netMask = CSN_NET_MASK;

// ---- network waits ---------------------------------------------------------------------------
// NCCL's net transport sends, for each proxy operation of a timed collective (one channel's sends
// to or receives from one peer rank), a ProxyOp event (peer, isSend) and, per step, a ProxyStep
// event whose states say what the step waits for: a send step SendGPUWait (the GPU filling the
// buffer), SendPeerWait (the receiver's credit), SendWait (posted to the network until its
// completion: the link itself), then stop; a receive step RecvWait (posted until the data arrived:
// the link, and a late sender), then RecvFlushWait/RecvGPUWait. The plugin times SendWait and
// RecvWait on the host's CLOCK_MONOTONIC (the events carry no timestamps) and adds them to the
// peer's totals: per (rank, peer) means per step, what a slow inter-node link raises and a slow
// GPU does not (its peers' sends wait in SendPeerWait/SendGPUWait, not on the network).
//
// Records come from one process-wide pool, so that a stop or state event (which carries only the
// handle) tells a network record from a collective's slot by its address. A full pool leaves the
// operation without a handle (NCCL then sends its steps with no parent: ignored), counted in
// CSN_S_NET_DROPPED: the job never waits for a record.
#define CSN_NET_OPS 4096
#define CSN_NET_STEPS 8     // NCCL_STEPS: NCCL keeps a step's handle at step % 8
#define CSN_NET_SCAN 64     // records tried before an operation is dropped
enum { NET_IDLE = 0, NET_SEND_WAIT = 1, NET_RECV_WAIT = 2 };
struct netStep {
  uint64_t since;    // CLOCK_MONOTONIC ns the wait began
  uint32_t state;    // NET_*
  uint32_t op;       // index of its operation in g_netOps
};
struct netOp {
  uint32_t inUse;
  uint32_t busy;     // the proxy thread is adding to c's totals (see netFinalize)
  struct ctx* c;     // NULL once the context was finalized
  int peer;
  struct netStep steps[CSN_NET_STEPS];
};
static struct netOp g_netOps[CSN_NET_OPS];
static uint32_t g_netHint;

static int isNetStep(const void* h) {
  const char* p = h;
  return p >= (const char*)g_netOps && p < (const char*)(g_netOps + CSN_NET_OPS) &&
         (size_t)(p - (const char*)g_netOps) % sizeof(struct netOp) >=
             offsetof(struct netOp, steps);
}
static int isNetOp(const void* h) {
  const char* p = h;
  return p >= (const char*)g_netOps && p < (const char*)(g_netOps + CSN_NET_OPS) &&
         (size_t)(p - (const char*)g_netOps) % sizeof(struct netOp) == 0;
}

static uint64_t nowNs(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void logf_(struct ctx* c, ncclDebugLogLevel lvl, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (c && c->log) c->log(lvl, NCCL_INIT, __FILE__, __LINE__, "collscope: %s", buf);
  if (lvl <= NCCL_LOG_WARN || getenv("COLLSCOPE_NCCL_VERBOSE")) {
    fprintf(stderr, "collscope-nccl: %s\n", buf);
  }
}

// AllReduce 0, AllGather 1, ReduceScatter 2, Broadcast 3, Reduce 4, AllToAll 5, Gather/Scatter 6.
// The names are NCCL's own, ncclFuncToString (src/collectives.cc, 2.28.9 and later): "AlltoAll"
// with a small t. (NCCL 2.28.9 enqueues AlltoAll, Gather and Scatter as Send/Recv tasks, so their
// API events are P2p ones, which the plugin does not enable; the names are here for an NCCL that
// sends them as collectives.)
static int funcIndex(const char* f) {
  if (!f) return 7;
  if (!strcmp(f, "AllReduce")) return 0;
  if (!strcmp(f, "AllGather")) return 1;
  if (!strcmp(f, "ReduceScatter")) return 2;
  if (!strcmp(f, "Broadcast")) return 3;
  if (!strcmp(f, "Reduce")) return 4;
  if (!strcmp(f, "AlltoAll")) return 5;
  if (!strcmp(f, "Gather") || !strcmp(f, "Scatter")) return 6;
  return 7;
}

static size_t typeSize(const char* t) {
  if (!t) return 1;
  if (strstr(t, "64") || !strcmp(t, "ncclDouble")) return 8;
  if (strstr(t, "32") || !strcmp(t, "ncclFloat") || !strcmp(t, "ncclInt")) return 4;
  if (strstr(t, "16") || !strcmp(t, "ncclHalf")) return 2;
  return 1;  // int8, uint8, fp8 kinds
}

static size_t blockSizeOf(int w) {
  // As CounterBlock.sizeOf: the persistent-CTA extension words (layout 4) stay zero here.
  size_t raw =
      CB_OFF_PEER_WAIT + 8 * ((size_t)(3 + CB_LATE_BUCKETS) * w + CSN_HIST_BUCKETS + CB_EXT_WORDS);
  return (raw + 127) & ~(size_t)127;
}

static inline void put64(uint8_t* m, size_t off, uint64_t v) { *(volatile uint64_t*)(m + off) = v; }
static inline void put32(uint8_t* m, size_t off, uint32_t v) { *(volatile uint32_t*)(m + off) = v; }

static int lateBucket(uint64_t ns) {
  int b = ns <= 1 ? 0 : 63 - __builtin_clzll(ns) - CB_LATE_SHIFT;
  return b < 0 ? 0 : (b > CB_LATE_BUCKETS - 1 ? CB_LATE_BUCKETS - 1 : b);
}

static int histBucket(uint64_t ns) {
  int b = ns <= 1 ? 0 : 63 - __builtin_clzll(ns);
  return b > CSN_HIST_BUCKETS - 1 ? CSN_HIST_BUCKETS - 1 : b;
}

static const char* shmDir(void) {
  const char* d = getenv("COLLSCOPE_SHM_DIR");
  return d && *d ? d : "/dev/shm/collscope";
}

static void ringPath(char* out, size_t n, uint64_t commId, int rank) {
  snprintf(out, n, "%s/%016llx/rank-%d.blk", shmDir(), (unsigned long long)commId, rank);
}

// ---- publication ---------------------------------------------------------------------------

static void publish(struct ctx* c, int finalized) {
  uint8_t* m = c->map;
  int w = c->nranks;
  uint64_t s = c->seqlock;
  __atomic_store_n((uint64_t*)(m + CB_OFF_SEQLOCK), s + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  put64(m, CB_OFF_CPS, 1000000000ull);
  uint64_t calls = 0, bytes = 0, fc[CSN_N_FUNCS], fb[CSN_N_FUNCS];
  for (int f = 0; f < CSN_N_FUNCS; f++) {
    calls += fc[f] = __atomic_load_n(&c->funcCalls[f], __ATOMIC_RELAXED);
    bytes += fb[f] = __atomic_load_n(&c->funcBytes[f], __ATOMIC_RELAXED);
  }
  put64(m, CB_OFF_COUNTERS + 8 * CB_C_CALLS, calls);
  put64(m, CB_OFF_COUNTERS + 8 * CB_C_BYTES, bytes);
  put64(m, CB_OFF_COUNTERS + 8 * CB_C_TIMEOUTS, 0);
  put64(m, CB_OFF_COUNTERS + 8 * CB_C_CLOCK_NS, c->kernelNs);
  put64(m, CB_OFF_COUNTERS + 8 * CB_C_CLOCK_CYCLES, c->kernelNs);
  put64(m, CB_OFF_PHASES + 8 * CB_PH_GUARD, 0);
  put64(m, CB_OFF_PHASES + 8 * CB_PH_COPY, 0);
  put64(m, CB_OFF_PHASES + 8 * CB_PH_PUBLISH, 0);
  put64(m, CB_OFF_PHASES + 8 * CB_PH_WAIT, c->waitNs);
  put64(m, CB_OFF_PHASES + 8 * CB_PH_REDUCE, c->reduceNs);
  size_t o = CB_OFF_PEER_WAIT;
  for (int p = 0; p < w; p++) put64(m, o + 8 * p, c->peerWait[p]);
  o += 8 * w;
  for (int p = 0; p < w; p++) put64(m, o + 8 * p, c->peerLast[p]);
  o += 8 * w;
  for (int p = 0; p < w; p++) put64(m, o + 8 * p, c->peerLate[p]);
  o += 8 * w;
  for (int i = 0; i < w * CB_LATE_BUCKETS; i++) put64(m, o + 8 * i, c->peerLateHist[i]);
  o += 8 * (size_t)w * CB_LATE_BUCKETS;
  for (int i = 0; i < CSN_HIST_BUCKETS; i++) put64(m, o + 8 * i, c->hist[i]);
  uint8_t* x = m + c->blockSize;
  c->stats[CSN_S_GRAPH_REFUSED] = LD(&c->graphRefused);
  c->stats[CSN_S_DROPPED] = LD(&c->dropped);
  c->stats[CSN_S_CLOCK_LAG_MIN] = (uint64_t)LD(&c->clockLagMin);
  c->stats[CSN_S_SAMPLING] = __atomic_load_n(&g_sampling, __ATOMIC_RELAXED);
  // off for this communicator's captures, or for the whole process while another's last
  c->stats[CSN_S_KERNEL_OFF] = c->kernelOff || __atomic_load_n(&g_tainted, __ATOMIC_RELAXED) > 0;
  c->stats[CSN_S_GRAPH_MIXED] = LD(&c->graphMixed);
  c->stats[CSN_S_NET_DROPPED] = LD(&c->netDropped);
  for (int i = 0; i < CSN_S_N; i++) put64(x, CSN_X_STATS + 8 * i, c->stats[i]);
  const uint64_t* net[CSN_NET_ARRAYS] = {c->netSendNs, c->netSendSteps, c->netRecvNs,
                                         c->netRecvSteps};
  for (int a = 0; a < CSN_NET_ARRAYS; a++) {
    for (int p = 0; p < w; p++) {
      put64(x, CSN_X_NET + 8 * ((size_t)a * w + p), __atomic_load_n(&net[a][p], __ATOMIC_RELAXED));
    }
  }
  for (int f = 0; f < CSN_N_FUNCS; f++) {
    put64(x, CSN_X_FUNCS + CSN_FUNC_STRIDE * f, fc[f]);
    put64(x, CSN_X_FUNCS + CSN_FUNC_STRIDE * f + 8, fb[f]);
    put64(x, CSN_X_FUNCS + CSN_FUNC_STRIDE * f + 16, c->funcKernelNs[f]);
  }
  put64(x, CSN_X_HEARTBEAT_NS, nowNs(CLOCK_REALTIME));
  if (finalized) put32(x, CSN_X_FINALIZED, 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n((uint64_t*)(m + CB_OFF_SEQLOCK), s + 2, __ATOMIC_RELEASE);
  c->seqlock = s + 2;
}

// ---- arrival rings ---------------------------------------------------------------------------

// Entry of a key: a ring per collective type, so a later key in an entry means this one is gone.
static size_t ringIndex(uint64_t key) {
  uint64_t func = (key - 1) & 7, seq = (key - 1) >> 3;
  return (size_t)(func * CSN_RING_PER_FUNC + seq % CSN_RING_PER_FUNC);
}

static void ringWrite(uint8_t* ext, uint64_t key, uint64_t start, uint64_t kernel) {
  uint64_t* e = (uint64_t*)(ext + CSN_X_RING + CSN_RING_ENTRY * ringIndex(key));
  __atomic_store_n(&e[0], 0, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&e[1], start, __ATOMIC_RELAXED);
  __atomic_store_n(&e[2], kernel, __ATOMIC_RELAXED);
  __atomic_store_n(&e[0], key, __ATOMIC_RELEASE);
  uint64_t* hwm = (uint64_t*)(ext + CSN_X_HWM + 8 * ((key - 1) & 7));
  if (key > __atomic_load_n(hwm, __ATOMIC_RELAXED)) __atomic_store_n(hwm, key, __ATOMIC_RELEASE);
}

// 1: found (start, kernel set); 0: not yet written; -1: gone (overwritten by a later collective,
// or skipped: the peer's mark is past it).
static int ringRead(const uint8_t* ext, uint64_t key, uint64_t* start, uint64_t* kernel) {
  const uint64_t* e = (const uint64_t*)(ext + CSN_X_RING + CSN_RING_ENTRY * ringIndex(key));
  uint64_t k1 = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
  uint64_t v = __atomic_load_n(&e[1], __ATOMIC_RELAXED);
  uint64_t d = __atomic_load_n(&e[2], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  uint64_t k2 = __atomic_load_n(&e[0], __ATOMIC_RELAXED);
  if (k1 == key && k2 == key) {
    *start = v;
    *kernel = d;
    return 1;
  }
  if (k1 > key && k2 > key) return -1;
  uint64_t hwm = __atomic_load_n((const uint64_t*)(ext + CSN_X_HWM + 8 * ((key - 1) & 7)),
                                 __ATOMIC_ACQUIRE);
  return hwm > key ? -1 : 0;
}

// Collectives whose ranks all finish together (the last step of a ring or tree ends on every
// rank within a step): the arrival skew is the difference of the kernels' lengths, each on its
// own GPU's clock, so no two clocks are compared. Rooted ones (Broadcast, Reduce) do not end
// together: their skew compares starts on the host clock.
static int endsTogether(int func) { return func == 0 || func == 1 || func == 2 || func == 5; }

// Maps a peer's block once it exists and has the same commId; node-local peers only.
static uint8_t* peerExt(struct ctx* c, int p) {
  struct peer* pe = &c->peers[p];
  if (pe->map) return pe->map + c->blockSize;
  uint64_t now = nowNs(CLOCK_MONOTONIC);
  if (now < pe->nextTry) return NULL;
  pe->nextTry = now + 1000000000ull;
  char path[512];
  ringPath(path, sizeof path, c->commId, p);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NULL;
  struct stat st;
  size_t len = c->blockSize + CSN_EXT_SIZE;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < len) {
    close(fd);
    return NULL;
  }
  uint8_t* m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return NULL;
  const uint8_t* x = m + c->blockSize;
  if (*(const volatile uint32_t*)(x + CSN_X_MAGIC) != CSN_EXT_MAGIC ||
      *(const volatile uint64_t*)(x + CSN_X_COMM_ID) != c->commId) {
    munmap(m, len);  // still being created: try again next pass
    return NULL;
  }
  pe->map = m;
  pe->len = len;
  c->stats[CSN_S_PEERS_SEEN]++;
  return m + c->blockSize;
}

// ---- the publisher ---------------------------------------------------------------------------

// Accumulates one completed collective. Returns 0 when a node-local peer's arrival is not there
// yet and the collective should wait for it (until CSN_PEER_WAIT_NS after completion).
static int account(struct ctx* c, struct slot* s, uint64_t now, int force) {
  int w = c->nranks;
  uint64_t n = s->weight ? s->weight : 1;
  uint64_t kernel = s->gpuStop > s->gpuStart ? s->gpuStop - s->gpuStart : 0;
  uint64_t ownStart = s->hostAlignedStart;
  uint64_t starts[w > 0 ? w : 1], kernels[w > 0 ? w : 1];
  signed char known[w > 0 ? w : 1];
  int waitMore = 0;
  for (int p = 0; p < w; p++) {
    known[p] = 0;
    if (p == c->rank) {
      known[p] = 1;
      starts[p] = ownStart;
      kernels[p] = kernel;
      continue;
    }
    uint8_t* x = peerExt(c, p);
    if (!x) continue;  // not on this node (or not yet created)
    int r = ringRead(x, s->key, &starts[p], &kernels[p]);
    if (r == 1) known[p] = 1;
    else if (r == 0) waitMore = 1;
    else known[p] = -1;
  }
  if (waitMore && !force && now - s->completedAt < CSN_PEER_WAIT_NS) return 0;
  // late[p]: how much later than this rank peer p arrived.
  uint64_t late[w > 0 ? w : 1];
  uint64_t wait = 0;
  int together = endsTogether(s->func);
  for (int p = 0; p < w; p++) {
    late[p] = 0;
    if (p == c->rank || known[p] != 1) continue;
    if (together) late[p] = kernel > kernels[p] ? kernel - kernels[p] : 0;
    else late[p] = starts[p] > ownStart ? starts[p] - ownStart : 0;
    if (late[p] > wait) wait = late[p];
  }
  int nLast = 0;
  for (int p = 0; p < w; p++) {
    if (p == c->rank) continue;
    if (known[p] != 1) {
      if (peerExt(c, p)) c->stats[CSN_S_UNMATCHED]++;
      continue;
    }
    c->peerLate[p] += late[p] * n;
    c->peerLateHist[p * CB_LATE_BUCKETS + lateBucket(late[p])] += n;
    if (wait > 0 && late[p] == wait) nLast++;
  }
  if (wait > 0) {
    for (int p = 0; p < w; p++) {
      if (p != c->rank && known[p] == 1 && late[p] == wait) {
        c->peerWait[p] += wait / nLast * n;
        c->peerLast[p] += n;
      }
    }
  } else {
    c->peerLast[c->rank] += n;  // this rank itself arrived last (or with the last)
  }
  c->kernelNs += kernel * n;
  c->waitNs += (wait < kernel ? wait : kernel) * n;
  c->reduceNs += (kernel > wait ? kernel - wait : 0) * n;
  c->hist[histBucket(kernel)] += n;
  c->stats[CSN_S_KERNEL_NS] += kernel * n;
  c->stats[CSN_S_TIMED]++;
  if (s->gpuStart > s->hostStartNs && s->hostStartNs) {  // a mean: not weighted
    c->stats[CSN_S_LAUNCH_NS] += s->gpuStart - s->hostStartNs;
    c->stats[CSN_S_LAUNCH_N]++;
  }
  c->funcKernelNs[s->func] += kernel * n;
  return 1;
}

static void writeArrival(struct ctx* c, struct slot* s) {
  int64_t lag = LD(&c->clockLagMin);
  s->hostAlignedStart = lag == INT64_MAX ? s->gpuStart : s->gpuStart + (uint64_t)lag;
  uint64_t kernel = s->gpuStop > s->gpuStart ? s->gpuStop - s->gpuStart : 0;
  ringWrite(c->map + c->blockSize, s->key, s->hostAlignedStart, kernel);
}

// Publisher only (it alone writes settledN/settledAt). force (finalize): a CollNet collective whose
// started channels all stopped is complete without waiting for the settling time.
static int slotComplete(struct slot* s, uint64_t now, int force) {
  if (LD(&s->state) != SLOT_OPEN) return 0;
  uint32_t n = LD(&s->nChannels);
  if (n > 0) return LD(&s->done) >= n;
  // nChannels 0 (CollNet: see CSN_SETTLE_NS): every started channel stopped, and nothing new
  // for a while.
  uint32_t started = LD(&s->started), done = LD(&s->done);
  if (started == 0 || done != started) {
    s->settledN = 0;
    return 0;
  }
  if (force) return 1;
  if (s->settledN != started) {
    s->settledN = started;
    s->settledAt = now;
    return 0;
  }
  return now - s->settledAt >= CSN_SETTLE_NS;
}

// One pass over a context. First every completed collective's arrival goes into this rank's
// ring, then they are accounted in order; a collective whose node-local peers have not written
// theirs yet waits for the next pass. (Writing before accounting matters: two ranks that each
// waited for the other's arrival before writing their own would advance one collective a pass.)
// Returns whether anything changed.
static int drain(struct ctx* c, int force) {
  int changed = 0;
  uint64_t now = nowNs(CLOCK_MONOTONIC);
  uint64_t head = LD(&c->head);
  if (c->written < c->tail) c->written = c->tail;
  while (c->written < head) {
    struct slot* s = &c->pool[c->written % CSN_POOL];
    if (!slotComplete(s, now, force)) break;
    s->completedAt = now;
    writeArrival(c, s);
    c->written++;
  }
  while (c->tail < head) {
    struct slot* s = &c->pool[c->tail % CSN_POOL];
    if (LD(&s->state) != SLOT_OPEN) break;  // claimed but not yet filled in
    if (c->tail >= c->written && slotComplete(s, now, force)) {  // after a lost slot was closed
      s->completedAt = now;
      writeArrival(c, s);
      c->written = c->tail + 1;
    }
    if (c->tail < c->written) {
      // A pool filling up must not wait for late peers: account without them.
      int pressed = head - c->tail > CSN_POOL / 2;
      if (!account(c, s, now, force || pressed)) break;
    } else {
      // Not complete. Channels lost (a channel event NCCL never sent): close it after a while
      // so one bad slot does not stop the context; counted.
      // A communicator's kernels run in order on its stream: once a later collective is done,
      // this one is done too, and channel events still missing after a grace period were lost
      // (most likely what stopped a rank's counting in run 42 on two H200s).
      if (!s->seenAt) s->seenAt = now;
      int lost = 0;
      for (uint64_t j = c->tail + 1; j < head; j++) {
        struct slot* t = &c->pool[j % CSN_POOL];  // slots are timed collectives only
        if (!slotComplete(t, now, 0)) continue;
        if (!t->doneSeenAt) t->doneSeenAt = now;
        if (now - t->doneSeenAt > CSN_ORDER_GRACE_NS) lost = 1;
      }
      if (!force && !lost && now - s->seenAt <= CSN_STALE_NS) break;
      c->stats[CSN_S_STALE]++;
      uint32_t started = LD(&s->started);
      if (started > 0 && LD(&s->done) == started) {
        writeArrival(c, s);
        s->completedAt = now;
        account(c, s, now, 1);
      }
      c->written = c->tail + 1;
    }
    s->seenAt = 0;
    s->completedAt = 0;
    s->doneSeenAt = 0;
    ST(&s->state, SLOT_FREE);
    c->tail++;
    changed = 1;
  }
  return changed;
}

static void initCv(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);  // a wall-clock step must not stall the passes
  pthread_cond_init(&g_cv, &a);
  pthread_condattr_destroy(&a);
}

static void* publisherMain(void* arg) {
  struct publisher* me = arg;
  pthread_mutex_lock(&g_lock);
  while (!me->stop) {
    uint64_t now = nowNs(CLOCK_MONOTONIC);
    for (struct ctx* c = g_ctxs; c; c = c->next) {
      // Also when nothing was accounted: drops and refusals must show while the tail is stuck,
      // and the heartbeat says the writer is alive.
      if (drain(c, 0) || LD(&c->dropped) != c->stats[CSN_S_DROPPED] ||
          LD(&c->graphRefused) != c->stats[CSN_S_GRAPH_REFUSED] ||
          now - c->lastPublishNs > CSN_HEARTBEAT_NS) {
        publish(c, 0);
        c->lastPublishNs = now;
      }
    }
    // Sleeps a period, unless stopPublisher wakes it (g_lock is free meanwhile).
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + g_periodUs * 1000;
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    while (!me->stop && pthread_cond_timedwait(&g_cv, &g_lock, &until) == 0) {
    }
  }
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

// Under g_lock. Starts the publisher unless one runs in this process (or a test drives it:
// COLLSCOPE_NCCL_NO_THREAD=1). A thread is started per process lifetime of the library: after
// the last finalize stopped it, the next init (with or without a dlclose/dlopen in between)
// starts a fresh one.
static void startPublisher(struct ctx* c) {
  if (g_pub && g_pub->pid != getpid()) g_pub = NULL;  // a forked child: the parent's thread
  const char* t = getenv("COLLSCOPE_NCCL_NO_THREAD");  // tests drive the publisher themselves
  if (g_pub || (t && *t == '1')) return;
  pthread_once(&g_cvOnce, initCv);
  struct publisher* p = calloc(1, sizeof *p);
  if (!p) return;
  p->pid = getpid();
  if (pthread_create(&p->thread, NULL, publisherMain, p) != 0) {  // joinable
    logf_(c, NCCL_LOG_WARN, "cannot start the publisher thread: %s; blocks are not published",
          strerror(errno));
    free(p);
    return;
  }
  g_pub = p;
}

// Stops the publisher and waits for it: called with g_lock held, returns with it released.
//
// Why stop and join rather than leave the thread running: NCCL dlcloses the plugin when its last
// communicator is destroyed (src/plugin/profiler.cc, ncclProfilerPluginUnload), and a thread left
// running in the unmapped library faults the next time it wakes (SIGSEGV: the training process
// dies after destroy_process_group()). Stopping it in the last finalize leaves nothing behind
// after dlclose, and a later init (NCCL loads the library again for a new communicator) starts
// from clean state. The alternative, RTLD_NODELETE with a thread that outlives every
// communicator, would keep a thread and the library in every process that ever made a
// communicator. Only if the thread does not stop in CSN_JOIN_TIMEOUT_S (it cannot be stuck: it
// waits on g_cv or runs a pass under g_lock) does the plugin pin itself with RTLD_NODELETE, so
// that the dlclose cannot pull the code from under it.
static void stopPublisher(struct ctx* c) {
  struct publisher* p = g_pub;
  g_pub = NULL;
  if (!p || p->pid != getpid()) {
    pthread_mutex_unlock(&g_lock);
    return;
  }
  p->stop = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_lock);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);  // pthread_timedjoin_np takes CLOCK_REALTIME
  until.tv_sec += CSN_JOIN_TIMEOUT_S;
  int e = pthread_timedjoin_np(p->thread, NULL, &until);
  if (e == 0) {
    free(p);
    return;
  }
  Dl_info info;
  void* self = NULL;
  if (dladdr((void*)&stopPublisher, &info) && info.dli_fname) {
    self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  logf_(c, NCCL_LOG_WARN, "the publisher thread did not stop (%s); library %s", strerror(e),
        self ? "pinned (never unloaded)" : "could not be pinned");
}

// ---- kernel-channel sampling ----------------------------------------------------------------

// Whether the communicator's collective number k (its k-th collective API call, the same on every
// rank: NCCL requires all ranks to call a communicator's collectives in the same order) is timed.
// Deterministic, so every rank times the same collectives and their arrivals join; chosen by a
// hash of k (splitmix64's finalizer), not k % n: a training step repeats the same sequence of
// collectives, and a period would time the same one of them every step (run 60 cycled through
// 4 sizes and timed only the 16 MB all-reduces).
static int chosen(uint64_t k) {
  uint64_t n = __atomic_load_n(&g_sampling, __ATOMIC_RELAXED);
  if (n <= 1) return 1;
  uint64_t z = k + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  // a power of two (the default, 64) by its mask: the same choice without a 64-bit division on
  // every collective's callbacks
  return ((n & (n - 1)) == 0 ? z & (n - 1) : z % n) == 0;
}

// NCCL's mask is one per process: KernelCh is in it while any communicator's next collective is
// timed (another communicator's collective enqueued meanwhile gets KernelCh too; it sends a Coll
// event, which gets no handle, and channel events the plugin ignores) and no live communicator
// captured a collective without it (g_tainted). A second look repairs a store that raced with
// another thread's.
static void storeMask(void) {
  if (!g_mask) return;
  for (int i = 0; i < 2; i++) {
    int m = !__atomic_load_n(&g_active, __ATOMIC_RELAXED) ? 0
            : __atomic_load_n(&g_wanting, __ATOMIC_RELAXED) > 0 &&
                    __atomic_load_n(&g_tainted, __ATOMIC_RELAXED) == 0
                ? CSN_MASK
                : CSN_BASE_MASK;
    if (__atomic_load_n(g_mask, __ATOMIC_RELAXED) == m) return;
    __atomic_store_n(g_mask, m, __ATOMIC_RELAXED);
  }
}

static void setWant(struct ctx* c, int want) {
  want = want && !c->kernelOff;
  if (want == c->wantKernel) return;
  c->wantKernel = want;
  __atomic_fetch_add(&g_wanting, want ? 1 : -1, __ATOMIC_RELAXED);
  storeMask();
}

static void taint(struct ctx* c) {
  if (c->kernelOff) return;
  c->kernelOff = 1;
  __atomic_fetch_add(&g_tainted, 1, __ATOMIC_RELAXED);
  setWant(c, 0);
  storeMask();
}

// Graph capture under sampling. NCCL 2.28.9 keeps two counters per channel that its profiler
// proxy operations match: the kernel's (one more per work item it runs: at every replay of a
// captured collective) and the proxy's (one more per collective when it is planned, except that a
// captured one with KernelCh counts at each replay instead, src/proxy.cc SaveProxyProfiler). A
// captured collective without KernelCh therefore moves them apart at every replay after the
// first, and from then on a KernelCh proxy operation of that communicator waits for a counter
// that never comes: channel events stop and ncclCommDestroy hangs (run 60: one captured
// collective of 20 had KernelCh). Counters stay together only if every captured collective of the
// communicator has KernelCh, or none has and no KernelCh collective of it follows.
//
// The mask is one per process, so both rules are kept for the whole process:
// - the first captured collective decides. With KernelCh, the communicator holds KernelCh in the
//   mask while its capture lasts, so the rest of it (and any other communicator's capture
//   meanwhile) gets it too.
// - without KernelCh, the communicator is tainted: while it lives, no collective of the process
//   gets KernelCh, whichever communicator wants it (a per-communicator veto that ended with the
//   capture let another communicator's sampling put KernelCh on this one's later collectives, and
//   ncclCommDestroy hung). Timing stops on every communicator, calls and bytes go on; said once.
//   The veto ends when the last tainted communicator is finalized.
// NCCL sends no event at capture that says whether it latched KernelCh for a captured collective
// (its Coll event comes at replays, if at all), so `hadKernel` is the mask read again now: the one
// place where the plugin still reads the mask rather than observing NCCL's latch. Another thread
// changing the mask between NCCL's read and this one can make the first captured collective
// differ from the rest of its capture: counted in graph_mixed.
// COLLSCOPE_NCCL_KERNEL_SAMPLING=1 (every collective has KernelCh) keeps timing jobs that capture.
static void graphCapture(struct ctx* c, int hadKernel) {
  if (c->capture == CAPTURE_NONE) {
    c->capture = hadKernel ? CAPTURE_WITH_KERNEL : CAPTURE_WITHOUT_KERNEL;
  } else if ((c->capture == CAPTURE_WITH_KERNEL) != hadKernel) {
    __atomic_fetch_add(&c->graphMixed, 1, __ATOMIC_RELAXED);
    c->capture = CAPTURE_WITHOUT_KERNEL;
  }
  if (c->capture == CAPTURE_WITHOUT_KERNEL && !c->kernelOff) {
    taint(c);
    logf_(c, NCCL_LOG_WARN,
          "comm %016llx rank %d: collectives captured in a CUDA graph without kernel-channel "
          "events: timing stops on every communicator of this process while this one lives "
          "(NCCL's profiler counters would disagree); set COLLSCOPE_NCCL_KERNEL_SAMPLING=1 to "
          "time jobs that capture collectives",
          (unsigned long long)c->commId, c->rank);
  }
  setWant(c, c->capture == CAPTURE_WITH_KERNEL);
}

// ---- network proxy events (proxy thread) ------------------------------------------------------

// A record for a proxy operation towards `peer`, or NULL (no room: counted, not followed).
static struct netOp* netOpStart(struct ctx* c, int peer) {
  if (peer < 0 || peer >= c->nranks || peer == c->rank) return NULL;
  uint32_t at = __atomic_fetch_add(&g_netHint, 1, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < CSN_NET_SCAN; i++) {
    struct netOp* op = &g_netOps[(at + i) % CSN_NET_OPS];
    uint32_t free_ = 0;
    if (__atomic_load_n(&op->inUse, __ATOMIC_RELAXED) ||
        !__atomic_compare_exchange_n(&op->inUse, &free_, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      continue;
    op->peer = peer;
    for (int s = 0; s < CSN_NET_STEPS; s++) op->steps[s].state = NET_IDLE;
    __atomic_store_n(&op->c, c, __ATOMIC_SEQ_CST);
    return op;
  }
  __atomic_fetch_add(&c->netDropped, 1, __ATOMIC_RELAXED);
  return NULL;
}

// The step's wait, if one is open, ends at `now` and goes to its peer's totals. `busy` and the
// context pointer make a handshake with netFinalize (sequentially consistent stores and loads on
// both sides): either the finalize sees busy and waits for the add, or this sees the pointer gone.
static void netStepEnds(struct netStep* st, uint64_t now) {
  uint32_t state = st->state;
  st->state = NET_IDLE;
  if (state == NET_IDLE) return;
  struct netOp* op = &g_netOps[st->op % CSN_NET_OPS];
  uint64_t ns = now > st->since ? now - st->since : 0;
  __atomic_store_n(&op->busy, 1, __ATOMIC_SEQ_CST);
  struct ctx* c = __atomic_load_n(&op->c, __ATOMIC_SEQ_CST);
  if (c) {
    int p = op->peer;
    if (state == NET_SEND_WAIT) {
      __atomic_fetch_add(&c->netSendNs[p], ns, __ATOMIC_RELAXED);
      __atomic_fetch_add(&c->netSendSteps[p], 1, __ATOMIC_RELAXED);
    } else {
      __atomic_fetch_add(&c->netRecvNs[p], ns, __ATOMIC_RELAXED);
      __atomic_fetch_add(&c->netRecvSteps[p], 1, __ATOMIC_RELAXED);
    }
  }
  __atomic_store_n(&op->busy, 0, __ATOMIC_RELEASE);
}

// Before a context's memory goes: its records stop pointing at it, and an add in progress ends.
// (NCCL stops its proxy operations before it finalizes the profiler; this holds even if not.)
static void netFinalize(struct ctx* c) {
  for (int i = 0; i < CSN_NET_OPS; i++) {
    struct netOp* op = &g_netOps[i];
    struct ctx* cur = c;
    if (__atomic_load_n(&op->c, __ATOMIC_RELAXED) != c ||
        !__atomic_compare_exchange_n(&op->c, &cur, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      continue;
    while (__atomic_load_n(&op->busy, __ATOMIC_SEQ_CST)) sched_yield();
  }
}

// ---- the plugin interface --------------------------------------------------------------------

static int mkdirs(const char* dir) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char* p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  }
  return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static uint64_t instanceId(void) {
  uint64_t r = 0;
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd >= 0) {
    if (read(fd, &r, sizeof r) != sizeof r) r = 0;
    close(fd);
  }
  return r ^ nowNs(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
}

// Creates the block file under a temporary name, reserved and locked; -1 with errno set on failure.
// posix_fallocate, not ftruncate alone (as NCCL does for its own shared memory,
// src/misc/shmutils.cc): a sparse file in a full /dev/shm maps fine, and the first store into a
// page tmpfs cannot supply raises SIGBUS in the training process; a reserved file has every page,
// so a short /dev/shm fails here, with an error, and NCCL goes on without the plugin.
// The write lock (an open-file-description lock, held through c->fd until finalize, released by
// the kernel however the process ends) tells the sidecar that the writer is alive, across PID
// namespaces and whatever became of the pid: it removes a block only once the lock is free.
static int createBlock(struct ctx* c, const char* dir, const char* tmp, uint32_t* flags) {
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
    // twice: a sidecar may remove a finished communicator's empty directory in between
    if (mkdirs(dir) != 0) return -1;
    fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 && errno != ENOENT) return -1;
  }
  if (fd < 0) return -1;
  struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  *flags = fcntl(fd, F_OFD_SETLK, &lk) == 0 ? CSN_FLAG_WRITER_LOCK : 0;
  int e = posix_fallocate(fd, 0, (off_t)c->len);
  if (e != 0) {
    close(fd);
    unlink(tmp);
    errno = e;
    return -1;
  }
  c->map = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (c->map == MAP_FAILED) {
    e = errno;
    c->map = NULL;
    close(fd);
    unlink(tmp);
    errno = e;
    return -1;
  }
  return fd;
}

static void freeCtx(struct ctx* c) {
  free(c->peerWait), free(c->peerLast), free(c->peerLate), free(c->peerLateHist), free(c->peers);
  free(c->netSendNs), free(c->netSendSteps), free(c->netRecvNs), free(c->netRecvSteps);
  free(c);
}

static ncclResult_t csInit(void** context, uint64_t commId, int* eActivationMask,
                           const char* commName, int nNodes, int nranks, int rank,
                           ncclDebugLogger_t logfn) {
  *context = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  const char* p = getenv("COLLSCOPE_NCCL_PERIOD_US");
  if (p && atoi(p) > 0) g_periodUs = (uint64_t)atoi(p);
  const char* net = getenv("COLLSCOPE_NCCL_NET");
  __atomic_store_n(&g_netMask, net && !strcmp(net, "0") ? 0 : CSN_NET_MASK, __ATOMIC_RELAXED);
  const char* ks = getenv("COLLSCOPE_NCCL_KERNEL_SAMPLING");
  if (ks && *ks) {
    char* end;
    long v = strtol(ks, &end, 10);
    if (*end || v < 1) {
      logf_(NULL, NCCL_LOG_WARN, "COLLSCOPE_NCCL_KERNEL_SAMPLING=%s is not a positive integer; "
            "using %d", ks, CSN_KERNEL_SAMPLING_DEFAULT);
    } else {
      __atomic_store_n(&g_sampling, (uint64_t)v, __ATOMIC_RELAXED);
    }
  }
  struct ctx* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->fd = -1;
  c->lastFuncIndex = funcIndex(NULL);  // what a NULL name (the remembered pointer at first) maps to
  c->lastTypeSize = typeSize(NULL);
  c->commId = commId;
  c->rank = rank;
  c->nranks = nranks;
  c->nNodes = nNodes;
  c->log = logfn;
  c->clockLagMin = INT64_MAX;
  c->blockSize = blockSizeOf(nranks);
  c->len = c->blockSize + CSN_EXT_SIZE + (size_t)CSN_NET_ARRAYS * 8 * (size_t)nranks;
  c->peerWait = calloc(nranks, 8);
  c->peerLast = calloc(nranks, 8);
  c->peerLate = calloc(nranks, 8);
  c->peerLateHist = calloc((size_t)nranks * CB_LATE_BUCKETS, 8);
  c->peers = calloc(nranks, sizeof(struct peer));
  c->netSendNs = calloc(nranks, 8);
  c->netSendSteps = calloc(nranks, 8);
  c->netRecvNs = calloc(nranks, 8);
  c->netRecvSteps = calloc(nranks, 8);
  if (!c->peerWait || !c->peerLast || !c->peerLate || !c->peerLateHist || !c->peers ||
      !c->netSendNs || !c->netSendSteps || !c->netRecvNs || !c->netRecvSteps) {
    freeCtx(c);
    return ncclSystemError;
  }
  char dir[512], tmp[600];
  snprintf(dir, sizeof dir, "%s/%016llx", shmDir(), (unsigned long long)commId);
  ringPath(c->path, sizeof c->path, commId, rank);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", c->path, (int)getpid());
  uint32_t flags = 0;
  c->fd = createBlock(c, dir, tmp, &flags);
  if (c->fd < 0) {
    // One warning, and NCCL continues without the plugin for this communicator (it logs the
    // error and calls nothing else for it); the mask is left as it was.
    logf_(c, NCCL_LOG_WARN, "cannot create counter block %s (%zu bytes): %s; profiler off for "
          "comm %016llx", c->path, c->len, strerror(errno), (unsigned long long)commId);
    rmdir(dir);  // only if empty: other ranks' blocks stay
    freeCtx(c);
    return ncclSystemError;
  }
  uint8_t* m = c->map;
  put32(m, 0, CB_MAGIC);
  put32(m, 4, CB_LAYOUT_VERSION);
  put32(m, 8, (uint32_t)nranks);
  put32(m, 12, CSN_HIST_BUCKETS);
  put64(m, CB_OFF_CPS, 1000000000ull);
  uint8_t* x = m + c->blockSize;
  put32(x, CSN_X_VERSION, CSN_EXT_VERSION);
  put32(x, CSN_X_RANK, (uint32_t)rank);
  put32(x, CSN_X_NRANKS, (uint32_t)nranks);
  put64(x, CSN_X_COMM_ID, commId);
  put64(x, CSN_X_INSTANCE, instanceId());
  put64(x, CSN_X_PID, (uint64_t)getpid());
  put32(x, CSN_X_NNODES, (uint32_t)nNodes);
  put32(x, CSN_X_FLAGS, flags);
  snprintf((char*)x + CSN_X_COMM_NAME, 64, "%s", commName ? commName : "");
  __atomic_thread_fence(__ATOMIC_RELEASE);
  put32(x, CSN_X_MAGIC, CSN_EXT_MAGIC);
  // The header is complete before the file appears under its name (readers never see half).
  if (rename(tmp, c->path) != 0) {
    logf_(c, NCCL_LOG_WARN, "cannot rename %s: %s", tmp, strerror(errno));
  }
  pthread_mutex_lock(&g_lock);
  c->next = g_ctxs;
  g_ctxs = c;
  startPublisher(c);
  // NCCL's mask is one per process and read by other threads' enqueues at any time: it is only
  // ever stored whole (storeMask), never cleared on the way. A second communicator's init must
  // not make a concurrent collective of the first latch an empty mask (that collective would send
  // no API event, and this rank's count of collectives, hence its choice of timed ones, would
  // drift from the other ranks').
  g_mask = eActivationMask;
  setWant(c, chosen(0));
  storeMask();
  pthread_mutex_unlock(&g_lock);
  *context = c;
  logf_(c, NCCL_LOG_INFO, "comm %016llx rank %d/%d (%d nodes) -> %s", (unsigned long long)commId,
        rank, nranks, nNodes, c->path);
  return ncclSuccess;
}

static ncclResult_t csStartEvent(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* d) {
  *eHandle = NULL;
  struct ctx* c = context;
  if (!c || !d) return ncclSuccess;
  if (d->type == ncclProfileCollApi) {
    // Every collective of the communicator (NCCL sends it whatever else the mask it latched
    // holds, as long as the plugin is active), in the same order on every rank: collective k.
    uint64_t k = c->apiCount++;
    if (d->collApi.graphCaptured) {
      // Captured once, replayed any number of times with no host call per replay: counting it
      // would count the capture, not the replays. Refused, counted, said once.
      int kernel = (__atomic_load_n(g_mask, __ATOMIC_RELAXED) & ncclProfileKernelCh) != 0;
      graphCapture(c, kernel);
      __atomic_fetch_add(&c->graphRefused, 1, __ATOMIC_RELAXED);
      if (!__atomic_exchange_n(&c->warnedGraph, 1, __ATOMIC_RELAXED)) {
        logf_(c, NCCL_LOG_WARN,
              "comm %016llx rank %d: graph-captured collectives are not counted (refused; "
              "counted in graph_refused)", (unsigned long long)c->commId, c->rank);
      }
      *eHandle = &g_capturedApi;
      return ncclSuccess;
    }
    c->capture = CAPTURE_NONE;  // a capture ends at the communicator's first eager collective
    if (d->collApi.func != c->lastFunc) {
      c->lastFuncIndex = funcIndex(d->collApi.func);
      c->lastFunc = d->collApi.func;
    }
    if (d->collApi.datatype != c->lastType) {
      c->lastTypeSize = typeSize(d->collApi.datatype);
      c->lastType = d->collApi.datatype;
    }
    int f = c->lastFuncIndex;
    __atomic_fetch_add(&c->funcCalls[f], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->funcBytes[f], (uint64_t)d->collApi.count * c->lastTypeSize,
                       __ATOMIC_RELAXED);
    // Chosen: timed if NCCL latched KernelCh for it, which its Coll event will say.
    *eHandle = chosen(k) && !c->kernelOff ? &g_timedApi : &g_eagerApi;
    setWant(c, chosen(k + 1));
    return ncclSuccess;
  }
  if (d->type == ncclProfileColl) {
    // NCCL sends it only for a collective whose latched mask holds KernelCh (see CSN_BASE_MASK):
    // its channel events will come. Timed if this communicator chose it; another communicator's
    // choice (the mask is one per process) or a captured collective's replay gets no handle, so
    // its channel events are ignored.
    if (d->parentObj != &g_timedApi) return ncclSuccess;
    int f = funcIndex(d->coll.func);
    uint64_t h = c->head;
    struct slot* s = &c->pool[h % CSN_POOL];
    if (LD(&s->state) != SLOT_FREE) {
      __atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
      return ncclSuccess;
    }
    s->func = f;
    s->key = ((d->coll.seqNumber << 3) | (uint64_t)(f & 7)) + 1;
    s->weight = __atomic_load_n(&g_sampling, __ATOMIC_RELAXED);
    // At most one collective in 8 reads the host clock (launch delay, GPU clock offset): a clock
    // read is the callback's largest cost (20 ns with the vDSO, 400 ns on VMs without it).
    s->hostStartNs = s->weight >= 8 || (d->coll.seqNumber & 7) == 0 ? nowNs(CLOCK_REALTIME) : 0;
    s->gpuStart = UINT64_MAX;
    s->gpuStop = 0;
    s->seenAt = 0;
    s->completedAt = 0;
    s->doneSeenAt = 0;
    s->settledN = 0;
    s->started = 0;
    s->done = 0;
    // 0 on NCCL 2.28.9's CollNet path: completion then waits for the channels to settle
    __atomic_store_n(&s->nChannels, d->coll.nChannels, __ATOMIC_RELAXED);
    ST(&s->state, SLOT_OPEN);
    ST(&c->head, h + 1);
    *eHandle = s;
    return ncclSuccess;
  }
  if (d->type == ncclProfileKernelCh) {
    struct slot* s = d->parentObj;
    // Only timed collectives have a handle (their slot); an untimed one's parent is NULL.
    if (!s || s == (void*)&g_capturedApi || s == (void*)&g_eagerApi || s == (void*)&g_timedApi)
      return ncclSuccess;
    int ch = d->kernelCh.channelId % CSN_MAX_CHANNELS;
    uint64_t t = d->kernelCh.pTimer;
    uint64_t cur = LD(&s->gpuStart);
    while (t < cur && !__atomic_compare_exchange_n(&s->gpuStart, &cur, t, 0, __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE)) {
    }
    if (ch == 0 && s->hostStartNs) {  // the sampled collectives' first channel
      int64_t lag = (int64_t)(nowNs(CLOCK_REALTIME) - t);
      int64_t lm = LD(&c->clockLagMin);
      while (lag < lm && !__atomic_compare_exchange_n(&c->clockLagMin, &lm, lag, 0,
                                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      }
    }
    __atomic_fetch_add(&s->started, 1, __ATOMIC_ACQ_REL);
    // The channel's handle is its collective's slot: its stop only needs the slot.
    *eHandle = s;
    return ncclSuccess;
  }
  if (d->type == ncclProfileProxyOp) {
    *eHandle = netOpStart(c, d->proxyOp.peer);
    return ncclSuccess;
  }
  if (d->type == ncclProfileProxyStep) {
    // A step of an operation the plugin follows (its parent is a record of the pool): the step's
    // handle is its place in the record, reset for this step.
    if (!d->parentObj || !isNetOp(d->parentObj)) return ncclSuccess;
    struct netOp* op = d->parentObj;
    struct netStep* st = &op->steps[(unsigned)d->proxyStep.step % CSN_NET_STEPS];
    st->state = NET_IDLE;
    st->op = (uint32_t)(op - g_netOps);
    *eHandle = st;
    return ncclSuccess;
  }
  return ncclSuccess;  // Group, P2p and the rest: not enabled or not counted
}

static ncclResult_t csStopEvent(void* eHandle) {
  // Coll stops right after launch; KernelCh completes in recordEventState
  if (!eHandle) return ncclSuccess;
  if (isNetStep(eHandle)) {
    netStepEnds(eHandle, nowNs(CLOCK_MONOTONIC));
  } else if (isNetOp(eHandle)) {
    struct netOp* op = eHandle;
    ST(&op->inUse, 0);
  }
  return ncclSuccess;
}

static ncclResult_t csRecordEventState(void* eHandle, ncclProfilerEventState_v6_t state,
                                       ncclProfilerEventStateArgs_v6_t* a) {
  if (eHandle && isNetStep(eHandle)) {
    struct netStep* st = eHandle;
    if (state == ncclProfilerProxyStepSendWait || state == ncclProfilerProxyStepRecvWait) {
      st->since = nowNs(CLOCK_MONOTONIC);
      st->state = state == ncclProfilerProxyStepSendWait ? NET_SEND_WAIT : NET_RECV_WAIT;
    } else if (state == ncclProfilerProxyStepRecvFlushWait ||
               state == ncclProfilerProxyStepRecvGPUWait) {
      netStepEnds(st, nowNs(CLOCK_MONOTONIC));  // the data arrived
    }
    return ncclSuccess;
  }
  if (!eHandle || state != ncclProfilerKernelChStop || !a) return ncclSuccess;
  struct slot* s = eHandle;  // a KernelCh handle is its collective's slot
  uint64_t t = a->kernelCh.pTimer;
  uint64_t cur = LD(&s->gpuStop);
  while (t > cur && !__atomic_compare_exchange_n(&s->gpuStop, &cur, t, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
  }
  __atomic_fetch_add(&s->done, 1, __ATOMIC_ACQ_REL);
  return ncclSuccess;
}

static ncclResult_t csFinalize(void* context) {
  struct ctx* c = context;
  if (!c) return ncclSuccess;
  pthread_mutex_lock(&g_lock);
  setWant(c, 0);
  c->capture = CAPTURE_NONE;
  if (c->kernelOff) {  // its counters are gone with it: the process-wide veto may end
    __atomic_fetch_sub(&g_tainted, 1, __ATOMIC_RELAXED);
    storeMask();
  }
  netFinalize(c);
  drain(c, 1);
  publish(c, 1);
  for (struct ctx** pp = &g_ctxs; *pp; pp = &(*pp)->next) {
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  }
  if (!g_ctxs) {
    // The last one: NCCL dlcloses the library next (when no communicator of its own is left
    // either). Nothing of the plugin may run after that: no events for communicators whose init
    // failed, no thread.
    if (g_mask) __atomic_store_n(g_mask, 0, __ATOMIC_RELAXED);
    stopPublisher(c);  // releases g_lock
  } else {
    pthread_mutex_unlock(&g_lock);
  }
  for (int p = 0; p < c->nranks; p++)
    if (c->peers[p].map) munmap(c->peers[p].map, c->peers[p].len);
  munmap(c->map, c->len);  // the file stays for the sidecar's last read; it removes it
  close(c->fd);            // and the write lock goes: the sidecar may remove the file
  freeCtx(c);
  return ncclSuccess;
}

// At dlclose (or exit) with contexts NCCL never finalized (NCCL itself finalizes them all before
// its dlclose): the thread must not outlive the code it runs. Not in a forked child, which has no
// such thread, and whose copy of g_lock may be held forever by the parent's publisher: the pid is
// looked at before the lock is taken, so a child's exit never waits on it.
__attribute__((destructor)) static void unloading(void) {
  struct publisher* p = __atomic_load_n(&g_pub, __ATOMIC_ACQUIRE);
  if (!p || p->pid != getpid()) return;
  pthread_mutex_lock(&g_lock);
  stopPublisher(NULL);  // releases g_lock
}

// v5 descriptors are a prefix of v6's (the union only gained CE members): one implementation.
typedef ncclResult_t (*startV5_t)(void*, void**, ncclProfilerEventDescr_v5_t*);
typedef ncclResult_t (*recordV5_t)(void*, ncclProfilerEventState_v5_t,
                                   ncclProfilerEventStateArgs_v5_t*);

EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    "collscope", csInit, csStartEvent, csStopEvent, csRecordEventState, csFinalize};
EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    "collscope", csInit, (startV5_t)csStartEvent, csStopEvent, (recordV5_t)csRecordEventState,
    csFinalize};

// ---- control and test entry points (not called by NCCL) --------------------------------------

// Turns the plugin's events on or off for every communicator of this process from the next
// collective on (NCCL reads the mask at each enqueue): the same-process A/B of the overhead
// benchmark. Both ranks must switch at the same point of their program.
EXPORT void collscope_nccl_set_active(int on) {
  pthread_mutex_lock(&g_lock);
  __atomic_store_n(&g_active, on, __ATOMIC_RELAXED);
  storeMask();
  pthread_mutex_unlock(&g_lock);
}

// Times 1 collective in n per communicator from the next one on (the overhead benchmark's
// variants in one process; COLLSCOPE_NCCL_KERNEL_SAMPLING at start-up). All ranks must switch at
// the same point of their program, so that they time the same collectives.
EXPORT void collscope_nccl_set_kernel_sampling(int n) {
  if (n < 1) n = 1;
  pthread_mutex_lock(&g_lock);
  __atomic_store_n(&g_sampling, (uint64_t)n, __ATOMIC_RELAXED);
  for (struct ctx* c = g_ctxs; c; c = c->next) setWant(c, chosen(c->apiCount));
  storeMask();
  pthread_mutex_unlock(&g_lock);
}

// One publisher pass over every context, for drivers that set COLLSCOPE_NCCL_NO_THREAD=1;
// force=1 closes every open collective without waiting for late peers.
EXPORT int collscope_nccl_poll(int force) {
  int n = 0;
  pthread_mutex_lock(&g_lock);
  for (struct ctx* c = g_ctxs; c; c = c->next) {
    n += drain(c, force);
    publish(c, 0);
  }
  pthread_mutex_unlock(&g_lock);
  return n;
}
