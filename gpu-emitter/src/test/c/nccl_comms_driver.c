// One rank's process with several communicators, as NCCL 2.28.9 drives the profiler plugin: one
// event mask for the process, latched at each collective's enqueue
// (ncclProfilerStartGroupApiEvent) and then used for every event of that collective: CollApi when
// it holds CollApi, Coll or KernelCh; Coll when it holds Coll or KernelCh; channel events when it
// holds KernelCh. Graph-captured
// collectives are modelled with NCCL's per-channel profiler counters: a captured collective
// without KernelCh moves them apart at every replay, after which any KernelCh collective of that
// communicator (captured, or eager later) waits for a counter that never comes, and
// ncclCommDestroy hangs (the plugin's README, run 60): such a communicator is reported "would
// hang". No NCCL, no GPU; run with COLLSCOPE_SHM_DIR=dir COLLSCOPE_NCCL_NO_THREAD=1 and
// COLLSCOPE_NCCL_KERNEL_SAMPLING=N (N > 1). NcclProfilerPluginTest reads the blocks afterwards.
//   nccl_comms_driver LIB veto      A captures collectives without KernelCh while B samples on
//   nccl_comms_driver LIB latch     the mask changes between NCCL's latch and the plugin's CollApi
//   nccl_comms_driver LIB initrace  another thread creates and destroys communicators while A runs
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../main/c/nccl-profiler/nccl/err.h"
#include "../../main/c/nccl-profiler/nccl/profiler.h"

#define API_MASK (ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh)
#define TASK_MASK (ncclProfileColl | ncclProfileKernelCh)

static ncclProfiler_v5_t* g_p;
static int (*g_poll)(int);
static int g_mask;  // NCCL's ncclProfilerEventMask

struct comm {
  const char* name;
  uint64_t id;
  void* ctx;
  uint64_t seq;  // NCCL's seqNumber: not moved by a captured collective without KernelCh
  long capturedWith, capturedWithout, kernelAfterWithout;
  long timed;                 // collectives whose channel events the plugin took (a handle)
};

static void logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt,
                   ...) {
  (void)l, (void)f, (void)file, (void)line, (void)fmt;
}

static uint64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void init(struct comm* c, const char* name, uint64_t id) {
  memset(c, 0, sizeof *c);
  c->name = name;
  c->id = id;
  if (g_p->init(&c->ctx, id, &g_mask, name, 1, 1, 0, logger) != ncclSuccess || !c->ctx) {
    fprintf(stderr, "init %s failed\n", name);
    exit(1);
  }
}

static int latch(void) { return __atomic_load_n(&g_mask, __ATOMIC_RELAXED); }

// The events of one collective whose enqueue latched mask m.
static void events(struct comm* c, int m, int captured) {
  if (captured) {
    if (m & ncclProfileKernelCh) c->capturedWith++;
    else c->capturedWithout++;
  } else if ((m & ncclProfileKernelCh) && c->capturedWithout) {
    c->kernelAfterWithout++;
  }
  if (!(m & API_MASK)) return;
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  void* api = NULL;
  d.type = ncclProfileCollApi;
  d.collApi.func = "AllReduce";
  d.collApi.count = 1024;
  d.collApi.datatype = "ncclFloat32";
  d.collApi.graphCaptured = captured;
  g_p->startEvent(c->ctx, &api, &d);
  if (api) g_p->stopEvent(api);
  // NCCL 2.28.9 moves seqNumber for a captured collective only when it has KernelCh
  uint64_t seq = captured && !(m & ncclProfileKernelCh) ? c->seq : c->seq++;
  if (!(m & TASK_MASK)) return;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = api;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  void* coll = NULL;
  g_p->startEvent(c->ctx, &coll, &d);
  if (coll) g_p->stopEvent(coll);
  if (!(m & ncclProfileKernelCh)) return;
  uint64_t t = nowNs();
  int took = 0;
  for (int ch = 0; ch < 2; ch++) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = coll;
    d.kernelCh.channelId = (uint8_t)ch;
    d.kernelCh.pTimer = t;
    void* h = NULL;
    g_p->startEvent(c->ctx, &h, &d);
    if (!h) continue;
    took = 1;
    ncclProfilerEventStateArgs_v5_t a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = t + 5000;
    g_p->recordEventState(h, ncclProfilerKernelChStop, &a);
    g_p->stopEvent(h);
  }
  c->timed += took;
}

static void collective(struct comm* c, int captured) { events(c, latch(), captured); }

