// A stand-in for libnccl.so.2 and the CUDA runtime in one library, so that dev/nccl_overhead_direct.c
// runs on a machine without NCCL or a GPU (NcclOverheadDirectTest): "device" memory is host
// memory, an all-reduce sums the ranks' send buffers, a CUDA event is a host clock reading. Like
// NCCL it loads the profiler plugin NCCL_PROFILER_PLUGIN names (its ncclProfiler_v5), gives it one
// context per communicator and one event mask for the process, reads the mask at each
// collective's enqueue and sends the events enabled in it as NCCL 2.28.9 does (CollApi when it
// holds CollApi, Coll or KernelCh; Coll when it holds Coll or KernelCh; KernelCh start,
// KernelChStop, stop for 2 channels, with made-up %globaltimer values). At the last
// ncclCommDestroy it prints how many (collective, rank) pairs it enqueued with KernelCh.
// Ungrouped collectives may come from several threads at once (the harness's --threads 1), one
// communicator each, as NCCL allows: the plugin's events are sent from the calling thread
// unserialized, and only the stand-in's own sum of the buffers is done under a lock.
// ncclGetUniqueId / ncclCommInitRank (the harness's --processes 1) give a process one
// communicator of a larger world; the stand-in cannot see the other processes' buffers, so its
// all-reduce of such a communicator takes every rank to have sent what this one sent (the harness
// sends ones everywhere).
//   gcc -O1 -fPIC -shared -o libnccl-direct-standin.so nccl_direct_standin.c -ldl
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

#define MAX_COMMS 8

struct comm {
  int rank, nranks;
  void* ctx;
  uint64_t seq;
  const float* send;
  float* recv;
  size_t count;
};

static ncclProfiler_v5_t* g_prof;
static int g_mask;
static struct comm g_comms[MAX_COMMS];
static int g_ncomms, g_live, g_grouped;
static int g_cross;  // this process's communicator spans other processes (ncclCommInitRank)

typedef struct {
  char internal[128];
} ncclUniqueId;
static long g_kernelColls, g_colls;

static void logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt,
                   ...) {
  (void)l, (void)f, (void)file, (void)line, (void)fmt;
}

static uint64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int ncclGetVersion(int* v) {
  *v = 22809;
  return 0;
}

const char* ncclGetErrorString(int r) { return r ? "stand-in error" : "no error"; }

static int loadPlugin(void) {
  const char* path = getenv("NCCL_PROFILER_PLUGIN");
  if (path && *path && !g_prof) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    g_prof = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
    if (!g_prof) return 2;
  }
  return 0;
}

int ncclGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  memcpy(id->internal, "standin", 7);
  return 0;
}

int ncclCommInitRank(void** comm, int nranks, ncclUniqueId id, int rank) {
  if (memcmp(id.internal, "standin", 7) != 0 || rank < 0 || rank >= nranks || g_ncomms) return 4;
  if (loadPlugin() != 0) return 2;
  struct comm* c = &g_comms[0];
  memset(c, 0, sizeof *c);
  c->rank = rank;
  c->nranks = nranks;
  if (g_prof && g_prof->init(&c->ctx, 0xd1ec7ull, &g_mask, "standin", 1, nranks, rank, logger) != 0) {
    c->ctx = NULL;
  }
  *comm = c;
  g_ncomms = g_live = 1;
  g_cross = 1;
  return 0;
}

int ncclCommInitAll(void** comms, int n, const int* devs) {
  (void)devs;
  if (n < 1 || n > MAX_COMMS) return 4;
  const char* path = getenv("NCCL_PROFILER_PLUGIN");
  if (path && *path && !g_prof) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    g_prof = lib ? dlsym(lib, "ncclProfiler_v5") : NULL;
    if (!g_prof) return 2;
  }
  for (int r = 0; r < n; r++) {
    struct comm* c = &g_comms[r];
    memset(c, 0, sizeof *c);
    c->rank = r;
    c->nranks = n;
    if (g_prof && g_prof->init(&c->ctx, 0xd1ec7ull, &g_mask, "standin", 1, n, r, logger) != 0) {
      c->ctx = NULL;
    }
    comms[r] = c;
  }
  g_ncomms = g_live = n;
  return 0;
}

