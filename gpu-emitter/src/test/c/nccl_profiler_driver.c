// Drives libnccl-profiler-collscope.so the way NCCL does, without NCCL or a GPU: for each rank a
// profiler context of one communicator, then per collective the events NCCL sends (CollApi, Coll
// on the user thread; KernelCh start and KernelChStop per channel) with made-up %globaltimer
// values, so a test can check the counter blocks the plugin fills (NcclProfilerPluginTest).
// As NCCL 2.28.9, it reads the plugin's event mask at each collective's enqueue and sends only the
// events that mask enables: CollApi when it holds CollApi, Coll or KernelCh; Coll when it holds
// Coll or KernelCh (ncclProfilerStartTaskEvents); channel events when it holds KernelCh (the
// plugin times 1 collective in COLLSCOPE_NCCL_KERNEL_SAMPLING).
//   nccl_profiler_driver LIB VERSION(5|6) RANKS COLLECTIVES LATE_RANK LATE_NS [CAPTURED [LOSE [AFTER]]]
// Run with COLLSCOPE_SHM_DIR=dir and COLLSCOPE_NCCL_NO_THREAD=1: it polls the publisher itself.
// The function and datatype names come at another address every other collective (the same
// text: the plugin remembers the last pointer it matched); COLLSCOPE_DRIVER_MIXED_TYPES=1 rotates
// the datatype of 1024 elements through float32, bfloat16, float32 (a copy), int64: 18 KiB per
// 4 collectives. COLLSCOPE_DRIVER_FUNC=NAME: the collectives' function name (NCCL's own strings,
// "AllReduce" by default). COLLSCOPE_DRIVER_COLLNET=1: the Coll event says nChannels 0, as NCCL
// 2.28.9's CollNet path does (the channel events still come for its 2 channels).
// COLLSCOPE_DRIVER_HOLD=1: at the end, print "holding" and stay alive, with the contexts (and their
// files' locks) as they are, until stdin closes or the process is killed: a live writer.
// Rank LATE_RANK's kernels start LATE_NS after the others' and take LATE_NS less (the others
// wait for it inside their kernels); CAPTURED more collectives are graph-captured (refused).
// LOSE > 0: rank 0 never gets the stop of channel 1 of one collective in LOSE (a lost event),
// never the last one: a lost collective is known lost once a later one is done. AFTER more eager
// collectives follow the captured ones. It prints how many (collective, rank) pairs were enqueued
// with KernelCh in the mask: in all, among the captured ones, among those after the capture.
// Several nodes (NcclMultiNodeITCase): COLLSCOPE_DRIVER_WORLD=W (the communicator's ranks; default
// RANKS), COLLSCOPE_DRIVER_FIRST_RANK=F (this process, one "node", hosts ranks F..F+RANKS-1) and
// COLLSCOPE_DRIVER_NODES=N (the nNodes NCCL passes to init); every node's driver runs the same
// collectives with the same made-up times, so their kernel lengths join across processes.
// COLLSCOPE_DRIVER_LATE_RANKS=a,b,...: these (global) ranks are late instead of LATE_RANK (a slow
// node). COLLSCOPE_DRIVER_JITTER_NS=J: each (collective, rank) starts up to J ns later, the same
// pseudo-random amount in every process. COLLSCOPE_DRIVER_PACE_US=P: sleep P us after each
// collective, so a run spans several of the job's windows. COLLSCOPE_DRIVER_COMM=HEX: the
// communicator's hash (default c0115c09e), so several communicators can run side by side.
// Network proxy events (when the mask holds ProxyOp/ProxyStep, as NCCL's net transport sends them):
// after a collective's channels, each rank's channel 0 sends to its ring successor and receives
// from its predecessor, channel 1 the other way round; an operation whose peer is on another node
// (nodes of COLLSCOPE_DRIVER_RANKS_PER_NODE=K consecutive ranks, default RANKS: this process is one
// node) gets a ProxyOp and 4 ProxyStep events with NCCL's state sequence (send: SendGPUWait,
// SendPeerWait, SendWait, stop; receive: RecvWait, RecvGPUWait, stop).
// COLLSCOPE_DRIVER_SLOW_LINK=FROM:TO:NS: the link from global rank FROM to TO takes NS ns per step
// (the driver sleeps that long in the sender's SendWait and the receiver's RecvWait).
#include <time.h>
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../main/c/nccl-profiler/nccl/err.h"
#include "../../main/c/nccl-profiler/nccl/profiler.h"

