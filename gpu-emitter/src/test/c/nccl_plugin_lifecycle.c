// Loads and unloads libnccl-profiler-collscope.so the way NCCL 2.28.9 does (src/plugin/profiler.cc
// and plugin_open.cc): dlopen(RTLD_NOW | RTLD_LOCAL) at the first communicator's init, the
// interface's init per communicator, events, finalize per communicator, dlclose when the last one
// is gone. Then it goes on running, as a training process does after destroy_process_group(): a
// plugin that left a thread behind in the unmapped library takes the process down here (SIGSEGV).
// No NCCL, no GPU; the publisher thread runs for real (COLLSCOPE_NCCL_NO_THREAD unset).
//   nccl_plugin_lifecycle LIB VERSION(5|6) MODE [N]
//   MODE cycles  N times: dlopen, init one communicator, collectives, finalize, dlclose
//        two     dlopen, init two communicators, finalize the first while the second goes on (its
//                block must still be published), finalize the second, dlclose
//        reopen  dlopen, init, finalize, dlclose, then dlopen and init again: the second instance's
//                publisher must run (its block is published), finalize, dlclose
//        initfail  dlopen, init (fails: COLLSCOPE_SHM_DIR cannot hold a block), dlclose: no SIGBUS,
//                the process goes on; prints the plugin's init result
//        fork    dlopen, init, then N children forked while the publisher runs (a data loader's
//                workers), each exiting at once through exit(): none may hang in the plugin's
//                library destructor; then finalize, dlclose
// After the last dlclose it checks that nothing of the plugin is left: the library is no longer
// mapped and the process is down to its one thread. Then it works for a while (sleeps and
// allocates), prints "survived" and exits 0. NcclPluginLifecycleTest runs it.
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../main/c/nccl-profiler/nccl/err.h"
#include "../../main/c/nccl-profiler/nccl/profiler.h"
#include "../../main/cuda/counter_block.h"

static int g_warnings;

static void logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt,
                   ...) {
  (void)f, (void)file, (void)line, (void)fmt;
  if (l == NCCL_LOG_WARN) g_warnings++;
}

static uint64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleepMs(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

struct plugin {
  void* lib;
  ncclProfiler_v6_t* p;  // v5's table has the same functions in the same places
};

static const char* g_path;
static int g_version;

static struct plugin load(void) {
  struct plugin pl = {dlopen(g_path, RTLD_NOW | RTLD_LOCAL), NULL};  // as NCCL's plugin_open.cc
  if (!pl.lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    exit(3);
  }
  pl.p = dlsym(pl.lib, g_version == 6 ? "ncclProfiler_v6" : "ncclProfiler_v5");
  if (!pl.p) {
    fprintf(stderr, "no ncclProfiler_v%d\n", g_version);
    exit(3);
  }
  return pl;
}

static void unload(struct plugin* pl) {
  if (dlclose(pl->lib) != 0) {
    fprintf(stderr, "dlclose: %s\n", dlerror());
    exit(3);
  }
  pl->lib = NULL;
}

// One collective as NCCL 2.28.9 sends its events: the mask latched at the enqueue, CollApi when it
// enables any API-level event, Coll when it enables Coll or KernelCh (ncclProfilerStartTaskEvents),
// and for KernelCh a start and a stop per channel.
static void collective(struct plugin* pl, void* ctx, int* mask, uint64_t seq) {
  int m = __atomic_load_n(mask, __ATOMIC_RELAXED);
  ncclProfilerEventDescr_v6_t d;
  void* api = NULL;
  if (m & (ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh)) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCollApi;
    d.collApi.func = "AllReduce";
    d.collApi.count = 1024;
    d.collApi.datatype = "ncclFloat32";
    pl->p->startEvent(ctx, &api, &d);
    if (api) pl->p->stopEvent(api);
  }
  if (!(m & (ncclProfileColl | ncclProfileKernelCh))) return;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = api;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  void* coll = NULL;
  pl->p->startEvent(ctx, &coll, &d);
  if (coll) pl->p->stopEvent(coll);
  if (!(m & ncclProfileKernelCh)) return;
  uint64_t t = nowNs();
  for (int c = 0; c < 2; c++) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileKernelCh;
    d.parentObj = coll;
    d.kernelCh.channelId = (uint8_t)c;
    d.kernelCh.pTimer = t;
    void* h = NULL;
    pl->p->startEvent(ctx, &h, &d);
    if (!h) continue;
    ncclProfilerEventStateArgs_v6_t a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = t + 5000;
    pl->p->recordEventState(h, ncclProfilerKernelChStop, &a);
    pl->p->stopEvent(h);
  }
}

static void* init(struct plugin* pl, uint64_t comm, int* mask, int nranks, int rank) {
  void* ctx = NULL;
  ncclResult_t e = pl->p->init(&ctx, comm, mask, "lifecycle", 1, nranks, rank, logger);
  if (e != ncclSuccess || !ctx) {
    fprintf(stderr, "init comm %llx rank %d: %d\n", (unsigned long long)comm, rank, (int)e);
    exit(4);
  }
  return ctx;
}