static void report(struct comm* c) {
  int hang = c->capturedWithout > 0 && (c->capturedWith > 0 || c->kernelAfterWithout > 0);
  printf("comm %s captured with %ld without %ld, kernel-channel after %ld, timed %ld: %s\n",
         c->name, c->capturedWith, c->capturedWithout, c->kernelAfterWithout, c->timed,
         hang ? "would hang" : "ok");
}

// Until NCCL would latch no KernelCh: neither communicator's next collective is timed.
static void untilNoKernel(struct comm* a, struct comm* b) {
  for (int i = 0; i < 10000 && (latch() & ncclProfileKernelCh); i++) {
    collective(a, 0);
    if (b) collective(b, 0);
  }
  if (latch() & ncclProfileKernelCh) {
    fprintf(stderr, "the mask never lost KernelCh\n");
    exit(1);
  }
}

static struct comm g_a;
static volatile int g_initsDone;
static long g_enqueued, g_noApi;

static void* initLoop(void* arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) {
    struct comm c;
    init(&c, "churn", 0xc4a2000ull + (uint64_t)i % 4);
    g_p->finalize(c.ctx);
  }
  __atomic_store_n(&g_initsDone, 1, __ATOMIC_RELEASE);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s LIB veto|latch|initrace\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  g_p = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
  g_poll = lib ? (int (*)(int))dlsym(lib, "collscope_nccl_poll") : NULL;
  if (!g_p || !g_poll) {
    fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  const char* mode = argv[2];
  struct comm b;
  if (!strcmp(mode, "veto")) {
    // A captures 5 collectives, the first enqueued without KernelCh; then both communicators go
    // on with eager collectives under sampling. None of A's may get KernelCh while A lives; once
    // A is destroyed, B is timed again.
    init(&g_a, "A", 0xa0a0a0ull);
    init(&b, "B", 0xb0b0b0ull);
    for (int i = 0; i < 100; i++) collective(&g_a, 0), collective(&b, 0);
    untilNoKernel(&g_a, &b);
    for (int i = 0; i < 5; i++) collective(&g_a, 1);
    for (int i = 0; i < 500; i++) collective(&g_a, 0), collective(&b, 0);
    report(&g_a);
    g_poll(1);
    g_p->finalize(g_a.ctx);
    long before = b.timed;
    for (int i = 0; i < 300; i++) collective(&b, 0);
    report(&b);
    printf("B timed after A's finalize %ld\n", b.timed - before);
    g_poll(1);
    g_p->finalize(b.ctx);
  } else if (!strcmp(mode, "latch")) {
    // 40 times: a communicator B_t captures a collective without KernelCh, which keeps KernelCh
    // out of the mask; A's next collective is enqueued (NCCL latches the mask); then, before A's
    // CollApi reaches the plugin (another thread), B_t's capture ends and B_t is destroyed, which
    // may put KernelCh back. Whatever the mask says by then, A's collective has no channel events:
    // the plugin must not take it for a timed one (a timed slot that never completes is closed
    // as stale, and the other ranks, which timed it, find no arrival from this one).
    init(&g_a, "A", 0xa0a0a0ull);
    for (int t = 0; t < 40; t++) {
      init(&b, "B", 0xb0b000ull + (uint64_t)t);
      untilNoKernel(&g_a, &b);
      collective(&b, 1);
      collective(&g_a, 0);  // whether A's next collective is timed is drawn here
      int m = latch();      // A's next enqueue
      collective(&b, 0);
      g_p->finalize(b.ctx);
      events(&g_a, m, 0);  // A's events, with the mask NCCL latched
      for (int i = 0; i < 3; i++) collective(&g_a, 0);
    }
    g_poll(1);
    report(&g_a);
    g_p->finalize(g_a.ctx);
  } else if (!strcmp(mode, "initrace")) {
    // A's collectives on this thread while another thread creates and destroys 2000
    // communicators. Every enqueue of A must latch a mask with CollApi in it: a collective that
    // latched none sends the plugin nothing, and this rank's count of A's collectives (hence
    // its choice of timed ones) falls behind the other ranks'.
    init(&g_a, "A", 0xa0a0a0ull);
    pthread_t t;
    pthread_create(&t, NULL, initLoop, NULL);
    while (!__atomic_load_n(&g_initsDone, __ATOMIC_ACQUIRE)) {
      int m = latch();
      g_enqueued++;
      if (!(m & ncclProfileCollApi)) g_noApi++;
      events(&g_a, m, 0);
    }
    pthread_join(t, NULL);
    printf("enqueued %ld latched without CollApi %ld\n", g_enqueued, g_noApi);
    g_poll(1);
    g_p->finalize(g_a.ctx);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}