static void sleepNs(unsigned long long ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

typedef ncclResult_t (*start_t)(void*, void**, ncclProfilerEventDescr_v6_t*);
typedef ncclResult_t (*record_t)(void*, ncclProfilerEventState_v6_t,
                                 ncclProfilerEventStateArgs_v6_t*);

// One network proxy operation of rank `self` with `peer`, as NCCL's net transport reports it.
static void proxyOp(void* ctx, start_t start, record_t record, ncclResult_t (*stop)(void*),
                    void* parent, int self, int peer, int channel, int isSend,
                    unsigned long long slowNs) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.parentObj = parent;
  d.rank = self;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = (unsigned char)channel;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 4;
  d.proxyOp.chunkSize = 1 << 17;
  d.proxyOp.isSend = isSend;
  void* op = NULL;
  start(ctx, &op, &d);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  for (int step = 0; step < 4; step++) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyStep;
    d.parentObj = op;
    d.rank = self;
    d.proxyStep.step = step;
    void* h = NULL;
    start(ctx, &h, &d);
    if (!h) continue;
    if (isSend) {
      record(h, ncclProfilerProxyStepSendGPUWait, &a);
      record(h, ncclProfilerProxyStepSendPeerWait_v4, &a);
      record(h, ncclProfilerProxyStepSendWait, &a);
      if (slowNs) sleepNs(slowNs);
    } else {
      record(h, ncclProfilerProxyStepRecvWait, &a);
      if (slowNs) sleepNs(slowNs);
      record(h, ncclProfilerProxyStepRecvGPUWait, &a);
    }
    stop(h);
  }
  if (op) stop(op);
}

