// The NCCL profiler plugin's own cost per collective on the CPU, without NCCL or a GPU: the
// callbacks NCCL makes for one all-reduce of 2 channels (CollApi start, Coll start and stop, per
// channel KernelCh start, KernelChStop, stop), timed on the calling thread, and the publisher's
// pass per collective, for RANKS ranks of one communicator in this process.
// What NCCL itself does once KernelCh events are on (profiler proxy operations) is not in it.
//   gcc -O2 -o /tmp/nccl_plugin_cost dev/nccl_plugin_cost.c -ldl
//   COLLSCOPE_SHM_DIR=/tmp/cost COLLSCOPE_NCCL_NO_THREAD=1 /tmp/nccl_plugin_cost LIB [N]
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/err.h"
#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/profiler.h"

static void logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt,
                   ...) {
  (void)l, (void)f, (void)file, (void)line, (void)fmt;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char** argv) {
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) return fprintf(stderr, "%s\n", dlerror()), 1;
  long n = argc > 2 ? atol(argv[2]) : 1000000;
  ncclProfiler_v5_t* p = dlsym(lib, "ncclProfiler_v5");
  int (*poll)(int) = (int (*)(int))dlsym(lib, "collscope_nccl_poll");
  const int ranks = 2, nch = 2;
  void* ctx[2];
  int mask = 0;
  for (int r = 0; r < ranks; r++) p->init(&ctx[r], 0xc057, &mask, "cost", 1, ranks, r, logger);
  // Timed in batches, so the clock read around them does not count (a clock_gettime costs
  // 400 ns on some VMs; the plugin itself reads the clock once per collective and channel 0).
  enum { B = 1024 };
  static void* colls[2][B];
  double user = 0, proxy = 0, pub = 0;
  unsigned long long t = 1;
  ncclProfilerEventDescr_v5_t d;
  for (long i0 = 0; i0 < n; i0 += B) {
    double a = now();
    for (long i = i0; i < i0 + B; i++) {
      for (int r = 0; r < ranks; r++) {
        void* api = NULL;
        memset(&d, 0, sizeof d);
        d.type = ncclProfileCollApi;
        p->startEvent(ctx[r], &api, &d);
        memset(&d, 0, sizeof d);
        d.type = ncclProfileColl;
        d.parentObj = api;
        d.coll.seqNumber = (unsigned long long)i;
        d.coll.func = "AllReduce";
        d.coll.count = 1024;
        d.coll.datatype = "ncclFloat32";
        d.coll.nChannels = nch;
        p->startEvent(ctx[r], &colls[r][i - i0], &d);
        p->stopEvent(colls[r][i - i0]);
      }
    }
    double b = now();
    for (long i = i0; i < i0 + B; i++) {
      for (int r = 0; r < ranks; r++) {
        for (int c = 0; c < nch; c++) {
          void* ch = NULL;
          memset(&d, 0, sizeof d);
          d.type = ncclProfileKernelCh;
          d.parentObj = colls[r][i - i0];
          d.kernelCh.channelId = (unsigned char)c;
          d.kernelCh.pTimer = t;
          p->startEvent(ctx[r], &ch, &d);
          ncclProfilerEventStateArgs_v5_t s;
          s.kernelCh.pTimer = t + 10000;
          p->recordEventState(ch, ncclProfilerKernelChStop, &s);
          p->stopEvent(ch);
        }
      }
      t += 20000;
    }
    double e = now();
    poll(0);
    poll(0);
    double f = now();
    user += b - a;
    proxy += e - b;
    pub += f - e;
  }
  n = (n + B - 1) / B * B;
  printf("per collective and rank: user thread %.1f ns (CollApi + Coll start/stop), proxy thread "
         "%.1f ns (%d channels' KernelCh events), publisher %.1f ns; %ld collectives x %d ranks\n",
         user / (n * ranks), proxy / (n * ranks), nch, pub / (n * ranks), n, ranks);
  return 0;
}