// The block's seqlock: the publisher has published it when it is even and past 0.
static uint64_t seqlockOf(uint64_t comm, int rank) {
  const char* dir = getenv("COLLSCOPE_SHM_DIR");
  char path[600];
  snprintf(path, sizeof path, "%s/%016llx/rank-%d.blk", dir ? dir : "/dev/shm/collscope",
           (unsigned long long)comm, rank);
  FILE* f = fopen(path, "rb");
  uint64_t s = 0;
  if (!f) return 0;
  if (fseek(f, CB_OFF_SEQLOCK, SEEK_SET) != 0 || fread(&s, 8, 1, f) != 1) s = 0;
  fclose(f);
  return s;
}

// Waits until the publisher thread published the block again after `after` (heartbeat: at least
// once a second): proof that the process has a running publisher for this communicator.
static void expectPublished(uint64_t comm, int rank, uint64_t after, const char* what) {
  for (int i = 0; i < 300; i++) {
    uint64_t s = seqlockOf(comm, rank);
    if (s > after && s % 2 == 0) return;
    sleepMs(10);
  }
  fprintf(stderr, "%s: block of comm %llx rank %d not published by a publisher thread\n", what,
          (unsigned long long)comm, rank);
  exit(5);
}

static int threads(void) {
  DIR* d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent* e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static int mapped(void) {
  const char* base = strrchr(g_path, '/');
  base = base ? base + 1 : g_path;
  FILE* f = fopen("/proc/self/maps", "r");
  char line[4096];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) n += strstr(line, base) != NULL;
  if (f) fclose(f);
  return n;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIB VERSION cycles|two|reopen|initfail|fork [N]\n", argv[0]);
    return 2;
  }
  g_path = argv[1];
  g_version = atoi(argv[2]);
  const char* mode = argv[3];
  int n = argc > 4 ? atoi(argv[4]) : 1;
  int mask = 0;  // NCCL's ncclProfilerEventMask: one per process, outlives the plugin
  uint64_t seq = 0;
  if (!strcmp(mode, "cycles")) {
    for (int i = 0; i < n; i++) {
      struct plugin pl = load();
      void* ctx = init(&pl, 0xc7c1e5ull, &mask, 1, 0);
      for (int k = 0; k < 100; k++) collective(&pl, ctx, &mask, seq++);
      if (i % 100 == 0) expectPublished(0xc7c1e5ull, 0, 0, "cycles");
      pl.p->finalize(ctx);
      unload(&pl);
      if (i % 100 == 0) sleepMs(5);  // the process goes on between communicators
    }
  } else if (!strcmp(mode, "two")) {
    struct plugin pl = load();
    void* a = init(&pl, 0xaaaa01ull, &mask, 1, 0);
    void* b = init(&pl, 0xbbbb02ull, &mask, 1, 0);
    for (int k = 0; k < 200; k++) {
      collective(&pl, a, &mask, seq);
      collective(&pl, b, &mask, seq++);
    }
    pl.p->finalize(a);
    // The second communicator lives on: its publisher must still run after the first's finalize.
    uint64_t s = seqlockOf(0xbbbb02ull, 0);
    for (int k = 0; k < 200; k++) collective(&pl, b, &mask, seq++);
    expectPublished(0xbbbb02ull, 0, s, "two");
    pl.p->finalize(b);
    unload(&pl);
  } else if (!strcmp(mode, "reopen")) {
    for (int i = 0; i < 2; i++) {
      struct plugin pl = load();
      void* ctx = init(&pl, 0x2e0be7ull, &mask, 1, 0);
      for (int k = 0; k < 100; k++) collective(&pl, ctx, &mask, seq++);
      expectPublished(0x2e0be7ull, 0, 0, i ? "reopen: second load" : "reopen: first load");
      pl.p->finalize(ctx);
      unload(&pl);
      // the first instance's file stays (the sidecar removes it); the second replaces it
    }
  } else if (!strcmp(mode, "initfail")) {
    struct plugin pl = load();
    void* ctx = NULL;
    ncclResult_t e = pl.p->init(&ctx, 0xf0110ull, &mask, "lifecycle", 1, 2, 0, logger);
    printf("init result %d context %s warnings %d mask %d\n", (int)e, ctx ? "set" : "null",
           g_warnings, mask);
    // NCCL goes on without the plugin: no finalize for a context it never got, then dlclose.
    if (ctx) pl.p->finalize(ctx);
    unload(&pl);
  } else if (!strcmp(mode, "fork")) {
    struct plugin pl = load();
    void* ctx = init(&pl, 0xf02cull, &mask, 1, 0);
    int hung = 0;
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < 20; k++) collective(&pl, ctx, &mask, seq++);
      fflush(stdout);
      pid_t child = fork();
      if (child == 0) exit(0);  // atexit handlers and library destructors run
      int status = 0, done = 0;
      for (int w = 0; w < 5000 && !done; w++) {  // up to 5 s
        done = waitpid(child, &status, WNOHANG) == child;
        if (!done) sleepMs(1);
      }
      if (!done) {
        hung++;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
      }
    }
    printf("forked %d children, %d hung at exit\n", n, hung);
    pl.p->finalize(ctx);
    unload(&pl);
    if (hung) return 7;
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  int left = mapped(), nthreads = threads();
  printf("after dlclose: library mappings %d, threads %d\n", left, nthreads);
  fflush(stdout);
  // The training process goes on: a thread left in the unmapped library would fault by now.
  for (int i = 0; i < 20; i++) {
    free(malloc(1 << 20));
    sleepMs(10);
  }
  if (left != 0 || nthreads != 1) {
    fprintf(stderr, "the plugin left something behind after dlclose\n");
    return 6;
  }
  printf("survived\n");
  return 0;
}
