// An NCCL profiler plugin (interface v5, the one NCCL 2.28.9 loads) for the overhead benchmark:
// it switches, between rounds of one process, among plugins that do nothing but enable events,
// and libnccl-profiler-collscope.so itself, so that what NCCL pays for producing each kind of
// event and what our plugin adds are measured side by side (dev/nccl_overhead_variants.py).
//   variant 0 none  enables nothing (NCCL takes its no-plugin paths: every hook tests the mask)
//           1 api   CollApi events, does nothing with them
//           2 coll  CollApi + Coll events, does nothing with them
//           3 kch   CollApi + Coll + KernelCh events (profiler proxy ops, GPU timestamps), idem
//           4 ours  every call forwarded to COLLSCOPE_BENCH_PLUGIN (libnccl-profiler-collscope.so,
//                   its own mask, its kernel-channel sampling set by bench_set_variant; the
//                   forwarding adds an indirect call per event)
// The do-nothing variants return a handle for each event, as a minimal real plugin would, so NCCL
// makes the stop and record calls too. Handles are routed by what they are, not by the variant
// now in force: events started before a switch end where they started.
//   gcc -O2 -fPIC -shared -o libnccl-plugin-variants.so dev/nccl_plugin_variants.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/err.h"
#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/profiler.h"

#define EXPORT __attribute__((visibility("default")))

static char S_API, S_COLL, S_CH;  // the do-nothing variants' handles
static int* g_mask;
static int g_variant;
static ncclProfiler_v5_t* g_ours;
static void (*g_oursActive)(int);
static void (*g_oursSampling)(int);

struct ctx {
  void* ours;
};

static int maskOf(int v) {
  switch (v) {
    case 1: return ncclProfileCollApi;
    case 2: return ncclProfileCollApi | ncclProfileColl;
    case 3: return ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh;
    default: return 0;
  }
}

static int isOurs(void* h) { return h != &S_API && h != &S_COLL && h != &S_CH; }

static ncclResult_t vInit(void** context, uint64_t commId, int* mask, const char* name, int nNodes,
                          int nranks, int rank, ncclDebugLogger_t log) {
  if (!g_ours) {
    const char* path = getenv("COLLSCOPE_BENCH_PLUGIN");
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
      fprintf(stderr, "nccl_plugin_variants: COLLSCOPE_BENCH_PLUGIN: %s\n", path ? dlerror() : "unset");
      return ncclSystemError;
    }
    g_ours = dlsym(lib, "ncclProfiler_v5");
    g_oursActive = (void (*)(int))dlsym(lib, "collscope_nccl_set_active");
    g_oursSampling = (void (*)(int))dlsym(lib, "collscope_nccl_set_kernel_sampling");
    if (!g_ours || !g_oursActive || !g_oursSampling) return ncclSystemError;
  }
  struct ctx* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  g_mask = mask;
  if (g_ours->init(&c->ours, commId, mask, name, nNodes, nranks, rank, log) != ncclSuccess) {
    c->ours = NULL;
  }
  if (g_variant != 4) {
    g_oursActive(0);
    __atomic_store_n(g_mask, maskOf(g_variant), __ATOMIC_RELAXED);
  }
  *context = c;
  return ncclSuccess;
}

static ncclResult_t vStart(void* context, void** h, ncclProfilerEventDescr_v5_t* d) {
  struct ctx* c = context;
  *h = NULL;
  switch (d->type) {
    case ncclProfileCollApi:
      if (g_variant == 4 && c->ours) return g_ours->startEvent(c->ours, h, d);
      *h = &S_API;
      return ncclSuccess;
    case ncclProfileColl:
      if (d->parentObj == &S_API || g_variant != 4 || !c->ours) {
        *h = &S_COLL;
        return ncclSuccess;
      }
      return g_ours->startEvent(c->ours, h, d);
    case ncclProfileKernelCh:
      if (d->parentObj == &S_COLL) {
        *h = &S_CH;
        return ncclSuccess;
      }
      return c->ours ? g_ours->startEvent(c->ours, h, d) : ncclSuccess;
    default:
      return ncclSuccess;
  }
}

static ncclResult_t vStop(void* h) { return isOurs(h) ? g_ours->stopEvent(h) : ncclSuccess; }

static ncclResult_t vRecord(void* h, ncclProfilerEventState_v5_t s,
                            ncclProfilerEventStateArgs_v5_t* a) {
  return isOurs(h) ? g_ours->recordEventState(h, s, a) : ncclSuccess;
}

static ncclResult_t vFinalize(void* context) {
  struct ctx* c = context;
  if (c->ours) g_ours->finalize(c->ours);
  free(c);
  return ncclSuccess;
}

EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {"collscope-variants", vInit, vStart, vStop, vRecord,
                                            vFinalize};

// From the next collective enqueued on: variant v (0..4); sampling: ours' 1-in-N kernel-channel
// sampling (variant 4; 0: as it is, its default or COLLSCOPE_NCCL_KERNEL_SAMPLING). All ranks
// switch at the same point of their program.
EXPORT void bench_set_variant(int v, int sampling) {
  g_variant = v;
  if (!g_ours) return;
  if (v == 4) {
    if (sampling > 0) g_oursSampling(sampling);
    g_oursActive(1);
  } else {
    g_oursActive(0);
    if (g_mask) __atomic_store_n(g_mask, maskOf(v), __ATOMIC_RELAXED);
  }
}