static void logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt,
                   ...) {
  (void)l, (void)f, (void)file, (void)line, (void)fmt;
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s LIB VERSION RANKS COLLECTIVES LATE_RANK LATE_NS [CAPTURED]\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  int version = atoi(argv[2]), ranks = atoi(argv[3]), n = atoi(argv[4]), lateRank = atoi(argv[5]);
  unsigned long long lateNs = strtoull(argv[6], NULL, 10);
  int captured = argc > 7 ? atoi(argv[7]) : 0;
  int lose = argc > 8 ? atoi(argv[8]) : 0;
  int after = argc > 9 ? atoi(argv[9]) : 0;
  ncclProfiler_v6_t* p6 = version == 6 ? dlsym(lib, "ncclProfiler_v6") : NULL;
  ncclProfiler_v5_t* p5 = version == 5 ? dlsym(lib, "ncclProfiler_v5") : NULL;
  int (*poll)(int) = (int (*)(int))dlsym(lib, "collscope_nccl_poll");
  if ((!p6 && !p5) || !poll) {
    fprintf(stderr, "missing symbols for version %d\n", version);
    return 1;
  }
  void* ctx[64];
  int mask = 0;
  const char* ev = getenv("COLLSCOPE_DRIVER_COMM");  // the communicator's hash, hex
  const unsigned long long comm = ev && *ev ? strtoull(ev, NULL, 16) : 0xc0115c09eULL;
  ev = getenv("COLLSCOPE_DRIVER_WORLD");
  int world = ev && *ev ? atoi(ev) : ranks;
  ev = getenv("COLLSCOPE_DRIVER_FIRST_RANK");
  int first = ev && *ev ? atoi(ev) : 0;
  ev = getenv("COLLSCOPE_DRIVER_NODES");
  int nodes = ev && *ev ? atoi(ev) : 1;
  ev = getenv("COLLSCOPE_DRIVER_JITTER_NS");
  unsigned long long jitterNs = ev && *ev ? strtoull(ev, NULL, 10) : 0;
  ev = getenv("COLLSCOPE_DRIVER_PACE_US");
  int paceUs = ev && *ev ? atoi(ev) : 0;
  ev = getenv("COLLSCOPE_DRIVER_RANKS_PER_NODE");
  int perNode = ev && *ev ? atoi(ev) : ranks;
  if (perNode < 1) perNode = 1;
  int slowFrom = -1, slowTo = -1;
  unsigned long long slowLinkNs = 0;
  ev = getenv("COLLSCOPE_DRIVER_SLOW_LINK");
  if (ev && *ev && sscanf(ev, "%d:%d:%llu", &slowFrom, &slowTo, &slowLinkNs) != 3) {
    fprintf(stderr, "COLLSCOPE_DRIVER_SLOW_LINK=%s: not FROM:TO:NS\n", ev);
    return 2;
  }
  start_t startEv = p6 ? p6->startEvent : (start_t)p5->startEvent;
  record_t record = p6 ? p6->recordEventState : (record_t)p5->recordEventState;
  ncclResult_t (*stopEv)(void*) = p6 ? p6->stopEvent : p5->stopEvent;
  int netOps = 0;
  char late[64] = {0};
  ev = getenv("COLLSCOPE_DRIVER_LATE_RANKS");
  if (ev && *ev) {
    for (const char* s = ev; *s;) {
      int g = atoi(s);
      if (g >= 0 && g < 64) late[g] = 1;
      while (*s && *s != ',') s++;
      if (*s == ',') s++;
    }
  } else if (lateRank >= 0 && lateRank < 64) {
    late[lateRank] = 1;
  }
  if (ranks > 64 || world > 64 || first + ranks > world) {
    fprintf(stderr, "ranks %d from %d of %d: at most 64, within the world\n", ranks, first, world);
    return 2;
  }
  for (int r = 0; r < ranks; r++) {
    ncclResult_t e = p6 ? p6->init(&ctx[r], comm, &mask, "driver", nodes, world, first + r, logger)
                        : p5->init(&ctx[r], comm, &mask, "driver", nodes, world, first + r, logger);
    if (e != ncclSuccess) {
      fprintf(stderr, "init rank %d: %d\n", r, e);
      return 1;
    }
  }
  printf("mask %d\n", mask);
  const char* mt = getenv("COLLSCOPE_DRIVER_MIXED_TYPES");
  int mixedTypes = mt && *mt == '1';
  const char* fn = getenv("COLLSCOPE_DRIVER_FUNC");
  const char* func = fn && *fn ? fn : "AllReduce";
  const char* cn = getenv("COLLSCOPE_DRIVER_COLLNET");
  int collnet = cn && *cn == '1';
  char* funcCopy = strdup(func);
  char* f32Copy = strdup("ncclFloat32");
  const char* mixed[4] = {"ncclFloat32", "ncclBfloat16", f32Copy, "ncclInt64"};
  unsigned long long t = 1700000000000000000ULL;
  const int nch = 2;
  int kernelColls = 0, kernelCaptured = 0, kernelAfter = 0;  // (collective, rank) pairs
                                                             // enqueued with KernelCh in the mask
  for (int i = 0; i < n + captured + after; i++) {
    int isCaptured = i >= n && i < n + captured;
    for (int r = 0; r < ranks; r++) {
      int m = __atomic_load_n(&mask, __ATOMIC_RELAXED);  // NCCL: at the collective's enqueue
      if (!(m & (ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh))) continue;
      ncclProfilerEventDescr_v6_t d;
      memset(&d, 0, sizeof d);
      void* api = NULL;
      d.type = ncclProfileCollApi;
      d.collApi.func = i % 2 ? funcCopy : func;
      d.collApi.count = 1024;
      d.collApi.datatype = mixedTypes ? mixed[i % 4] : i % 2 ? f32Copy : "ncclFloat32";
      d.collApi.graphCaptured = isCaptured;
      if (p6) p6->startEvent(ctx[r], &api, &d);
      else p5->startEvent(ctx[r], &api, (ncclProfilerEventDescr_v5_t*)&d);
      if (api && p6) p6->stopEvent(api);
      else if (api) p5->stopEvent(api);
      if (!(m & (ncclProfileColl | ncclProfileKernelCh))) continue;  // no task event
      memset(&d, 0, sizeof d);
      d.type = ncclProfileColl;
      d.parentObj = api;
      d.rank = first + r;
      d.coll.seqNumber = (unsigned long long)i;
      d.coll.func = i % 2 ? funcCopy : func;
      d.coll.count = 1024;
      d.coll.datatype = mixedTypes ? mixed[i % 4] : i % 2 ? f32Copy : "ncclFloat32";
      d.coll.nChannels = collnet ? 0 : nch;
      d.coll.algo = "RING";
      d.coll.proto = "LL";
      void* coll = NULL;
      if (p6) p6->startEvent(ctx[r], &coll, &d);
      else p5->startEvent(ctx[r], &coll, (ncclProfilerEventDescr_v5_t*)&d);
      if (coll && p6) p6->stopEvent(coll);
      else if (coll) p5->stopEvent(coll);
      if (!(m & ncclProfileKernelCh)) continue;  // no profiler proxy op: no channel events
      kernelColls++;
      kernelCaptured += isCaptured;
      kernelAfter += i >= n + captured;
      // Late ranks start late; everybody ends together, 10 us after the last start could be.
      unsigned long long z = (unsigned long long)i * 64 + (unsigned long long)(first + r) + 1;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;  // splitmix64's finaliser: the same jitter in
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;  // every process for (collective, rank)
      z ^= z >> 31;
      unsigned long long start = t + (late[first + r] ? lateNs : 0) + (jitterNs ? z % jitterNs : 0);
      unsigned long long stop = t + lateNs + jitterNs + 10000;
      for (int c = 0; c < nch; c++) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileKernelCh;
        d.parentObj = coll;
        d.kernelCh.channelId = (unsigned char)c;
        d.kernelCh.pTimer = start + (unsigned long long)c * 100;  // channels start 100 ns apart
        void* ch = NULL;
        if (p6) p6->startEvent(ctx[r], &ch, &d);
        else p5->startEvent(ctx[r], &ch, (ncclProfilerEventDescr_v5_t*)&d);
        if (!ch) continue;  // NCCL records and stops only a channel that has a handle
        ncclProfilerEventStateArgs_v6_t a;
        memset(&a, 0, sizeof a);
        a.kernelCh.pTimer = stop;
        if (lose > 0 && r == 0 && c == 1 && i % lose == lose / 2) continue;  // lost
        if (p6) p6->recordEventState(ch, ncclProfilerKernelChStop, &a);
        else p5->recordEventState(ch, ncclProfilerKernelChStop, &a);
        if (p6) p6->stopEvent(ch);
        else p5->stopEvent(ch);
      }
      if (!(m & ncclProfileProxyOp)) continue;  // no network proxy events for this collective
      int g = first + r;
      int next = (g + 1) % world, prev = (g + world - 1) % world;
      for (int c = 0; c < nch; c++) {
        int to = c == 0 ? next : prev, from = c == 0 ? prev : next;
        if (to / perNode != g / perNode) {
          proxyOp(ctx[r], startEv, record, stopEv, coll, g, to, c, 1,
                  g == slowFrom && to == slowTo ? slowLinkNs : 0);
          netOps++;
        }
        if (from / perNode != g / perNode) {
          proxyOp(ctx[r], startEv, record, stopEv, coll, g, from, c, 0,
                  from == slowFrom && g == slowTo ? slowLinkNs : 0);
          netOps++;
        }
      }
    }
    t += lateNs + jitterNs + 100000;
    if (i % 64 == 63) poll(0);
    if (paceUs > 0) usleep(paceUs);
  }
  poll(0);
  // past the plugin's grace for a slot a later one overtook, and a CollNet collective's settling
  if (lose > 0 || collnet) usleep(30000);
  poll(0);
  poll(0);  // a rank drained before its peer in a pass finds the peer's arrival in the next
  // COLLSCOPE_DRIVER_NO_FINALIZE=1: leave the blocks as the publisher left them (finalize closes
  // every open collective, which would hide a publisher stuck before it).
  const char* nf = getenv("COLLSCOPE_DRIVER_NO_FINALIZE");
  for (int r = 0; r < ranks && !(nf && *nf == '1'); r++) {
    if (p6) p6->finalize(ctx[r]);
    else p5->finalize(ctx[r]);
  }
  printf("kernel-channel collectives %d\n", kernelColls);
  printf("kernel-channel captured %d after %d\n", kernelCaptured, kernelAfter);
  printf("network proxy operations %d\n", netOps);
  printf("done %d collectives on %d ranks\n", n, ranks);
  const char* hold = getenv("COLLSCOPE_DRIVER_HOLD");
  if (hold && *hold == '1') {
    printf("holding\n");
    fflush(stdout);
    while (getchar() != EOF) {
    }
  }
  return 0;
}