static void profile(struct comm* c, size_t count) {
  int m = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);  // NCCL: at the collective's enqueue
  uint64_t seq = c->seq++;
  __atomic_fetch_add(&g_colls, 1, __ATOMIC_RELAXED);
  if (!c->ctx || !(m & (ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh))) return;
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  void* api = NULL;
  d.type = ncclProfileCollApi;
  d.collApi.func = "AllReduce";
  d.collApi.count = count;
  d.collApi.datatype = "ncclFloat32";
  g_prof->startEvent(c->ctx, &api, &d);
  if (api) g_prof->stopEvent(api);
  if (!(m & (ncclProfileColl | ncclProfileKernelCh))) return;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = api;
  d.rank = c->rank;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = count;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  void* coll = NULL;
  g_prof->startEvent(c->ctx, &coll, &d);
  if (coll) g_prof->stopEvent(coll);
  if (!(m & ncclProfileKernelCh)) return;
  __atomic_fetch_add(&g_kernelColls, 1, __ATOMIC_RELAXED);
  uint64_t t = nowNs();
  for (int ch = 0; ch < 2; ch++) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = coll;
    d.kernelCh.channelId = (unsigned char)ch;
    d.kernelCh.pTimer = t + 100 * (uint64_t)ch;
    void* h = NULL;
    g_prof->startEvent(c->ctx, &h, &d);
    if (!h) continue;
    ncclProfilerEventStateArgs_v5_t a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = t + 5000;
    g_prof->recordEventState(h, ncclProfilerKernelChStop, &a);
    g_prof->stopEvent(h);
  }
}

static void reduce(void) {
  for (int r = 0; r < g_ncomms; r++) {
    struct comm* c = &g_comms[r];
    if (!c->recv) continue;
    for (size_t i = 0; i < c->count; i++) {
      float s = 0;
      for (int q = 0; q < g_ncomms; q++) s += g_comms[q].send ? g_comms[q].send[i] : 0;
      c->recv[i] = g_cross ? c->send[i] * c->nranks : s;
    }
  }
  for (int r = 0; r < g_ncomms; r++) g_comms[r].recv = NULL;
}

int ncclGroupStart(void) {
  g_grouped++;
  return 0;
}

int ncclGroupEnd(void) {
  if (--g_grouped == 0) reduce();
  return 0;
}

int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, void* comm,
                  void* stream) {
  (void)type, (void)op, (void)stream;
  struct comm* c = comm;
  profile(c, count);
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  c->send = send;
  c->recv = recv;
  c->count = count;
  if (!g_grouped) reduce();
  pthread_mutex_unlock(&lock);
  return 0;
}

int ncclCommDestroy(void* comm) {
  struct comm* c = comm;
  if (c->ctx) g_prof->finalize(c->ctx);
  c->ctx = NULL;
  if (--g_live == 0) {
    printf("standin: kernel-channel collectives %ld of %ld\n", g_kernelColls, g_colls);
    fflush(stdout);
  }
  return 0;
}

const char* cudaGetErrorString(int r) { return r ? "stand-in error" : "no error"; }

int cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return 0;
}

int cudaGetDeviceCount(int* n) {
  *n = 2;
  return 0;
}

int cudaSetDevice(int d) { return d < 0 || d > 1; }

int cudaMalloc(void** p, size_t n) { return (*p = malloc(n)) == NULL; }

int cudaMemcpy(void* d, const void* s, size_t n, int kind) {
  (void)kind;
  memcpy(d, s, n);
  return 0;
}

int cudaStreamCreateWithFlags(void** s, unsigned f) {
  (void)f;
  *s = (void*)1;
  return 0;
}

int cudaStreamSynchronize(void* s) { return s == NULL; }

int cudaEventCreate(void** e) { return (*e = calloc(1, sizeof(uint64_t))) == NULL; }

int cudaEventRecord(void* e, void* s) {
  (void)s;
  *(uint64_t*)e = nowNs();
  return 0;
}

int cudaEventSynchronize(void* e) { return e == NULL; }

int cudaEventElapsedTime(float* ms, void* a, void* b) {
  *ms = (float)((*(uint64_t*)b - *(uint64_t*)a) / 1e6);
  return 0;
}
