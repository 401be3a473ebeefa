// A profiler plugin that does nothing: the baseline of dev/nccl_plugin_cost.c (the harness's own
// cost per collective).  gcc -O2 -fPIC -shared -o /tmp/stub.so dev/nccl_plugin_stub.c
#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/err.h"
#include "../gpu-emitter/src/main/c/nccl-profiler/nccl/profiler.h"
static ncclResult_t i_(void** c, uint64_t id, int* m, const char* n, int a, int b, int r, ncclDebugLogger_t l){*c=(void*)1;*m=0;return ncclSuccess;}
static ncclResult_t s_(void* c, void** h, ncclProfilerEventDescr_v5_t* d){*h=d->parentObj;return ncclSuccess;}
static ncclResult_t e_(void* h){return ncclSuccess;}
static ncclResult_t r_(void* h, ncclProfilerEventState_v5_t s, ncclProfilerEventStateArgs_v5_t* a){return ncclSuccess;}
static ncclResult_t f_(void* c){return ncclSuccess;}
__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {"stub", i_, s_, e_, r_, f_};
__attribute__((visibility("default"))) int collscope_nccl_poll(int f){return 0;}
